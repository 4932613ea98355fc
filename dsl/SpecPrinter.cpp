//===- SpecPrinter.cpp - A spec in canonical form ---------------*- C++ -*-===//
//
// The printing visitor of the schema. A numeric setting whose value lies
// outside its own rule (steps: 0, pool_heads: 0) is an unset sentinel and is
// left out, which keeps the output readable back.
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecPrinter.h"
#include "dsl/Derived.h"
#include "dsl/Scalars.h"
#include "dsl/SpecSchema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

using namespace lap::dsl;
using namespace lap::dsl::schema;

namespace {

/// The shortest decimal text that reads back as exactly `v`, kept
/// recognisable as a float: 1 -> 1.0, 1e-06 -> 1.0e-06.
std::string formatNumber(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".ein") == std::string::npos)
    s += ".0";
  else if (s.find('.') == std::string::npos && s.find('e') != std::string::npos)
    s.insert(s.find('e'), ".0");
  return s;
}

/// A string as a YAML scalar: plain when that reads back unchanged.
std::string formatString(const std::string &s) {
  bool plain =
      !s.empty() &&
      s.find_first_of(":#{}[],&*!|>'\"%@`\n\t\\") == std::string::npos &&
      s.front() != ' ' && s.back() != ' ' && s.front() != '-' &&
      s.front() != '?';
  static const char *special[] = {"true", "false", "yes",  "no",   "on",
                                  "off",  "null",  "Null", "NULL", "~",
                                  "True", "False", "TRUE", "FALSE"};
  for (const char *word : special)
    if (s == word)
      plain = false;
  char *end = nullptr;
  std::strtod(s.c_str(), &end);
  if (!s.empty() && end && *end == '\0')
    plain = false;
  if (plain)
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string withSeparators(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// The visitor that writes YAML (see SpecSchema.h for the interface).
class Printer {
public:
  Printer(const Spec &spec, std::ostringstream &os) : spec(spec), os(os) {}

  template <class F> void section(const char *key, Applies applies, F body) {
    if (!applicable(applies))
      return;
    line(key, "");
    ++depth;
    body();
    --depth;
  }
  template <class F>
  void optionalSection(const char *key, Applies applies, bool on, F body) {
    if (on)
      section(key, applies, body);
  }

  template <class T>
  void field(const char *key, const T &value, Rule rule = any,
             Applies applies = always, bool = false) {
    if (!applicable(applies))
      return;
    if constexpr (std::is_same_v<T, bool>)
      line(key, value ? "true" : "false");
    else if constexpr (std::is_same_v<T, std::string>) {
      if (!value.empty())
        line(key, formatString(value));
    } else if constexpr (std::is_enum_v<T>) {
      line(key, std::string(spelling(value)));
    } else if (rule.admits(double(value))) {
      if constexpr (std::is_integral_v<T>)
        line(key, std::to_string(value));
      else
        line(key, formatNumber(value));
    }
  }

  void range(const char *key, double lo, double hi, Rule,
             Applies applies = always) {
    if (applicable(applies))
      line(key, "[" + formatNumber(lo) + ", " + formatNumber(hi) + "]");
  }

  void pair(const char *key, double first, double second, Rule rule) {
    range(key, first, second, rule);
  }

  void floatOrWord(const char *key, double value, bool isWord, const char *word,
                   Rule) {
    line(key, isWord ? word : formatNumber(value));
  }

  void strings(const char *key, const std::vector<std::string> &values,
               const std::vector<std::string_view> &) {
    std::string list = "[";
    for (size_t i = 0; i < values.size(); ++i)
      list += (i ? ", " : "") + values[i];
    line(key, list + "]");
  }

  void weights(const char *key,
               const std::vector<std::pair<std::string, double>> &entries, Rule,
               Applies applies = always) {
    if (entries.empty() || !applicable(applies))
      return;
    line(key, "");
    ++depth;
    for (const auto &[name, weight] : entries)
      line(formatString(name), formatNumber(weight));
    --depth;
  }

  void line(const std::string &key, const std::string &value,
            const std::string &comment = "") {
    os << std::string(2 * depth, ' ') << key << ":";
    if (!value.empty())
      os << " " << value;
    if (!comment.empty())
      os << "  # " << comment;
    os << "\n";
  }

  int depth = 0;

private:
  bool applicable(Applies a) const {
    return (a.families & bit(spec.model.family)) &&
           (a.regimes & bit(spec.train.regime)) &&
           (a.optimizers & bit(spec.train.optimizer.type)) &&
           (a.precisions & bit(spec.train.precision));
  }

  const Spec &spec;
  std::ostringstream &os;
};

std::string kindList(const AttentionSpec &attention,
                     const std::vector<HeadKindId> &heads) {
  std::string out = "[";
  for (size_t h = 0; h < heads.size(); ++h)
    out += (h ? ", " : "") + std::string(attention.kind(heads[h]).name);
  return out + "]";
}

void printAttention(const Spec &spec, std::ostringstream &os) {
  const AttentionSpec &a = spec.attention;
  os << "attention:\n";
  if (!a.defined.empty()) {
    os << "  define:  # O = alpha P V + beta V\n";
    for (const DefinedKind &k : a.defined)
      os << "    " << k.name << ": {"
         << (k.learnable ? "learnable: true, " : "")
         << "alpha: " << formatNumber(k.alpha)
         << ", beta: " << formatNumber(k.beta) << "}"
         << (k.learnable ? "  # learned per head, from these" : "") << "\n";
  }
  os << "  kinds:";
  std::string legend;
  for (const HeadKind &k : headKinds())
    legend += (legend.empty() ? "" : ", ") + std::string(k.name) + " = " +
              std::string(k.formula);
  os << "  # per layer, per head; " << legend << "\n";
  for (const auto &layer : a.layers)
    os << "    - " << kindList(a, layer) << "\n";
  if (!a.pool.empty())
    os << "  pool: " << kindList(a, a.pool) << "\n";
  if (std::any_of(a.windows.begin(), a.windows.end(),
                  [](int64_t w) { return w > 0; })) {
    os << "  window: [";
    for (size_t l = 0; l < a.windows.size(); ++l)
      os << (l ? ", " : "") << a.windows[l];
    os << "]  # per layer: the keys a query sees, itself included (0: all)\n";
  }
}

void printDerived(const Spec &spec, Printer &p) {
  p.line("derived", "");
  std::string group;
  for (const DerivedValue &d : derivedValues(spec)) {
    size_t dot = d.path.find('.');
    std::string head = dot == std::string::npos ? "" : d.path.substr(0, dot);
    std::string key =
        dot == std::string::npos ? d.path : d.path.substr(dot + 1);
    if (head != group) {
      group = head;
      p.depth = 1;
      if (!group.empty())
        p.line(group, "");
    }
    p.depth = group.empty() ? 1 : 2;
    std::string comment;
    if (d.integer && d.value >= 10000)
      comment = withSeparators(int64_t(d.value));
    p.line(key, formatDerived(d), comment);
  }
  p.depth = 0;
}

} // namespace

std::string lap::dsl::printArchitecture(const Spec &spec) {
  std::ostringstream os;
  Printer p(spec, os);
  p.section("model", always, [&] { visitModel(p, spec.model); });
  printAttention(spec, os);
  return os.str();
}

std::string lap::dsl::printSpec(const Spec &spec) {
  std::ostringstream os;
  os << "# Resolved by lapc --emit=spec: every default applied, one kind per "
        "head, derived values\n# computed. It reads back as a spec.\n";
  Printer p(spec, os);
  p.line("name", formatString(spec.name));
  if (!spec.description.empty())
    p.line("description", formatString(spec.description));
  p.section("model", always, [&] { visitModel(p, spec.model); });
  printAttention(spec, os);
  if (spec.hasTrain)
    p.section("train", always, [&] { visitTrain(p, spec.train); });
  printDerived(spec, p);
  return os.str();
}
