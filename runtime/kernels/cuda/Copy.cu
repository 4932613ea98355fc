//===- Copy.cu - Copies between buffers -------------------------*- C++ -*-===//

#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Kernels.h"

extern "C" void lap_cuda_copy(float *y, const float *x, int64_t n) {
  if (n > 0)
    lap::cuda::check(cudaMemcpyAsync(y, x, size_t(n) * sizeof(float),
                                     cudaMemcpyDeviceToDevice,
                                     lap::cuda::stream()),
                     "copy");
}
