//===- InputChecks.h - Refusing bad input to the analyses -------*- C++ -*-===//
//
// The analyses take raw arrays from their callers; each checks them first
// and refuses bad input with a std::runtime_error that names the function,
// the argument and, for values, the first offending index.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ANALYSIS_INPUTCHECKS_H
#define LAP_RUNTIME_ANALYSIS_INPUTCHECKS_H

#include "runtime/platform/Errors.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace lap::analysis::checks {

using lap::platform::fail;

inline void requirePositive(const char *function, const char *name,
                            int64_t value) {
  if (value <= 0)
    fail(function, std::string(name) + " is " + std::to_string(value) +
                       ", must be positive");
}

inline void requireData(const char *function, const char *name,
                        const void *data) {
  if (!data)
    fail(function, std::string(name) + " is null");
}

/// NaN or infinity would only surface as NaN results (or a failed
/// eigendecomposition) far from their cause: name the first one instead.
template <typename Real>
void requireFinite(const char *function, const char *name, const Real *data,
                   int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(data[i]))
      fail(function,
           std::string(name) + "[" + std::to_string(i) + "] is not finite");
}

} // namespace lap::analysis::checks

#endif // LAP_RUNTIME_ANALYSIS_INPUTCHECKS_H
