//===- Errors.cpp - How the runtime reports what is wrong -----------------===//

#include "runtime/platform/Errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace lap::platform {

void fail(const std::string &where, const std::string &why) {
  throw std::runtime_error(where + ": " + why);
}

void failWithErrno(const std::string &where, const std::string &what) {
  fail(where, what + ": " + std::strerror(errno));
}

std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

} // namespace lap::platform
