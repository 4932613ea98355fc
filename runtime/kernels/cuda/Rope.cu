//===- Rope.cu - The rotary embedding's entry points ------------*- CUDA -*-===//
//
// lap_cuda_rope_*: Rope.h's plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"
#include "runtime/kernels/cuda/Rope.h"

using lap::cuda::Launcher;
using lap::cuda::rope::rotate;

extern "C" void lap_cuda_rope_forward(float *y, const float *x, int64_t B,
                                      int64_t T, int64_t H, int64_t D,
                                      float base, int64_t first) {
  rotate<1>(Launcher(), y, x, B, T, H, D, base, first);
}

extern "C" void lap_cuda_rope_backward(float *dx, const float *dy, int64_t B,
                                       int64_t T, int64_t H, int64_t D,
                                       float base, int64_t first) {
  rotate<-1>(Launcher(), dx, dy, B, T, H, D, base, first);
}

extern "C" void lap_cuda_rope_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                           int64_t B, int64_t T, int64_t H,
                                           int64_t D, float base,
                                           int64_t first) {
  rotate<1>(Launcher(), y, x, B, T, H, D, base, first);
}

extern "C" void lap_cuda_rope_backward_bf16(lap_bf16 *dx, const lap_bf16 *dy,
                                            int64_t B, int64_t T, int64_t H,
                                            int64_t D, float base,
                                            int64_t first) {
  rotate<-1>(Launcher(), dx, dy, B, T, H, D, base, first);
}
