//===- Errors.h - How the runtime reports what is wrong ---------*- C++ -*-===//
//
// Every runtime error names what it is about — a file, a directory, or the
// function whose arguments are wrong — then says what is wrong: "PATH: WHY".
// One helper writes that form, so every reader and writer says it alike.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_ERRORS_H
#define LAP_RUNTIME_PLATFORM_ERRORS_H

#include <string>

namespace lap::platform {

/// Throws std::runtime_error "WHERE: WHY".
[[noreturn]] void fail(const std::string &where, const std::string &why);

/// Throws std::runtime_error "WHERE: WHAT: <the OS's reason for errno>".
[[noreturn]] void failWithErrno(const std::string &where,
                                const std::string &what);

/// `value` as messages quote numbers: printf's %g, six significant digits
/// ("0.5", "1e-08", "123457").
std::string numberText(double value);

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_ERRORS_H
