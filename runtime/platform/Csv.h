//===- Csv.h - Rows of comma-separated values (RFC 4180) --------*- C++ -*-===//
//
// lap's tables (a sweep's results.csv, the geometry of an analysis) hold
// text it did not choose: axis values, labels, spec names. A field with a
// comma, a quote or a line break is quoted, its quotes doubled, so every
// reader of CSV (Python's csv, pandas, spreadsheets) sees the same columns.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_CSV_H
#define LAP_RUNTIME_PLATFORM_CSV_H

#include <string>
#include <string_view>
#include <vector>

namespace lap::platform {

/// `field` as one CSV field: as it is, or quoted when it holds a comma, a
/// double quote, a line break, or space at either end.
std::string csvField(std::string_view field);

/// The fields joined by commas, each through csvField, and a "\n" (RFC
/// 4180 ends records with CRLF; every reader also takes LF, which lap's
/// files end lines with throughout).
std::string csvRow(const std::vector<std::string> &fields);

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_CSV_H
