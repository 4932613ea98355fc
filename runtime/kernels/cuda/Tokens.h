//===- Tokens.h - image patches, learned tokens, pooling --------*- CUDA -*-===//
//
// Data movement and sums over the batch or over tokens. Launches are one
// block row per output row (blockIdx.x) with threads over its columns
// (blockIdx.y chunks), so each output element is written by one thread and
// sums run in the CPU's order: deterministic, and equal to the CPU's. The
// token kernels also take a bf16 model's tensors (`_bf16`): copies move
// them as they are, sums run in fp32 and are rounded once. Kernels in
// DeviceCode.h's CUDA, plans over a Launcher (Launcher.h): the emulator
// runs this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_TOKENS_H
#define LAP_RUNTIME_KERNELS_CUDA_TOKENS_H

#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/RowLaunch.h"

#include <cstdint>

namespace lap::cuda::tokens {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

//--- Patches -----------------------------------------------------------------

// images [B, C, Hi, Wi] -> y [B * Hp * Wp, C p p]; block row = patch.
__global__ void patchifyForwardKernel(float *y, const float *images, int64_t C,
                                      int64_t Hi, int64_t Wi, int64_t p,
                                      int64_t Hp, int64_t Wp) {
  const int64_t width = C * p * p, j = RowLaunch::column();
  if (j >= width)
    return;
  const int64_t r = blockIdx.x, b = r / (Hp * Wp), ph = r / Wp % Hp,
                pw = r % Wp;
  const int64_t c = j / (p * p), dy = j / p % p, dx = j % p;
  y[r * width + j] =
      images[((b * C + c) * Hi + ph * p + dy) * Wi + pw * p + dx];
}

// dy [B * Hp * Wp, C p p] -> dimages [B, C, Hi, Wi]; block row = image row.
// Pixels no patch covers (p does not divide the image) get zero.
__global__ void patchifyBackwardKernel(float *dimages, const float *dy,
                                       int64_t C, int64_t Hi, int64_t Wi,
                                       int64_t p, int64_t Hp, int64_t Wp) {
  const int64_t w = RowLaunch::column();
  if (w >= Wi)
    return;
  const int64_t r = blockIdx.x, b = r / (C * Hi), c = r / Hi % C, h = r % Hi;
  const int64_t ph = h / p, pw = w / p;
  float value = 0.0f;
  if (ph < Hp && pw < Wp)
    value = dy[(b * Hp * Wp + ph * Wp + pw) * (C * p * p) +
               (c * p + h % p) * p + w % p];
  dimages[r * Wi + w] = value;
}

//--- Learned tokens ----------------------------------------------------------

// x [B, N, c], tokens [k, c] -> y [B, k + N, c]; block row = row of y.
template <typename E>
__global__ void prependForwardKernel(E *y, const E *x, const E *tokens,
                                     int64_t N, int64_t k, int64_t c) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x, b = r / (k + N), t = r % (k + N);
  y[r * c + j] = t < k ? tokens[t * c + j] : x[(b * N + t - k) * c + j];
}

// dy [B, k + N, c] -> dx [B, N, c]; block row = row of dx.
template <typename E>
__global__ void prependBackwardXKernel(E *dx, const E *dy, int64_t N, int64_t k,
                                       int64_t c) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x;
  dx[r * c + j] = dy[(r / N * (k + N) + k + r % N) * c + j];
}

// dy [B, k + N, c] -> dtokens [k, c] = sum over b in order; block row = token.
template <typename E>
__global__ void prependBackwardTokensKernel(E *dtokens, const E *dy, int64_t B,
                                            int64_t N, int64_t k, int64_t c) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t t = blockIdx.x;
  float sum = 0.0f;
  for (int64_t b = 0; b < B; ++b)
    sum += load(dy[(b * (k + N) + t) * c + j]);
  store(dtokens[t * c + j], sum);
}

//--- Pooling -----------------------------------------------------------------

// x [B, T, c] -> y [B, c] = x[:, index]; block row = b.
template <typename E>
__global__ void takeTokenForwardKernel(E *y, const E *x, int64_t T, int64_t c,
                                       int64_t index) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t b = blockIdx.x;
  y[b * c + j] = x[(b * T + index) * c + j];
}

// dy [B, c] -> dx [B, T, c], zero but at index; block row = row of dx.
template <typename E>
__global__ void takeTokenBackwardKernel(E *dx, const E *dy, int64_t T,
                                        int64_t c, int64_t index) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x;
  dx[r * c + j] = r % T == index ? dy[r / T * c + j] : E(0);
}

// x [B, T, c] -> y [B, c] = mean of x[:, skip:T], summed in token order;
// block row = b.
template <typename E>
__global__ void meanTokensForwardKernel(E *y, const E *x, int64_t T, int64_t c,
                                        int64_t skip) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t b = blockIdx.x, count = T - skip;
  float sum = 0.0f;
  if (count > 0) {
    for (int64_t t = skip; t < T; ++t)
      sum += load(x[(b * T + t) * c + j]);
    sum *= 1.0f / float(count);
  }
  store(y[b * c + j], sum);
}

// dy [B, c] -> dx [B, T, c] = dy / count at t >= skip; block row = row of dx.
template <typename E>
__global__ void meanTokensBackwardKernel(E *dx, const E *dy, int64_t T,
                                         int64_t c, int64_t skip) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x, count = T - skip;
  store(dx[r * c + j], r % T < skip || count <= 0
                           ? 0.0f
                           : load(dy[r / T * c + j]) * (1.0f / float(count)));
}

/// lap_cuda_patchify_forward.
template <typename Launcher>
void patchifyForward(const Launcher &device, float *y, const float *images,
                     int64_t B, int64_t C, int64_t Hi, int64_t Wi, int64_t p) {
  int64_t Hp = Hi / p, Wp = Wi / p, rows = B * Hp * Wp, width = C * p * p;
  RowLaunch::launch(device, patchifyForwardKernel, rows, width, 0,
                    "patchify_forward", y, images, C, Hi, Wi, p, Hp, Wp);
}

/// lap_cuda_patchify_backward.
template <typename Launcher>
void patchifyBackward(const Launcher &device, float *dimages, const float *dy,
                      int64_t B, int64_t C, int64_t Hi, int64_t Wi, int64_t p) {
  RowLaunch::launch(device, patchifyBackwardKernel, B * C * Hi, Wi, 0,
                    "patchify_backward", dimages, dy, C, Hi, Wi, p, Hi / p,
                    Wi / p);
}

/// lap_cuda_prepend_tokens_forward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void prependTokensForward(const Launcher &device, E *y, const E *x,
                          const E *tokens, int64_t B, int64_t N, int64_t k,
                          int64_t c) {
  RowLaunch::launch(device, prependForwardKernel<E>, B * (k + N), c, 0,
                    "prepend_tokens_forward", y, x, tokens, N, k, c);
}

/// lap_cuda_prepend_tokens_backward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void prependTokensBackward(const Launcher &device, E *dx, E *dtokens,
                           const E *dy, int64_t B, int64_t N, int64_t k,
                           int64_t c) {
  if (dx)
    RowLaunch::launch(device, prependBackwardXKernel<E>, B * N, c, 0,
                      "prepend_tokens_backward", dx, dy, N, k, c);
  if (dtokens)
    RowLaunch::launch(device, prependBackwardTokensKernel<E>, k, c, 0,
                      "prepend_tokens_backward", dtokens, dy, B, N, k, c);
}

/// lap_cuda_take_token_forward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void takeTokenForward(const Launcher &device, E *y, const E *x, int64_t B,
                      int64_t T, int64_t c, int64_t index) {
  RowLaunch::launch(device, takeTokenForwardKernel<E>, B, c, 0,
                    "take_token_forward", y, x, T, c, index);
}

/// lap_cuda_take_token_backward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void takeTokenBackward(const Launcher &device, E *dx, const E *dy, int64_t B,
                       int64_t T, int64_t c, int64_t index) {
  RowLaunch::launch(device, takeTokenBackwardKernel<E>, B * T, c, 0,
                    "take_token_backward", dx, dy, T, c, index);
}

/// lap_cuda_mean_tokens_forward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void meanTokensForward(const Launcher &device, E *y, const E *x, int64_t B,
                       int64_t T, int64_t c, int64_t skip) {
  RowLaunch::launch(device, meanTokensForwardKernel<E>, B, c, 0,
                    "mean_tokens_forward", y, x, T, c, skip);
}

/// lap_cuda_mean_tokens_backward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void meanTokensBackward(const Launcher &device, E *dx, const E *dy, int64_t B,
                        int64_t T, int64_t c, int64_t skip) {
  RowLaunch::launch(device, meanTokensBackwardKernel<E>, B * T, c, 0,
                    "mean_tokens_backward", dx, dy, T, c, skip);
}

} // namespace
} // namespace lap::cuda::tokens

#endif // LAP_RUNTIME_KERNELS_CUDA_TOKENS_H
