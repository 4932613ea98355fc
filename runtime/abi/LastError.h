//===- LastError.h - A C entry point's status and last error ----*- C++ -*-===//
//
// Each library with a C interface (a model.so, an attention library) keeps
// the description of its calls' last failure per thread, which its
// *_last_error() returns.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ABI_LASTERROR_H
#define LAP_RUNTIME_ABI_LASTERROR_H

#include "runtime/abi/Backend.h"

#include <string>

namespace lap::model {

/// This thread's last failure in this library.
inline thread_local std::string lastError = "no error";

/// Records `message`; LAP_INVALID_ARGUMENT.
inline lap_status fail(std::string message) {
  lastError = std::move(message);
  return LAP_INVALID_ARGUMENT;
}

/// After the kernels ran (or were enqueued): the failure one recorded, if
/// any.
inline lap_status finish() {
  std::string error;
  lap_status status = backend::finish(error);
  if (status != LAP_OK)
    lastError = std::move(error);
  return status;
}

} // namespace lap::model

#endif // LAP_RUNTIME_ABI_LASTERROR_H
