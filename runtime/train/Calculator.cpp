//===- Calculator.cpp - The tool a chat model calls -----------------------===//

#include "runtime/train/Calculator.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <variant>

namespace lap::train {

namespace {

/// A Python number: an int (here, 64 bits) or a float.
using Value = std::variant<int64_t, double>;

double asDouble(const Value &v) {
  return std::holds_alternative<int64_t>(v) ? double(std::get<int64_t>(v))
                                            : std::get<double>(v);
}

/// Python's repr of a float: the shortest digits that round-trip, fixed
/// between 1e-4 and 1e16, else d.ddde+XX.
std::string pythonFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v,
                                 std::chars_format::scientific);
  std::string s(buffer, end); // "-1.2345e+03"
  size_t e = s.find('e');
  int exponent = std::atoi(s.c_str() + e + 1);
  std::string sign = s[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = sign.size(); i < e; ++i)
    if (s[i] != '.')
      digits += s[i];
  if (exponent < -4 || exponent >= 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1)
      mantissa += "." + digits.substr(1);
    char exp[8];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return sign + mantissa + exp;
  }
  std::string out;
  if (exponent < 0) {
    out = "0." + std::string(size_t(-exponent - 1), '0') + digits;
  } else {
    if (digits.size() <= size_t(exponent) + 1)
      digits += std::string(size_t(exponent) + 1 - digits.size(), '0');
    out = digits.substr(0, size_t(exponent) + 1);
    std::string fraction = digits.substr(size_t(exponent) + 1);
    out += "." + (fraction.empty() ? "0" : fraction);
  }
  return sign + out;
}

/// Recursive descent over the arithmetic grammar; fails (nullopt) on
/// anything else or on integer overflow.
class Arithmetic {
public:
  explicit Arithmetic(std::string_view text) : s(text) {}

  std::optional<Value> parse() {
    std::optional<Value> v = sum();
    skip();
    return v && at == s.size() ? v : std::nullopt;
  }

private:
  std::optional<Value> sum() {
    std::optional<Value> v = product();
    while (v) {
      skip();
      if (at >= s.size() || (s[at] != '+' && s[at] != '-'))
        break;
      char op = s[at++];
      std::optional<Value> r = product();
      v = r ? apply(*v, *r, op) : std::nullopt;
    }
    return v;
  }

  std::optional<Value> product() {
    std::optional<Value> v = unary();
    while (v) {
      skip();
      if (at >= s.size() || (s[at] != '*' && s[at] != '/'))
        break;
      char op = s[at++];
      std::optional<Value> r = unary();
      v = r ? apply(*v, *r, op) : std::nullopt;
    }
    return v;
  }

  std::optional<Value> unary() {
    skip();
    if (at < s.size() && (s[at] == '-' || s[at] == '+')) {
      char op = s[at++];
      std::optional<Value> v = unary();
      if (!v || op == '+')
        return v;
      return apply(Value(int64_t(0)), *v, '-');
    }
    return atom();
  }

  std::optional<Value> atom() {
    skip();
    if (at < s.size() && s[at] == '(') {
      ++at;
      std::optional<Value> v = sum();
      skip();
      if (!v || at >= s.size() || s[at] != ')')
        return std::nullopt;
      ++at;
      return v;
    }
    size_t start = at;
    bool dot = false;
    while (at < s.size() &&
           (std::isdigit((unsigned char)s[at]) || (s[at] == '.' && !dot))) {
      dot |= s[at] == '.';
      ++at;
    }
    std::string_view number = s.substr(start, at - start);
    if (number.empty() || number == ".")
      return std::nullopt;
    if (dot)
      return Value(std::strtod(std::string(number).c_str(), nullptr));
    // Python refuses leading zeros in an integer ("007"), not "00".
    if (number.size() > 1 && number[0] == '0' &&
        number.find_first_not_of('0') != std::string_view::npos)
      return std::nullopt;
    int64_t n;
    auto [end, ec] =
        std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc())
      return std::nullopt;
    return Value(n);
  }

  static std::optional<Value> apply(const Value &a, const Value &b, char op) {
    bool ints = std::holds_alternative<int64_t>(a) &&
                std::holds_alternative<int64_t>(b);
    if (op == '/') {
      if (asDouble(b) == 0)
        return std::nullopt; // ZeroDivisionError
      return Value(asDouble(a) / asDouble(b));
    }
    if (ints) {
      int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b), r;
      bool overflow = op == '+'   ? __builtin_add_overflow(x, y, &r)
                      : op == '-' ? __builtin_sub_overflow(x, y, &r)
                                  : __builtin_mul_overflow(x, y, &r);
      return overflow ? std::nullopt : std::optional<Value>(r);
    }
    double x = asDouble(a), y = asDouble(b);
    return Value(op == '+' ? x + y : op == '-' ? x - y : x * y);
  }

  void skip() {
    while (at < s.size() && s[at] == ' ')
      ++at;
  }

  std::string_view s;
  size_t at = 0;
};

/// A quoted string literal at `at` (no escapes); advances past it.
std::optional<std::string> quoted(std::string_view s, size_t &at) {
  if (at >= s.size() || (s[at] != '"' && s[at] != '\''))
    return std::nullopt;
  char quote = s[at];
  size_t end = s.find(quote, at + 1);
  if (end == std::string_view::npos)
    return std::nullopt;
  std::string text(s.substr(at + 1, end - at - 1));
  at = end + 1;
  return text;
}

/// `"text".count("part")`: non-overlapping occurrences, as Python counts.
std::optional<std::string> stringCount(std::string_view s) {
  size_t at = 0;
  std::optional<std::string> text = quoted(s, at);
  if (!text || s.substr(at, 7) != ".count(")
    return std::nullopt;
  at += 7;
  std::optional<std::string> part = quoted(s, at);
  if (!part || s.substr(at) != ")")
    return std::nullopt;
  if (part->empty())
    return std::to_string(text->size() + 1);
  size_t n = 0;
  for (size_t i = text->find(*part); i != std::string::npos;
       i = text->find(*part, i + part->size()))
    ++n;
  return std::to_string(n);
}

} // namespace

std::optional<std::string> calculate(std::string_view expression) {
  std::string expr;
  for (char c : expression)
    if (c != ',')
      expr += c;
  bool arithmetic =
      expr.find_first_not_of("0123456789*+-/.() ") == std::string::npos;
  if (!arithmetic) {
    // Trimmed of the spaces nanochat allows around the call.
    size_t begin = expr.find_first_not_of(' ');
    size_t end = expr.find_last_not_of(' ');
    return begin == std::string::npos
               ? std::nullopt
               : stringCount(
                     std::string_view(expr).substr(begin, end - begin + 1));
  }
  if (expr.find("**") != std::string::npos)
    return std::nullopt;
  std::optional<Value> v = Arithmetic(expr).parse();
  if (!v)
    return std::nullopt;
  if (std::holds_alternative<int64_t>(*v))
    return std::to_string(std::get<int64_t>(*v));
  return pythonFloat(std::get<double>(*v));
}

} // namespace lap::train
