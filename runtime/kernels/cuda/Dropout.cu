//===- Dropout.cu - Dropout's entry points ----------------------*- CUDA -*-===//
//
// lap_cuda_dropout* and drop_path*: Dropout.h's plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Dropout.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"

using lap::cuda::Launcher;
using lap::cuda::dropout::dropout;
using lap::cuda::dropout::dropPath;

extern "C" void lap_cuda_dropout(float *y, const float *x, int64_t n,
                                 float rate, const uint64_t *seed,
                                 int64_t key) {
  dropout(Launcher(), y, x, n, rate, seed, key);
}

extern "C" void lap_cuda_drop_path(float *y, const float *x, int64_t B,
                                   int64_t per_sample, float rate,
                                   const uint64_t *seed, int64_t key) {
  dropPath(Launcher(), y, x, B, per_sample, rate, seed, key);
}

extern "C" void lap_cuda_dropout_bf16(lap_bf16 *y, const lap_bf16 *x, int64_t n,
                                      float rate, const uint64_t *seed,
                                      int64_t key) {
  dropout(Launcher(), y, x, n, rate, seed, key);
}

extern "C" void lap_cuda_drop_path_bf16(lap_bf16 *y, const lap_bf16 *x,
                                        int64_t B, int64_t per_sample,
                                        float rate, const uint64_t *seed,
                                        int64_t key) {
  dropPath(Launcher(), y, x, B, per_sample, rate, seed, key);
}
