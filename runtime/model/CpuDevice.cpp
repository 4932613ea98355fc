//===- CpuDevice.cpp - Model code on the CPU --------------------*- C++ -*-===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/model/Device.h"

namespace device = lap::model::device;

const char *device::kernelError() { return lap_cpu_isa_error(); }
const char *device::kernelIsa() { return lap_cpu_isa(); }
const char *device::kernelIsas() { return lap_cpu_isas(); }

bool device::readsBatches() { return true; }

void device::initialise(float *params, int64_t,
                        const std::function<void(float *)> &fill) {
  fill(params);
}

lap_status device::setStream(void *stream) {
  return stream ? LAP_INVALID_ARGUMENT : LAP_OK;
}

// CPU kernels complete before they return and fail only by aborting.
lap_status device::finish(std::string &) { return LAP_OK; }
