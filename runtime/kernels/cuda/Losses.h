//===- Losses.h - cross-entropy and row losses over logits ------*- CUDA -*-===//
//
// One block per row of logits: each thread keeps an online softmax (running
// max and sum of exponentials) over its strided elements, and the block
// combines them with warp shuffles and one shared-memory step. Losses are
// means over rows: each row's loss goes to scratch, and one block adds them
// in a fixed order (no float atomics), so a loss is the same on every run.
// The lm_head's cross-entropy comes fused with its linear layer, a chunk of
// logits rows at a time, as on the CPU (Losses.cpp). Kernels in
// DeviceCode.h's CUDA, plans over a Launcher (Launcher.h): the emulator runs
// this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_LOSSES_H
#define LAP_RUNTIME_KERNELS_CUDA_LOSSES_H

#include "runtime/kernels/KernelEnums.h"
#include "runtime/kernels/cuda/ColumnSums.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/ScratchSlots.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lap::cuda::losses {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

/// Threads of the single block that counts targets and adds row losses.
constexpr int kReduceThreads = 1024;

/// Threads per row: a warp for narrow rows, up to 512 for wide ones.
inline int rowThreads(int64_t width) {
  return int(std::clamp<int64_t>((width + 31) / 32 * 32, 32, 512));
}

/// The running max m of a set of values z and the sum s of exp(z - m).
struct MaxSum {
  float m, s;
};

__device__ void push(MaxSum &a, float z) {
  if (z > a.m) {
    a.s = a.s * expf(a.m - z) + 1.0f;
    a.m = z;
  } else {
    a.s += expf(z - a.m);
  }
}

struct Add {
  template <typename T> __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

/// Merges two sets' MaxSums (symmetric, so every lane of a butterfly gets
/// the same bits).
struct Merge {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
      return {m, 0.0f};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
  }
};

__device__ float shuffle(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ double shuffle(double v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ long long shuffle(long long v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ MaxSum shuffle(MaxSum v, int mask) {
  return {shuffle(v.m, mask), shuffle(v.s, mask)};
}

/// The reduction of v over the block (blockDim.x a multiple of 32, at most
/// 1024), returned to every thread. The order is fixed: butterflies within
/// warps, then across the warps' results.
template <typename T, typename Op>
__device__ T blockReduce(T v, T identity, Op op) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int mask = 16; mask > 0; mask /= 2)
    v = op(v, shuffle(v, mask));
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x / 32) ? partial[lane] : identity;
  for (int mask = 16; mask > 0; mask /= 2)
    v = op(v, shuffle(v, mask));
  // partial is reused by the next reduction.
  __syncthreads();
  return v;
}

/// *count = rows whose target is in [0, V) (-1 marks an ignored row; any
/// other target outside is ignored too, as on the CPU). One block.
__global__ void countTargetsKernel(long long *count, const int32_t *targets,
                                   int64_t n, int64_t V) {
  long long c = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    c += targets[i] >= 0 && targets[i] < V;
  c = blockReduce(c, 0LL, Add{});
  if (threadIdx.x == 0)
    *count = c;
}

/// *loss = sum of rowLoss [n] / (*count where given, else denom), 0 when
/// that is 0. One block.
__global__ void meanLossKernel(float *loss, const double *rowLoss, int64_t n,
                               const long long *count, double denom) {
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    s += rowLoss[i];
  s = blockReduce(s, 0.0, Add{});
  if (threadIdx.x == 0) {
    double d = count ? double(*count) : denom;
    *loss = d > 0.0 ? float(s / d) : 0.0f;
  }
}

/// One block per row of logits [rows, V], targets [rows]. Softmax over
/// z = l, or cap tanh(l / cap) when Capped. rowLoss [rows] (nullable) gets
/// -sum_k q_k log softmax(z)_k with q = (1 - s) onehot + s / V, 0 on rows
/// not counted. dlogits [rows, V] (nullable) gets *dloss (softmax - q) /
/// *count, times the cap's slope 1 - tanh^2, and 0 on rows not counted; it
/// may be logits itself: every thread reads its elements (and the target's)
/// before the reductions' barriers and writes them after.
/// In, Out: the logits' and their gradient's types (fp32, or a bf16
/// model's bf16; fp32 logits with bf16 gradients for the lm_head's GEMMs),
/// computed in fp32.
template <bool Capped, typename In, typename Out>
__global__ void
crossEntropyRowsKernel(double *rowLoss, Out *dlogits, const In *logits,
                       const int32_t *targets, int64_t V, float smoothing,
                       float cap, const float *dloss, const long long *count) {
  const int64_t i = blockIdx.x;
  const In *row = logits + i * V;
  const int32_t t = targets[i];
  const float invCap = Capped ? 1.0f / cap : 0.0f;
  if (t < 0 || t >= V) {
    if (rowLoss && threadIdx.x == 0)
      rowLoss[i] = 0.0;
    if (dlogits)
      for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
        store(dlogits[i * V + j], 0.0f);
    return;
  }
  const float own = Capped ? cap * tanhf(load(row[t]) * invCap) : load(row[t]);
  MaxSum ms{-INFINITY, 0.0f};
  float sumZ = 0.0f;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    float z = Capped ? cap * tanhf(load(row[j]) * invCap) : load(row[j]);
    push(ms, z);
    sumZ += z;
  }
  ms = blockReduce(ms, MaxSum{-INFINITY, 0.0f}, Merge{});
  sumZ = blockReduce(sumZ, 0.0f, Add{});
  const float lse = ms.m + logf(ms.s);
  if (rowLoss && threadIdx.x == 0)
    rowLoss[i] =
        double(lse) - (1.0 - smoothing) * own - smoothing / double(V) * sumZ;
  if (!dlogits)
    return;
  const float g = *count ? *dloss / float(*count) : 0.0f;
  const float uniform = smoothing / float(V);
  Out *d = dlogits + i * V;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    float v;
    if (Capped) {
      float th = tanhf(load(row[j]) * invCap), slope = 1.0f - th * th;
      v = g * (expf(cap * th - lse) - uniform) * slope;
      if (j == t)
        v -= g * (1.0f - smoothing) * slope;
    } else {
      v = g * (expf(load(row[j]) - lse) - uniform);
      if (j == t)
        v -= g * (1.0f - smoothing);
    }
    store(d[j], v);
  }
}

/// One block per row of logits, targets [n, K]: rowLoss [n] as
/// lap_cpu_row_loss_forward's, softmax over z = l * scale.
__global__ void rowLosses(double *rowLoss, const float *logits,
                          const float *targets, int64_t K, bool bce,
                          float scale) {
  const int64_t i = blockIdx.x;
  const float *l = logits + i * K, *t = targets + i * K;
  float acc = 0.0f;
  if (bce) {
    // log(1 + exp(-|l|)) + max(l, 0) - l t: BCE of sigmoid(l) against t
    // without overflow for large |l|.
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
      acc += log1pf(expf(-fabsf(l[k]))) + fmaxf(l[k], 0.0f) - l[k] * t[k];
  } else {
    MaxSum ms{-INFINITY, 0.0f};
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
      push(ms, l[k] * scale);
    ms = blockReduce(ms, MaxSum{-INFINITY, 0.0f}, Merge{});
    const float lse = ms.m + logf(ms.s);
    // lse >= z_k: no term is negative, so nothing cancels.
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
      acc += t[k] * (lse - l[k] * scale);
  }
  acc = blockReduce(acc, 0.0f, Add{});
  if (threadIdx.x == 0)
    rowLoss[i] = acc;
}

/// Soft cross-entropy and DINO gradients, one block per row of logits,
/// targets [n, K]: dlogits = *dloss / (n T) (sum(t) softmax(z) - t), z = l /
/// T (scale = 1 / T; 1 for soft cross-entropy).
__global__ void softRowGrads(float *dlogits, const float *dloss,
                             const float *logits, const float *targets,
                             int64_t K, float scale, double denom) {
  const int64_t i = blockIdx.x;
  const float *l = logits + i * K, *t = targets + i * K;
  MaxSum ms{-INFINITY, 0.0f};
  float sumT = 0.0f;
  for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
    push(ms, l[k] * scale);
    sumT += t[k];
  }
  ms = blockReduce(ms, MaxSum{-INFINITY, 0.0f}, Merge{});
  sumT = blockReduce(sumT, 0.0f, Add{});
  const float lse = ms.m + logf(ms.s);
  const float gs = float(double(*dloss) / denom) * scale;
  for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
    dlogits[i * K + k] = gs * (sumT * expf(l[k] * scale - lse) - t[k]);
}

/// BCE gradients of m elements: *dloss / (n K) (sigmoid(l) - t).
__global__ void bceGrads(float *dlogits, const float *dloss,
                         const float *logits, const float *targets, int64_t m,
                         double denom) {
  int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= m)
    return;
  const float g = float(double(*dloss) / denom);
  dlogits[e] = g * (1.0f / (1.0f + expf(-logits[e])) - targets[e]);
}

/// Threads of bceGrads' blocks.
constexpr int kElementThreads = 256;

/// Scratch of a mean over n rows: the count of rows that count, then one
/// double per row.
struct RowPartials {
  long long *count;
  double *rows;
};

template <typename Launcher>
bool rowPartials(const Launcher &device, RowPartials &p, int64_t n) {
  auto *base = deviceScratch<double>(device, kReductionPartials, n + 1);
  if (!base)
    return false;
  p = {reinterpret_cast<long long *>(base), base + 1};
  return true;
}

template <typename Launcher>
void countTargets(const Launcher &device, long long *count,
                  const int32_t *targets, int64_t n, int64_t V) {
  device.launch(countTargetsKernel, 1, kReduceThreads, 0, "countTargets", count,
                targets, n, V);
}

template <typename Launcher>
void meanLoss(const Launcher &device, float *loss, const double *rowLoss,
              int64_t n, const long long *count, double denom) {
  device.launch(meanLossKernel, 1, kReduceThreads, 0, "meanLoss", loss, rowLoss,
                n, count, denom);
}

template <typename Launcher, typename In, typename Out>
void crossEntropyRows(const Launcher &device, double *rowLoss, Out *dlogits,
                      const In *logits, const int32_t *targets, int64_t rows,
                      int64_t V, float smoothing, float softcap,
                      const float *dloss, const long long *count) {
  device.launch(softcap > 0.0f ? crossEntropyRowsKernel<true, In, Out>
                               : crossEntropyRowsKernel<false, In, Out>,
                rows, rowThreads(V), 0, "crossEntropyRows", rowLoss, dlogits,
                logits, targets, V, smoothing, softcap, dloss, count);
}

/// lap_cuda_cross_entropy_forward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void crossEntropyForward(const Launcher &device, float *loss,
                         const Element *logits, const int32_t *targets,
                         int64_t n, int64_t V, float smoothing, float softcap) {
  RowPartials p;
  if (!rowPartials(device, p, n))
    return;
  countTargets(device, p.count, targets, n, V);
  crossEntropyRows(device, p.rows, static_cast<Element *>(nullptr), logits,
                   targets, n, V, smoothing, softcap, nullptr, p.count);
  meanLoss(device, loss, p.rows, n, p.count, 0.0);
}

/// lap_cuda_cross_entropy_backward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void crossEntropyBackward(const Launcher &device, Element *dlogits,
                          const float *dloss, const Element *logits,
                          const int32_t *targets, int64_t n, int64_t V,
                          float smoothing, float softcap) {
  RowPartials p;
  if (n == 0 || V == 0 || !rowPartials(device, p, 0))
    return;
  countTargets(device, p.count, targets, n, V);
  crossEntropyRows(device, nullptr, dlogits, logits, targets, n, V, smoothing,
                   softcap, dloss, p.count);
}

/// Rows of logits linearCrossEntropy makes at a time for n rows of V: as
/// many as the Launcher's chunk holds.
template <typename Launcher>
int64_t chunkRows(const Launcher &device, int64_t n, int64_t V) {
  return std::clamp<int64_t>(device.chunkFloats() / std::max<int64_t>(V, 1), 1,
                             std::max<int64_t>(n, 1));
}

/// lap_cuda_linear_cross_entropy.
template <typename Launcher>
void linearCrossEntropy(const Launcher &device, float *loss, float *dx,
                        float *dw, const float *dloss, const float *x,
                        const float *w, const int32_t *targets, int64_t n,
                        int64_t C, int64_t V, float smoothing, float softcap,
                        lap_matmul precision) {
  RowPartials p;
  if (!rowPartials(device, p, n))
    return;
  countTargets(device, p.count, targets, n, V);
  if (n == 0 && dw)
    device.zero(dw, size_t(V * C) * sizeof(float));
  const int64_t rows = chunkRows(device, n, V);
  float *logits = nullptr;
  if (n > 0) {
    logits = deviceScratch<float>(device, kCrossEntropyChunk,
                                  rows * std::max<int64_t>(V, 1));
    if (!logits)
      return;
  }
  // Without gradients to make, the rows' losses are all there is to do.
  float *dlogits = dx || dw ? logits : nullptr;
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    const int64_t m = std::min(rows, n - r0);
    const float *xc = x + r0 * C;
    // logits [m, V] = x rows [m, C] w^T (w [V, C]); then, in place,
    // dlogits [m, V].
    device.gemm(precision, 'N', 'T', m, V, C, xc, C, w, C, 0.0f, logits, V);
    crossEntropyRows(device, p.rows + r0, dlogits, logits, targets + r0, m, V,
                     smoothing, softcap, dloss, p.count);
    // dx rows [m, C] = dlogits [m, V] w [V, C].
    if (dx)
      device.gemm(precision, 'N', 'N', m, C, V, logits, V, w, C, 0.0f,
                  dx + r0 * C, C);
    // dw [V, C] = sum over chunks of dlogits^T [V, m] x rows [m, C].
    if (dw)
      device.gemm(precision, 'T', 'N', V, C, m, logits, V, xc, C,
                  r0 == 0 ? 0.0f : 1.0f, dw, C);
  }
  meanLoss(device, loss, p.rows, n, p.count, 0.0);
}

/// lap_cuda_linear_cross_entropy_bf16.
template <typename Launcher>
void linearCrossEntropy(const Launcher &device, float *loss, lap_bf16 *dx,
                        lap_bf16 *dw, const float *dloss, const lap_bf16 *x,
                        const lap_bf16 *w, const int32_t *targets, int64_t n,
                        int64_t C, int64_t V, float smoothing, float softcap) {
  RowPartials p;
  if (!rowPartials(device, p, n))
    return;
  countTargets(device, p.count, targets, n, V);
  const int64_t rows = chunkRows(device, n, V);
  // Scratch: the fp32 logits chunk; then, in one allocation, dw [V, C] in
  // fp32 and the chunk's gradient in bf16 [rows, V], the GEMMs' operand.
  const int64_t dwFloats = (V * C + 63) / 64 * 64,
                chunk = rows * std::max<int64_t>(V, 1);
  float *logits = deviceScratch<float>(device, kCrossEntropyChunk, chunk);
  float *dw32 =
      deviceScratch<float>(device, kBf16Result, dwFloats + chunk / 2 + 1);
  if (!logits || !dw32)
    return;
  auto *dlogits = reinterpret_cast<lap_bf16 *>(dw32 + dwFloats);
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    const int64_t m = std::min(rows, n - r0);
    const lap_bf16 *xc = x + r0 * C;
    // logits [m, V] = x rows [m, C] w^T (w [V, C]); then their gradient,
    // rounded to bf16 as it is written, for the GEMMs below.
    device.gemm('N', 'T', m, V, C, xc, C, w, C, 0.0f, logits, V);
    crossEntropyRows(device, p.rows + r0, dx || dw ? dlogits : nullptr, logits,
                     targets + r0, m, V, smoothing, softcap, dloss, p.count);
    if (!dx && !dw)
      continue;
    // dx rows [m, C] = dlogits [m, V] w [V, C], written as bf16.
    if (dx)
      device.gemmToBf16('N', 'N', m, C, V, dlogits, V, w, C, dx + r0 * C);
    // dw [V, C] = sum over chunks of dlogits^T [V, m] x rows [m, C].
    if (dw)
      device.gemm('T', 'N', V, C, m, dlogits, V, xc, C, r0 == 0 ? 0.0f : 1.0f,
                  dw32, C);
  }
  if (dw) {
    if (n == 0)
      device.zero(dw32, size_t(V * C) * sizeof(float));
    columns::roundToBf16(device, dw, dw32, V, C);
  }
  meanLoss(device, loss, p.rows, n, p.count, 0.0);
}

// Soft cross-entropy and DINO are one loss at temperature 1 and T: with
// z = l / T, -sum_k t_k log_softmax(z)_k = sum_k t_k (lse(z) - z_k).

/// lap_cuda_row_loss_forward.
template <typename Launcher>
void rowLossForward(const Launcher &device, float *loss, const float *logits,
                    const float *targets, int64_t n, int64_t K,
                    lap_row_loss kind, float temperature) {
  const bool bce = kind == LAP_ROW_LOSS_BCE_WITH_LOGITS;
  const float scale = kind == LAP_ROW_LOSS_DINO ? 1.0f / temperature : 1.0f;
  RowPartials p;
  if (!rowPartials(device, p, n))
    return;
  device.launch(rowLosses, n, rowThreads(K), 0, "rowLosses", p.rows, logits,
                targets, K, bce, scale);
  meanLoss(device, loss, p.rows, n, nullptr,
           bce ? double(n) * double(K) : double(n));
}

/// lap_cuda_row_loss_backward.
template <typename Launcher>
void rowLossBackward(const Launcher &device, float *dlogits, const float *dloss,
                     const float *logits, const float *targets, int64_t n,
                     int64_t K, lap_row_loss kind, float temperature) {
  if (n == 0 || K == 0)
    return;
  if (kind == LAP_ROW_LOSS_BCE_WITH_LOGITS) {
    device.launch(bceGrads, (n * K + kElementThreads - 1) / kElementThreads,
                  kElementThreads, 0, "bceGrads", dlogits, dloss, logits,
                  targets, n * K, double(n) * double(K));
    return;
  }
  const float scale = kind == LAP_ROW_LOSS_DINO ? 1.0f / temperature : 1.0f;
  device.launch(softRowGrads, n, rowThreads(K), 0, "softRowGrads", dlogits,
                dloss, logits, targets, K, scale, double(n));
}

} // namespace
} // namespace lap::cuda::losses

#endif // LAP_RUNTIME_KERNELS_CUDA_LOSSES_H
