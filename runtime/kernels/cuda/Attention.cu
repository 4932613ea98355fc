//===- Attention.cu - The CUDA attention's entry points ---------*- CUDA -*-===//
//
// lap_cuda_attention_forward/backward and their bf16 variants: Attention.h's
// plan on CUDA's device (the calling thread's stream and scratch, failures
// recorded in Context.h). The kernels: AttentionCudaCores.h and
// AttentionTensorCores.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Attention.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Kernels.h"

#include <algorithm>
#include <climits>
#include <string>

namespace {

using namespace lap::cuda;

/// Attention.h's Device on the GPU.
struct CudaDevice {
  /// Launches kernel on `blocks` blocks of `threads` with `bytes` of
  /// dynamic shared memory (opted in above the default 48 KiB) on the
  /// calling thread's stream; nothing for zero blocks.
  template <typename... Params, typename... Args>
  void launch(void (*kernel)(Params...), int64_t blocks, int threads,
              size_t bytes, const char *what, Args... args) const {
    if (blocks == 0)
      return;
    if (blocks > INT_MAX)
      return fail(std::string(what) + ": too many blocks");
    if (bytes > 48 * 1024 &&
        !check(cudaFuncSetAttribute(kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(bytes)),
               what))
      return;
    kernel<<<unsigned(blocks), threads, bytes, stream()>>>(args...);
    checkLaunch(what);
  }
  float *floats(int slot, int64_t n) const {
    return static_cast<float *>(
        scratch(slot, size_t(std::max<int64_t>(n, 1)) * sizeof(float)));
  }
  void fail(const std::string &why) const { lap::cuda::fail(why); }
};

} // namespace

extern "C" void lap_cuda_attention_forward(float *o, float *lse, const float *q,
                                           const float *k, const float *v,
                                           const float *coefficients, int64_t B,
                                           int64_t T, int64_t S, int64_t H,
                                           int64_t KV, int64_t D, float scale,
                                           int32_t causal) {
  attention::forward(CudaDevice(), o, lse, q, k, v, coefficients, B, T, S, H,
                     KV, D, scale, causal);
}

extern "C" void lap_cuda_attention_forward_bf16(
    lap_bf16 *o, float *lse, const lap_bf16 *q, const lap_bf16 *k,
    const lap_bf16 *v, const float *coefficients, int64_t B, int64_t T,
    int64_t S, int64_t H, int64_t KV, int64_t D, float scale, int32_t causal) {
  attention::forward(CudaDevice(), o, lse, q, k, v, coefficients, B, T, S, H,
                     KV, D, scale, causal);
}

extern "C" void lap_cuda_attention_backward(
    float *dq, float *dk, float *dv, float *dcoefficients, const float *dout,
    const float *q, const float *k, const float *v, const float *o,
    const float *lse, const float *coefficients, int64_t B, int64_t T,
    int64_t S, int64_t H, int64_t KV, int64_t D, float scale, int32_t causal) {
  attention::backward(CudaDevice(), dq, dk, dv, dcoefficients, dout, q, k, v, o,
                      lse, coefficients, B, T, S, H, KV, D, scale, causal);
}

extern "C" void lap_cuda_attention_backward_bf16(
    lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv, float *dcoefficients,
    const lap_bf16 *dout, const lap_bf16 *q, const lap_bf16 *k,
    const lap_bf16 *v, const lap_bf16 *o, const float *lse,
    const float *coefficients, int64_t B, int64_t T, int64_t S, int64_t H,
    int64_t KV, int64_t D, float scale, int32_t causal) {
  attention::backward(CudaDevice(), dq, dk, dv, dcoefficients, dout, q, k, v, o,
                      lse, coefficients, B, T, S, H, KV, D, scale, causal);
}
