//===- Csv.cpp - Rows of comma-separated values (RFC 4180) ----------------===//

#include "runtime/platform/Csv.h"

namespace lap::platform {

std::string csvField(std::string_view field) {
  bool quoted =
      field.find_first_of(",\"\r\n") != std::string_view::npos ||
      (!field.empty() && (field.front() == ' ' || field.back() == ' '));
  if (!quoted)
    return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csvRow(const std::vector<std::string> &fields) {
  std::string row;
  for (size_t i = 0; i < fields.size(); ++i)
    row += (i ? "," : "") + csvField(fields[i]);
  return row + "\n";
}

} // namespace lap::platform
