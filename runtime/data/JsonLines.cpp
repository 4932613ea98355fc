//===- JsonLines.cpp - Reading JSONL files with located errors ------------===//

#include "runtime/data/JsonLines.h"

#include "runtime/platform/Files.h"

#include <fstream>
#include <stdexcept>

namespace lap::data {

namespace {

/// nlohmann's parse error as a reader wants it: "at column 14: invalid
/// string: ill-formed UTF-8 byte", without its tag or the bytes it read
/// last (which may not be text).
std::string parseErrorText(const nlohmann::json::parse_error &e) {
  std::string what = e.what();
  if (size_t last = what.find("; last read:"); last != std::string::npos)
    what.resize(last);
  size_t column = what.find("column ");
  size_t reason = what.find(" - ");
  if (column == std::string::npos || reason == std::string::npos)
    return what;
  std::string where = what.substr(column, what.find(':', column) - column);
  return "at " + where + ": " + what.substr(reason + 3);
}

} // namespace

void readJsonLines(
    const std::string &path, const std::string &what,
    const std::function<void(const nlohmann::json &record, int line)> &each) {
  std::ifstream in = platform::openRegularFile(path);
  std::string line;
  bool any = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto fail = [&](const std::string &why) {
      return std::runtime_error(path + ":" + std::to_string(number) + ": " +
                                why);
    };
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error &e) {
      throw fail("not valid JSON " + parseErrorText(e));
    }
    if (!record.is_object())
      throw fail("not a JSON object");
    try {
      each(record, number);
    } catch (const std::invalid_argument &e) {
      throw fail(e.what());
    } catch (const nlohmann::json::exception &e) {
      throw fail(std::string("a field of the wrong type or missing (") +
                 e.what() + ")");
    }
    any = true;
  }
  if (!any)
    throw std::runtime_error(path + ": no " + what +
                             " (one JSON object a line)");
}

} // namespace lap::data
