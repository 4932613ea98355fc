//===- Update.cu - The trainer's own arithmetic on the GPU ------*- CUDA -*-===//
//
// Elementwise work is one thread per element; span work one block per span,
// its threads striding the span. Products and sums are __fmul_rn/__fadd_rn
// (never contracted into FMAs), divisions and square roots correctly
// rounded: the host's float arithmetic, so updates match it bit for bit.
// Sums of squares are fp64 block reductions in an order fixed by the block
// size, never atomics, so they are the same on every run.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Update.h"

#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Gemm.h"

#include <utility>

using lap::cuda::blocksFor;
using lap::cuda::checkLaunch;
using lap::cuda::kBlock;
using lap::cuda::stream;
using lap::cuda::UpdateSpan;

namespace {

/// Floats per partial sum of the Frobenius norm: the host's (device/Device.h's
/// kSpan), so both add up partials of the same elements.
constexpr int64_t kChunk = int64_t(1) << 15;

/// The element of this thread in a one-dimensional launch.
__device__ int64_t element() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

/// torch.lerp's formula: start + w (end - start), from the end for w >= 0.5.
__device__ float lerp(float start, float end, float w) {
  const float d = __fsub_rn(end, start);
  return w < 0.5f ? __fadd_rn(start, __fmul_rn(w, d))
                  : __fsub_rn(end, __fmul_rn(d, __fsub_rn(1.0f, w)));
}

/// The block's sum of v, in thread 0: a butterfly within each warp, then
/// the warps' sums in warp order. blockDim.x: a multiple of 32.
__device__ double blockSum(double v) {
  __shared__ double warps[32];
  for (int mask = 16; mask > 0; mask /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, mask);
  if (threadIdx.x % 32 == 0)
    warps[threadIdx.x / 32] = v;
  __syncthreads();
  double s = 0.0;
  if (threadIdx.x == 0)
    for (unsigned w = 0; w < blockDim.x / 32; ++w)
      s += warps[w];
  return s;
}

/// The block's fp64 sum of x[0, size)², in thread 0. Each square is exact
/// in fp64 (24-bit mantissas), so only the additions round.
__device__ double sumSquares(const float *x, int64_t size) {
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < size; j += blockDim.x) {
    const double v = x[j];
    s += v * v;
  }
  return blockSum(s);
}

// acc, g [n]: acc = 0 + g * scale (first), else acc += g * scale. acc is not
// read when first (it may hold anything).
__global__ void accumulateKernel(float *acc, const float *g, float scale,
                                 int64_t n, bool first) {
  const int64_t i = element();
  if (i >= n)
    return;
  acc[i] = __fadd_rn(first ? 0.0f : acc[i], __fmul_rn(g[i], scale));
}

// x [*], spans [gridDim.x] -> out [gridDim.x]: block k sums span k's squares.
__global__ void spanSquares(double *out, const float *x,
                            const UpdateSpan *spans) {
  const UpdateSpan s = spans[blockIdx.x];
  const double sum = sumSquares(x + s.offset, s.size);
  if (threadIdx.x == 0)
    out[blockIdx.x] = sum;
}

// x [*], spans [gridDim.x]: block k scales span k.
__global__ void scaleSpans(float *x, const UpdateSpan *spans, float coef) {
  const UpdateSpan s = spans[blockIdx.x];
  float *xs = x + s.offset;
  for (int64_t j = threadIdx.x; j < s.size; j += blockDim.x)
    xs[j] = __fmul_rn(xs[j], coef);
}

// params, grads [*] at the spans' offsets; m, v [*] at their state; spans
// [gridDim.x]: block k updates span k (Optimizer.cpp's adamwStep).
__global__ void adamwKernel(float *params, const float *grads, float *m,
                            float *v, const UpdateSpan *spans,
                            lap::cuda::AdamWScalars c) {
  const UpdateSpan s = spans[blockIdx.x];
  float *p = params + s.offset, *ms = m + s.state, *vs = v + s.state;
  const float *g = grads + s.offset;
  for (int64_t j = threadIdx.x; j < s.size; j += blockDim.x) {
    const float gj = g[j];
    const float mj = lerp(ms[j], gj, c.w1);
    const float vj = __fadd_rn(__fmul_rn(vs[j], c.beta2),
                               __fmul_rn(c.w2, __fmul_rn(gj, gj)));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vj), c.bc2Sqrt), c.eps);
    p[j] = __fadd_rn(__fmul_rn(p[j], c.decay),
                     __fmul_rn(-c.stepSize, __fdiv_rn(mj, denom)));
    ms[j] = mj;
    vs[j] = vj;
  }
}

// buf, g, u [n]: Muon's momentum (nanochat's lerps). u may be g.
__global__ void muonMomentumKernel(float *buf, const float *g, float *u,
                                   int64_t n, float momentum, float weight,
                                   bool nesterov) {
  const int64_t i = element();
  if (i >= n)
    return;
  const float gi = g[i], b = lerp(buf[i], gi, weight);
  buf[i] = b;
  u[i] = nesterov ? lerp(gi, b, momentum) : b;
}

// params, u [n]: params = params * decay - scale * u.
__global__ void applyUpdateKernel(float *params, const float *u, int64_t n,
                                  float decay, float scale) {
  const int64_t i = element();
  if (i >= n)
    return;
  params[i] = __fsub_rn(__fmul_rn(params[i], decay), __fmul_rn(scale, u[i]));
}

// x [n] -> partials [gridDim.x]: block k sums the squares of chunk k.
__global__ void chunkSquares(double *partials, const float *x, int64_t n) {
  const int64_t begin = int64_t(blockIdx.x) * kChunk, left = n - begin;
  const double sum = sumSquares(x + begin, left < kChunk ? left : kChunk);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

// partials [chunks] -> *norm = float(sqrt(their sum in chunk order)) + 1e-7,
// the host's ||G||_F + 1e-7. One thread.
__global__ void frobeniusNorm(float *norm, const double *partials,
                              int64_t chunks) {
  double s = 0.0;
  for (int64_t k = 0; k < chunks; ++k)
    s += partials[k];
  *norm = __fadd_rn(float(sqrt(s)), 1e-7f);
}

// x [rows, cols] -> X [n, m] = x / *norm: x itself when wide (n = rows, m =
// cols), xᵀ when tall (x is [m, n]).
__global__ void normalize(float *X, const float *x, const float *norm,
                          int64_t n, int64_t m, bool tall) {
  const int64_t e = element();
  if (e >= n * m)
    return;
  const int64_t i = e / m, j = e % m;
  X[e] = __fdiv_rn(tall ? x[j * n + i] : x[e], *norm);
}

// y, x [n]: y = alpha * x + beta * y.
__global__ void axpby(float *y, const float *x, float alpha, float beta,
                      int64_t n) {
  const int64_t i = element();
  if (i >= n)
    return;
  y[i] = __fadd_rn(__fmul_rn(alpha, x[i]), __fmul_rn(beta, y[i]));
}

// X [n, m] -> x [m, n] = Xᵀ.
__global__ void transposeInto(float *x, const float *X, int64_t n, int64_t m) {
  const int64_t e = element();
  if (e >= n * m)
    return;
  const int64_t r = e / n, j = e % n;
  x[e] = X[j * m + r];
}

/// bytes rounded up to a multiple of 256: the scratch arrays' alignment,
/// which cuBLASLt's fastest algorithms want.
size_t padded(size_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace

void lap::cuda::accumulate(float *acc, const float *g, float scale, int64_t n,
                           bool first) {
  if (n <= 0)
    return;
  accumulateKernel<<<blocksFor(n), kBlock, 0, stream()>>>(acc, g, scale, n,
                                                          first);
  checkLaunch("accumulate");
}

void lap::cuda::squaredNorms(const float *x, const UpdateSpan *spans,
                             int64_t count, double *out) {
  if (count <= 0)
    return;
  spanSquares<<<unsigned(count), kBlock, 0, stream()>>>(out, x, spans);
  checkLaunch("squaredNorms");
}

void lap::cuda::scale(float *x, const UpdateSpan *spans, int64_t count,
                      float coef) {
  if (count <= 0)
    return;
  scaleSpans<<<unsigned(count), kBlock, 0, stream()>>>(x, spans, coef);
  checkLaunch("scale");
}

void lap::cuda::adamw(float *params, const float *grads, float *m, float *v,
                      const UpdateSpan *spans, int64_t count,
                      const AdamWScalars &s) {
  if (count <= 0)
    return;
  adamwKernel<<<unsigned(count), kBlock, 0, stream()>>>(params, grads, m, v,
                                                        spans, s);
  checkLaunch("adamw");
}

void lap::cuda::muonMomentum(float *buf, const float *g, float *u, int64_t n,
                             float momentum, float weight, bool nesterov) {
  if (n <= 0)
    return;
  muonMomentumKernel<<<blocksFor(n), kBlock, 0, stream()>>>(
      buf, g, u, n, momentum, weight, nesterov);
  checkLaunch("muonMomentum");
}

void lap::cuda::orthogonalize(float *x, int64_t rows, int64_t cols,
                              int64_t steps, lap_matmul precision) {
  if (rows <= 0 || cols <= 0)
    return;
  const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
  const bool tall = rows > cols;
  // X is n x m with n <= m, so A = X Xᵀ is the smaller Gram matrix.
  const int64_t n = tall ? cols : rows, m = tall ? rows : cols;
  const int64_t chunks = (n * m + kChunk - 1) / kChunk;
  // Scratch: the norm's partials and the norm, then X, Y [n, m] and A, P
  // [n, n], each aligned.
  const size_t head = padded(chunks * sizeof(double) + sizeof(float));
  const size_t matrix = padded(n * m * sizeof(float));
  const size_t gram = padded(n * n * sizeof(float));
  char *base =
      static_cast<char *>(scratch(kNewtonSchulz, head + 2 * matrix + 2 * gram));
  if (!base)
    return;
  double *partials = reinterpret_cast<double *>(base);
  float *norm = reinterpret_cast<float *>(base + chunks * sizeof(double));
  float *X = reinterpret_cast<float *>(base + head);
  float *Y = reinterpret_cast<float *>(base + head + matrix);
  float *A = reinterpret_cast<float *>(base + head + 2 * matrix);
  float *P = reinterpret_cast<float *>(base + head + 2 * matrix + gram);

  // The norm stays on the device: no host synchronisation.
  chunkSquares<<<unsigned(chunks), kBlock, 0, stream()>>>(partials, x, n * m);
  checkLaunch("orthogonalize (squares)");
  frobeniusNorm<<<1, 1, 0, stream()>>>(norm, partials, chunks);
  checkLaunch("orthogonalize (norm)");
  normalize<<<blocksFor(n * m), kBlock, 0, stream()>>>(X, x, norm, n, m, tall);
  checkLaunch("orthogonalize (normalize)");
  for (int64_t s = 0; s < steps; ++s) {
    // A = X Xᵀ; P = b A + c A A; Y = a X + P X. The GEMMs have no alpha:
    // each writes the product alone (beta 0), a kernel combines.
    gemm(precision, 'N', 'T', n, n, m, X, m, X, m, 0.0f, A, n);
    gemm(precision, 'N', 'N', n, n, n, A, n, A, n, 0.0f, P, n);
    axpby<<<blocksFor(n * n), kBlock, 0, stream()>>>(P, A, b, c, n * n);
    checkLaunch("orthogonalize (polynomial)");
    gemm(precision, 'N', 'N', n, m, n, P, n, X, m, 0.0f, Y, m);
    axpby<<<blocksFor(n * m), kBlock, 0, stream()>>>(Y, X, a, 1.0f, n * m);
    checkLaunch("orthogonalize (step)");
    std::swap(X, Y);
  }
  if (tall) {
    transposeInto<<<blocksFor(n * m), kBlock, 0, stream()>>>(x, X, n, m);
    checkLaunch("orthogonalize (transpose)");
  } else {
    check(cudaMemcpyAsync(x, X, size_t(n * m) * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream()),
          "cudaMemcpyAsync");
  }
}

void lap::cuda::applyUpdate(float *params, const float *u, int64_t n,
                            float decay, float scale) {
  if (n <= 0)
    return;
  applyUpdateKernel<<<blocksFor(n), kBlock, 0, stream()>>>(params, u, n, decay,
                                                           scale);
  checkLaunch("applyUpdate");
}
