//===- Attention.cu - The CUDA attention's entry points ---------*- CUDA -*-===//
//
// lap_cuda_attention_forward/backward and their bf16 variants: Attention.h's
// plan on CUDA's device (the calling thread's stream and scratch, failures
// recorded in Context.h). The kernels: AttentionCudaCores.h and
// AttentionTensorCores.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Attention.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"

using lap::cuda::Launcher;
namespace attention = lap::cuda::attention;

extern "C" void lap_cuda_attention_forward(
    float *o, float *lse, const float *q, const float *k, const float *v,
    const float *coefficients, const int32_t *starts, const int32_t *lengths,
    int64_t B, int64_t T, int64_t S, int64_t H, int64_t KV, int64_t D,
    float scale, int32_t causal, int64_t window) {
  attention::forward(Launcher(), o, lse, q, k, v, coefficients, starts, lengths,
                     B, T, S, H, KV, D, scale, causal, window);
}

extern "C" void lap_cuda_attention_forward_bf16(
    lap_bf16 *o, float *lse, const lap_bf16 *q, const lap_bf16 *k,
    const lap_bf16 *v, const float *coefficients, const int32_t *starts,
    const int32_t *lengths, int64_t B, int64_t T, int64_t S, int64_t H,
    int64_t KV, int64_t D, float scale, int32_t causal, int64_t window) {
  attention::forward(Launcher(), o, lse, q, k, v, coefficients, starts, lengths,
                     B, T, S, H, KV, D, scale, causal, window);
}

extern "C" void lap_cuda_attention_backward(
    float *dq, float *dk, float *dv, float *dcoefficients, const float *dout,
    const float *q, const float *k, const float *v, const float *o,
    const float *lse, const float *coefficients, const int32_t *starts,
    const int32_t *lengths, int64_t B, int64_t T, int64_t S, int64_t H,
    int64_t KV, int64_t D, float scale, int32_t causal, int64_t window) {
  attention::backward(Launcher(), dq, dk, dv, dcoefficients, dout, q, k, v, o,
                      lse, coefficients, starts, lengths, B, T, S, H, KV, D,
                      scale, causal, window);
}

extern "C" void lap_cuda_attention_backward_bf16(
    lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv, float *dcoefficients,
    const lap_bf16 *dout, const lap_bf16 *q, const lap_bf16 *k,
    const lap_bf16 *v, const lap_bf16 *o, const float *lse,
    const float *coefficients, const int32_t *starts, const int32_t *lengths,
    int64_t B, int64_t T, int64_t S, int64_t H, int64_t KV, int64_t D,
    float scale, int32_t causal, int64_t window) {
  attention::backward(Launcher(), dq, dk, dv, dcoefficients, dout, q, k, v, o,
                      lse, coefficients, starts, lengths, B, T, S, H, KV, D,
                      scale, causal, window);
}
