//===- FileNames.cpp - Names lap did not choose, made file names ----------===//

#include "runtime/platform/FileNames.h"

#include <stdexcept>

namespace lap::platform {

std::string fileNameProblem(std::string_view name) {
  if (name.empty())
    return "is empty";
  if (name.front() == '.')
    return "starts with '.'";
  if (name.size() > kMaxFileNameBytes)
    return "is " + std::to_string(name.size()) + " bytes long, more than the " +
           std::to_string(kMaxFileNameBytes) + " a file name may have";
  for (unsigned char c : name) {
    if (c == '/')
      return "contains '/'";
    if (c < 0x20 || c == 0x7f)
      return "contains a control character";
  }
  return "";
}

std::string pathInDirectory(const std::string &dir, std::string_view name,
                            std::string_view what) {
  if (std::string why = fileNameProblem(name); !why.empty())
    throw std::runtime_error(std::string(what) + " '" + std::string(name) +
                             "' " + why + ": it cannot name a file in " + dir);
  return dir + "/" + std::string(name);
}

} // namespace lap::platform
