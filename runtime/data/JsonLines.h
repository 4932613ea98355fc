//===- JsonLines.h - Reading JSONL files with located errors ----*- C++ -*-===//
//
// Evaluation sets, completions and conversations come as JSON Lines: one
// JSON object a line, blank lines skipped. Every error names the file and
// line: "PATH:LINE: not valid JSON at column 14: ...", "PATH:LINE: not a
// JSON object", or what the caller found wrong with the record.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_JSONLINES_H
#define LAP_RUNTIME_DATA_JSONLINES_H

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace lap::data {

/// Calls `each(record, line)` for every non-blank line of the regular file
/// `path` (line numbers from 1). What `each` throws as std::invalid_argument
/// or nlohmann::json::exception (a missing field, one of the wrong type) is
/// rethrown as std::runtime_error "PATH:LINE: why"; a file without records
/// is an error saying it holds no `what`.
void readJsonLines(
    const std::string &path, const std::string &what,
    const std::function<void(const nlohmann::json &record, int line)> &each);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_JSONLINES_H
