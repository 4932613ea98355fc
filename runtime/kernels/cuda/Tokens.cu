//===- Tokens.cu - image patches, learned tokens, pooling -------*- C++ -*-===//
//
// Data movement and sums over the batch or over tokens. Launches are one
// block row per output row (blockIdx.x) with threads over its columns
// (blockIdx.y chunks), so each output element is written by one thread and
// sums run in the CPU's order: deterministic, and equal to the CPU's. The
// token kernels also take a bf16 model's tensors (`_bf16`): copies move
// them as they are, sums run in fp32 and are rounded once.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/Kernels.h"

#include <algorithm>

namespace {

using lap::cuda::load;
using lap::cuda::store;

/// The launch covering rows x c elements, a block row per row.
struct RowLaunch {
  dim3 grid;
  int threads;
  RowLaunch(int64_t rows, int64_t c) {
    threads = int(std::min<int64_t>(lap::cuda::kBlock, (c + 31) / 32 * 32));
    grid = dim3(unsigned(rows), lap::cuda::blocksFor(c, threads));
  }
};

/// The column of this thread in a RowLaunch.
__device__ int64_t column() {
  return int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
}

//--- Patches -----------------------------------------------------------------

// images [B, C, Hi, Wi] -> y [B * Hp * Wp, C p p]; block row = patch.
__global__ void patchifyForwardKernel(float *y, const float *images, int64_t C,
                                      int64_t Hi, int64_t Wi, int64_t p,
                                      int64_t Hp, int64_t Wp) {
  const int64_t width = C * p * p, j = column();
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
  const int64_t w = column();
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
  const int64_t j = column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x, b = r / (k + N), t = r % (k + N);
  y[r * c + j] = t < k ? tokens[t * c + j] : x[(b * N + t - k) * c + j];
}

// dy [B, k + N, c] -> dx [B, N, c]; block row = row of dx.
template <typename E>
__global__ void prependBackwardXKernel(E *dx, const E *dy, int64_t N, int64_t k,
                                       int64_t c) {
  const int64_t j = column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x;
  dx[r * c + j] = dy[(r / N * (k + N) + k + r % N) * c + j];
}

// dy [B, k + N, c] -> dtokens [k, c] = sum over b in order; block row = token.
template <typename E>
__global__ void prependBackwardTokensKernel(E *dtokens, const E *dy, int64_t B,
                                            int64_t N, int64_t k, int64_t c) {
  const int64_t j = column();
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
  const int64_t j = column();
  if (j >= c)
    return;
  const int64_t b = blockIdx.x;
  y[b * c + j] = x[(b * T + index) * c + j];
}

// dy [B, c] -> dx [B, T, c], zero but at index; block row = row of dx.
template <typename E>
__global__ void takeTokenBackwardKernel(E *dx, const E *dy, int64_t T,
                                        int64_t c, int64_t index) {
  const int64_t j = column();
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
  const int64_t j = column();
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
  const int64_t j = column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x, count = T - skip;
  store(dx[r * c + j], r % T < skip || count <= 0
                           ? 0.0f
                           : load(dy[r / T * c + j]) * (1.0f / float(count)));
}

} // namespace

extern "C" void lap_cuda_patchify_forward(float *y, const float *images,
                                          int64_t B, int64_t C, int64_t Hi,
                                          int64_t Wi, int64_t p) {
  int64_t Hp = Hi / p, Wp = Wi / p, rows = B * Hp * Wp, width = C * p * p;
  if (rows == 0 || width == 0)
    return;
  RowLaunch l(rows, width);
  patchifyForwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      y, images, C, Hi, Wi, p, Hp, Wp);
  lap::cuda::checkLaunch("patchify_forward");
}

extern "C" void lap_cuda_patchify_backward(float *dimages, const float *dy,
                                           int64_t B, int64_t C, int64_t Hi,
                                           int64_t Wi, int64_t p) {
  if (B * C * Hi == 0 || Wi == 0)
    return;
  RowLaunch l(B * C * Hi, Wi);
  patchifyBackwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      dimages, dy, C, Hi, Wi, p, Hi / p, Wi / p);
  lap::cuda::checkLaunch("patchify_backward");
}

namespace {

template <typename E>
void prependTokensForward(E *y, const E *x, const E *tokens, int64_t B,
                          int64_t N, int64_t k, int64_t c) {
  if (B * (k + N) == 0 || c == 0)
    return;
  RowLaunch l(B * (k + N), c);
  prependForwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      y, x, tokens, N, k, c);
  lap::cuda::checkLaunch("prepend_tokens_forward");
}

template <typename E>
void prependTokensBackward(E *dx, E *dtokens, const E *dy, int64_t B, int64_t N,
                           int64_t k, int64_t c) {
  if (c == 0)
    return;
  if (dx && B * N > 0) {
    RowLaunch l(B * N, c);
    prependBackwardXKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
        dx, dy, N, k, c);
    lap::cuda::checkLaunch("prepend_tokens_backward");
  }
  if (dtokens && k > 0) {
    RowLaunch l(k, c);
    prependBackwardTokensKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
        dtokens, dy, B, N, k, c);
    lap::cuda::checkLaunch("prepend_tokens_backward");
  }
}

template <typename E>
void takeTokenForward(E *y, const E *x, int64_t B, int64_t T, int64_t c,
                      int64_t index) {
  if (B == 0 || c == 0)
    return;
  RowLaunch l(B, c);
  takeTokenForwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      y, x, T, c, index);
  lap::cuda::checkLaunch("take_token_forward");
}

template <typename E>
void takeTokenBackward(E *dx, const E *dy, int64_t B, int64_t T, int64_t c,
                       int64_t index) {
  if (B * T == 0 || c == 0)
    return;
  RowLaunch l(B * T, c);
  takeTokenBackwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      dx, dy, T, c, index);
  lap::cuda::checkLaunch("take_token_backward");
}

template <typename E>
void meanTokensForward(E *y, const E *x, int64_t B, int64_t T, int64_t c,
                       int64_t skip) {
  if (B == 0 || c == 0)
    return;
  RowLaunch l(B, c);
  meanTokensForwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      y, x, T, c, skip);
  lap::cuda::checkLaunch("mean_tokens_forward");
}

template <typename E>
void meanTokensBackward(E *dx, const E *dy, int64_t B, int64_t T, int64_t c,
                        int64_t skip) {
  if (B * T == 0 || c == 0)
    return;
  RowLaunch l(B * T, c);
  meanTokensBackwardKernel<<<l.grid, l.threads, 0, lap::cuda::stream()>>>(
      dx, dy, T, c, skip);
  lap::cuda::checkLaunch("mean_tokens_backward");
}

} // namespace

extern "C" void lap_cuda_prepend_tokens_forward(float *y, const float *x,
                                                const float *tokens, int64_t B,
                                                int64_t N, int64_t k,
                                                int64_t c) {
  prependTokensForward(y, x, tokens, B, N, k, c);
}

extern "C" void lap_cuda_prepend_tokens_forward_bf16(lap_bf16 *y,
                                                     const lap_bf16 *x,
                                                     const lap_bf16 *tokens,
                                                     int64_t B, int64_t N,
                                                     int64_t k, int64_t c) {
  prependTokensForward(y, x, tokens, B, N, k, c);
}

extern "C" void lap_cuda_prepend_tokens_backward(float *dx, float *dtokens,
                                                 const float *dy, int64_t B,
                                                 int64_t N, int64_t k,
                                                 int64_t c) {
  prependTokensBackward(dx, dtokens, dy, B, N, k, c);
}

extern "C" void lap_cuda_prepend_tokens_backward_bf16(lap_bf16 *dx,
                                                      lap_bf16 *dtokens,
                                                      const lap_bf16 *dy,
                                                      int64_t B, int64_t N,
                                                      int64_t k, int64_t c) {
  prependTokensBackward(dx, dtokens, dy, B, N, k, c);
}

extern "C" void lap_cuda_take_token_forward(float *y, const float *x, int64_t B,
                                            int64_t T, int64_t c,
                                            int64_t index) {
  takeTokenForward(y, x, B, T, c, index);
}

extern "C" void lap_cuda_take_token_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                                 int64_t B, int64_t T,
                                                 int64_t c, int64_t index) {
  takeTokenForward(y, x, B, T, c, index);
}

extern "C" void lap_cuda_take_token_backward(float *dx, const float *dy,
                                             int64_t B, int64_t T, int64_t c,
                                             int64_t index) {
  takeTokenBackward(dx, dy, B, T, c, index);
}

extern "C" void lap_cuda_take_token_backward_bf16(lap_bf16 *dx,
                                                  const lap_bf16 *dy, int64_t B,
                                                  int64_t T, int64_t c,
                                                  int64_t index) {
  takeTokenBackward(dx, dy, B, T, c, index);
}

extern "C" void lap_cuda_mean_tokens_forward(float *y, const float *x,
                                             int64_t B, int64_t T, int64_t c,
                                             int64_t skip) {
  meanTokensForward(y, x, B, T, c, skip);
}

extern "C" void lap_cuda_mean_tokens_forward_bf16(lap_bf16 *y,
                                                  const lap_bf16 *x, int64_t B,
                                                  int64_t T, int64_t c,
                                                  int64_t skip) {
  meanTokensForward(y, x, B, T, c, skip);
}

extern "C" void lap_cuda_mean_tokens_backward(float *dx, const float *dy,
                                              int64_t B, int64_t T, int64_t c,
                                              int64_t skip) {
  meanTokensBackward(dx, dy, B, T, c, skip);
}

extern "C" void lap_cuda_mean_tokens_backward_bf16(lap_bf16 *dx,
                                                   const lap_bf16 *dy,
                                                   int64_t B, int64_t T,
                                                   int64_t c, int64_t skip) {
  meanTokensBackward(dx, dy, B, T, c, skip);
}
