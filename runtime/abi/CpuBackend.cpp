//===- CpuBackend.cpp - Model code on the CPU -------------------*- C++ -*-===//

#include "runtime/abi/Backend.h"
#include "runtime/kernels/cpu/Kernels.h"

#include <cstring>

namespace backend = lap::model::backend;

const char *backend::kernelError() { return lap_cpu_isa_error(); }
const char *backend::kernelIsa() { return lap_cpu_isa(); }
const char *backend::kernelIsas() { return lap_cpu_isas(); }

bool backend::readsBatches() { return true; }

void backend::initialise(float *params, int64_t,
                         const std::function<void(float *)> &fill) {
  fill(params);
}

void backend::toHost(void *to, const void *from, size_t bytes) {
  std::memcpy(to, from, bytes);
}

lap_status backend::setStream(void *stream) {
  return stream ? LAP_INVALID_ARGUMENT : LAP_OK;
}

// CPU kernels complete before they return and fail only by aborting.
lap_status backend::finish(std::string &) { return LAP_OK; }
