//===- CudaBackend.cpp - Model code on a CUDA GPU ---------------*- C++ -*-===//
//
// Calls enqueue on the thread's stream (lap_model_set_stream) and return:
// results are ready when the stream has run them, so a host may capture a
// whole step in a CUDA graph. A kernel that fails records why; the call
// that enqueued it reports the first failure.
//
//===----------------------------------------------------------------------===//

#include "runtime/abi/Backend.h"
#include "runtime/device/cuda/Discovery.h"
#include "runtime/kernels/cuda/Context.h"

#include <cstdlib>
#include <vector>

namespace backend = lap::model::backend;

// The GPU architecture lapc compiled the generated kernels for ("sm_90").
extern "C" const char lap_gen_cuda_arch[];

namespace {

/// The GPUs here that run the library's code, and why none does. A GPU of
/// the architecture's major version runs its machine code; a later one the
/// PTX beside it, which the driver compiles when the library loads (the
/// generated kernels are a fatbin of both, the kernel library carries
/// compute_80 and compute_90 PTX). So: compute capability >= the arch's.
struct Gpus {
  std::string isas, error;
  Gpus() {
    const int arch = std::atoi(lap_gen_cuda_arch + 3); // "sm_90" -> 90
    std::string why;
    for (const lap::cuda::GpuInfo &d : lap::cuda::visibleDevices(&why))
      if (d.major * 10 + d.minor >= arch)
        isas += (isas.empty() ? "sm_" : " sm_") + std::to_string(d.major) +
                std::to_string(d.minor);
    if (isas.empty())
      error = std::string("this library runs on NVIDIA GPUs of compute "
                          "capability ") +
              std::to_string(arch / 10) + "." + std::to_string(arch % 10) +
              " (" + lap_gen_cuda_arch +
              ") or later, and this machine has "
              "none (" +
              (why.empty() ? std::string("only older GPUs") : why) + ")";
  }
};

const Gpus &gpus() {
  static const Gpus g;
  return g;
}

} // namespace

const char *backend::kernelError() {
  return gpus().error.empty() ? nullptr : gpus().error.c_str();
}
const char *backend::kernelIsa() { return lap_gen_cuda_arch; }
const char *backend::kernelIsas() { return gpus().isas.c_str(); }

bool backend::readsBatches() { return false; }

void backend::initialise(float *params, int64_t elements,
                         const std::function<void(float *)> &fill) {
  std::vector<float> host(elements);
  fill(host.data());
  lap::cuda::check(cudaMemcpyAsync(params, host.data(),
                                   elements * sizeof(float),
                                   cudaMemcpyHostToDevice, lap::cuda::stream()),
                   "copying the initial parameters to the GPU");
  // `host` is freed on return: the copy must be done by then.
  lap::cuda::check(cudaStreamSynchronize(lap::cuda::stream()),
                   "copying the initial parameters to the GPU");
}

void backend::toHost(void *to, const void *from, size_t bytes) {
  lap::cuda::check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost,
                                   lap::cuda::stream()),
                   "copying to the host");
  lap::cuda::check(cudaStreamSynchronize(lap::cuda::stream()),
                   "copying to the host");
}

lap_status backend::setStream(void *stream) {
  lap::cuda::setStream(static_cast<cudaStream_t>(stream));
  return LAP_OK;
}

lap_status backend::finish(std::string &error) {
  error = lap::cuda::takeFailure();
  return error.empty() ? LAP_OK : LAP_INTERNAL;
}
