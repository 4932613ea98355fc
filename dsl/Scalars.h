//===- Scalars.h - Reading YAML scalars and quoting names -------*- C++ -*-===//
//
// Internal to dsl/: the strict scalar readers the parser and the attention
// placement share. Numbers are plain decimal text that converts completely
// and is finite; nothing else counts.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_SCALARS_H
#define LAP_DSL_SCALARS_H

#include "dsl/SpecSchema.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace lap::dsl {

/// 's', for messages.
inline std::string inQuotes(std::string_view s) {
  return "'" + std::string(s) + "'";
}

/// The spellings of an enum, in documentation order.
template <class E> std::vector<std::string_view> enumSpellings() {
  std::vector<std::string_view> out;
  for (const auto &[name, value] : schema::names<E>())
    out.push_back(name);
  return out;
}

/// How `value` is written in specs.
template <class E> std::string_view spelling(E value) {
  for (const auto &[name, v] : schema::names<E>())
    if (v == value)
      return name;
  return "?";
}

/// A decimal integer, the whole of `s`.
inline bool parseInteger(const std::string &s, int64_t &out) {
  if (s.empty() || !(std::isdigit((unsigned char)s[0]) || s[0] == '-'))
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end || errno)
    return false;
  out = v;
  return true;
}

/// A finite decimal number, the whole of `s`.
inline bool parseNumber(const std::string &s, double &out) {
  if (s.empty() || std::isspace((unsigned char)s[0]))
    return false;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

/// Whether `v` survives the conversion to the single precision compiled
/// models compute in: finite there, and not flushed to zero.
inline bool fitsSinglePrecision(double v) {
  float single = float(v);
  return std::isfinite(single) && (v == 0 || single != 0);
}

} // namespace lap::dsl

#endif // LAP_DSL_SCALARS_H
