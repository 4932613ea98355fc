//===- DecodeAttention.cu - The decode attention's entry point --*- CUDA -*-===//
//
// lap_cuda_attention_decode: DecodeAttention.h's plan on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/DecodeAttention.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"

extern "C" void
lap_cuda_attention_decode(float *o, float *kCache, float *vCache,
                          const float *q, const float *k, const float *v,
                          const float *coefficients, int64_t B, int64_t T,
                          int64_t first, int64_t slots, int64_t H, int64_t KV,
                          int64_t D, float scale, int64_t window) {
  lap::cuda::decoding::decode(lap::cuda::Launcher(), o, kCache, vCache, q, k, v,
                              coefficients, B, T, first, slots, H, KV, D, scale,
                              window);
}
