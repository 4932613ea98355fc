//===- Tokens.cu - The token kernels' entry points --------------*- CUDA -*-===//
//
// lap_cuda_patchify_*, prepend_tokens_*, take_token_* and mean_tokens_*:
// Tokens.h's plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"
#include "runtime/kernels/cuda/Tokens.h"

using lap::cuda::Launcher;
using lap::cuda::tokens::meanTokensBackward;
using lap::cuda::tokens::meanTokensForward;
using lap::cuda::tokens::patchifyBackward;
using lap::cuda::tokens::patchifyForward;
using lap::cuda::tokens::prependTokensBackward;
using lap::cuda::tokens::prependTokensForward;
using lap::cuda::tokens::takeTokenBackward;
using lap::cuda::tokens::takeTokenForward;

extern "C" void lap_cuda_patchify_forward(float *y, const float *images,
                                          int64_t B, int64_t C, int64_t Hi,
                                          int64_t Wi, int64_t p) {
  patchifyForward(Launcher(), y, images, B, C, Hi, Wi, p);
}

extern "C" void lap_cuda_patchify_backward(float *dimages, const float *dy,
                                           int64_t B, int64_t C, int64_t Hi,
                                           int64_t Wi, int64_t p) {
  patchifyBackward(Launcher(), dimages, dy, B, C, Hi, Wi, p);
}

extern "C" void lap_cuda_prepend_tokens_forward(float *y, const float *x,
                                                const float *tokens, int64_t B,
                                                int64_t N, int64_t k,
                                                int64_t c) {
  prependTokensForward(Launcher(), y, x, tokens, B, N, k, c);
}

extern "C" void lap_cuda_prepend_tokens_forward_bf16(lap_bf16 *y,
                                                     const lap_bf16 *x,
                                                     const lap_bf16 *tokens,
                                                     int64_t B, int64_t N,
                                                     int64_t k, int64_t c) {
  prependTokensForward(Launcher(), y, x, tokens, B, N, k, c);
}

extern "C" void lap_cuda_prepend_tokens_backward(float *dx, float *dtokens,
                                                 const float *dy, int64_t B,
                                                 int64_t N, int64_t k,
                                                 int64_t c) {
  prependTokensBackward(Launcher(), dx, dtokens, dy, B, N, k, c);
}

extern "C" void lap_cuda_prepend_tokens_backward_bf16(lap_bf16 *dx,
                                                      lap_bf16 *dtokens,
                                                      const lap_bf16 *dy,
                                                      int64_t B, int64_t N,
                                                      int64_t k, int64_t c) {
  prependTokensBackward(Launcher(), dx, dtokens, dy, B, N, k, c);
}

extern "C" void lap_cuda_take_token_forward(float *y, const float *x, int64_t B,
                                            int64_t T, int64_t c,
                                            int64_t index) {
  takeTokenForward(Launcher(), y, x, B, T, c, index);
}

extern "C" void lap_cuda_take_token_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                                 int64_t B, int64_t T,
                                                 int64_t c, int64_t index) {
  takeTokenForward(Launcher(), y, x, B, T, c, index);
}

extern "C" void lap_cuda_take_token_backward(float *dx, const float *dy,
                                             int64_t B, int64_t T, int64_t c,
                                             int64_t index) {
  takeTokenBackward(Launcher(), dx, dy, B, T, c, index);
}

extern "C" void lap_cuda_take_token_backward_bf16(lap_bf16 *dx,
                                                  const lap_bf16 *dy, int64_t B,
                                                  int64_t T, int64_t c,
                                                  int64_t index) {
  takeTokenBackward(Launcher(), dx, dy, B, T, c, index);
}

extern "C" void lap_cuda_mean_tokens_forward(float *y, const float *x,
                                             int64_t B, int64_t T, int64_t c,
                                             int64_t skip) {
  meanTokensForward(Launcher(), y, x, B, T, c, skip);
}

extern "C" void lap_cuda_mean_tokens_forward_bf16(lap_bf16 *y,
                                                  const lap_bf16 *x, int64_t B,
                                                  int64_t T, int64_t c,
                                                  int64_t skip) {
  meanTokensForward(Launcher(), y, x, B, T, c, skip);
}

extern "C" void lap_cuda_mean_tokens_backward(float *dx, const float *dy,
                                              int64_t B, int64_t T, int64_t c,
                                              int64_t skip) {
  meanTokensBackward(Launcher(), dx, dy, B, T, c, skip);
}

extern "C" void lap_cuda_mean_tokens_backward_bf16(lap_bf16 *dx,
                                                   const lap_bf16 *dy,
                                                   int64_t B, int64_t T,
                                                   int64_t c, int64_t skip) {
  meanTokensBackward(Launcher(), dx, dy, B, T, c, skip);
}
