//===- Copy.cu - Copies between buffers -------------------------*- CUDA -*-===//

#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"

extern "C" void lap_cuda_copy(float *y, const float *x, int64_t n) {
  if (n > 0)
    lap::cuda::Launcher().copy(y, x, size_t(n) * sizeof(float));
}
