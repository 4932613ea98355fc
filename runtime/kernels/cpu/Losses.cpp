//===- Losses.cpp - cross-entropy and row losses over logits ----*- C++ -*-===//
//
// Rows of logits can be wide (vocabularies of 8K-64K). A cross-entropy row
// maps its logits (softcap) and takes their exponentials once, into
// buffers of the row's width that its loss and gradient then read; a row
// loss's logsumexp is one pass over memory: an online softmax by blocks
// that stay in L1 (the block's max first, then its exponentials against
// the running max). exp and tanh are inline polynomials (FastMath.h) so the
// element loops vectorise. Row results are summed in row order, so the losses
// do not depend on the thread count. The lm_head's cross-entropy also comes
// fused with its linear layer, forward and backward, a chunk of rows at a time
// (no [n, V] logits in memory).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/Rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

using namespace lap::cpu;

namespace {

/// The logits a loss takes its softmax of: l, cap tanh(l / cap) or l / T.
/// Each is increasing, so the max of the mapped row is the mapped max.
struct Identity {
  float operator()(float l) const { return l; }
  float slope(float) const { return 1.0f; }
};
struct Softcap {
  float cap, invCap;
  float operator()(float l) const { return cap * tanhApprox(l * invCap); }
  /// d z / dl of z = cap tanh(l / cap), from z: 1 - tanh^2.
  float slope(float z) const {
    float th = z * invCap;
    return 1.0f - th * th;
  }
};
struct Scaled {
  float scale;
  float operator()(float l) const { return l * scale; }
};

/// max of a[0, len). LLVM 19 vectorises no float max reduction without
/// -ffast-math, so explicit lanes (four AVX-512 registers) stand in for it.
float blockMax(const float *__restrict a, int64_t len) {
  constexpr int64_t kLanes = 64;
  float lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l)
    lanes[l] = -std::numeric_limits<float>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] = a[j + l] > lanes[l] ? a[j + l] : lanes[l];
  for (; j < len; ++j)
    lanes[0] = a[j] > lanes[0] ? a[j] : lanes[0];
  float m = lanes[0];
  for (int64_t l = 1; l < kLanes; ++l)
    m = lanes[l] > m ? lanes[l] : m;
  return m;
}

/// One pass over a row: the logsumexp of z = map(l).
template <typename Map>
float rowLogSumExp(const float *__restrict l, int64_t V, Map map) {
  constexpr int64_t kBlock = 1024;
  float m = -std::numeric_limits<float>::infinity();
  double s = 0.0;
  for (int64_t b0 = 0; b0 < V; b0 += kBlock) {
    const float *__restrict lb = l + b0;
    int64_t len = std::min(kBlock, V - b0);
    float bm = map(blockMax(lb, len));
    if (bm > m) {
      s *= std::exp(double(m) - double(bm));
      m = bm;
    }
    float bs = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
    for (int64_t j = 0; j < len; ++j)
      bs += expApprox(map(lb[j]) - m);
    s += bs;
  }
  return float(double(m) + std::log(s));
}

/// Elements of a parallel chunk of loss rows: twice the default, since a
/// row's softmax costs several passes over it.
constexpr int64_t kLossRowElements = int64_t(1) << 15;

/// Rows that count: target -1 is ignored, and so (defensively) is any other
/// target outside [0, V), which the runtime rejects before a step.
bool counted(int32_t target, int64_t V) { return target >= 0 && target < V; }

/// A cross-entropy row's softmax: z = map(l) and e = exp(z - max z), kept
/// in buffers of the row's width, so that the loss and its gradient take
/// no further exp or tanh (rowLogSumExp's one pass would leave the gradient
/// to compute both again).
struct Softmax {
  float lse;   // logsumexp of z
  float inv;   // 1 / sum e: softmax(z) = e inv
  double sumZ; // sum of z (for label smoothing)
};

/// Fills z [V] (which may be l itself) and e [V] for row l.
template <typename Map>
Softmax softmaxRow(float *z, float *__restrict e, const float *l, int64_t V,
                   Map map) {
#pragma clang loop vectorize(assume_safety)
  for (int64_t j = 0; j < V; ++j)
    z[j] = map(l[j]);
  const float m = blockMax(z, V);
  // Block sums in fp32, added in double, as rowLogSumExp does.
  constexpr int64_t kBlock = 1024;
  double s = 0.0, sumZ = 0.0;
  for (int64_t b0 = 0; b0 < V; b0 += kBlock) {
    const int64_t len = std::min(kBlock, V - b0);
    float bs = 0.0f, bz = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
    for (int64_t j = b0; j < b0 + len; ++j) {
      e[j] = expApprox(z[j] - m);
      bs += e[j];
      bz += z[j];
    }
    s += bs;
    sumZ += bz;
  }
  return {float(double(m) + std::log(s)), float(1.0 / s), sumZ};
}

/// A row's loss from its softmax, -sum_k q_k log p_k with
/// q = (1 - s) onehot + s / V.
double crossEntropyRowLoss(const float *z, const Softmax &sm, int32_t target,
                           int64_t V, float smoothing) {
  return double(sm.lse) - (1.0 - smoothing) * z[target] -
         smoothing / double(V) * sm.sumZ;
}

/// d [V] = g (softmax(z) - q) dz/dl for counted target t, from the row's
/// softmax. d may be z itself (in place).
template <typename Map>
void crossEntropyRowGrad(float *d, const float *z, const float *__restrict e,
                         const Softmax &sm, int32_t t, int64_t V, float g,
                         float smoothing, Map map) {
  const float uniform = smoothing / float(V), own = map.slope(z[t]);
  // In place, d[j] is written after z[j] is read and nothing else of the
  // row: safe to vectorise (the alias check would otherwise fall back to
  // scalar code when d == z).
#pragma clang loop vectorize(assume_safety)
  for (int64_t j = 0; j < V; ++j)
    d[j] = g * (e[j] * sm.inv - uniform) * map.slope(z[j]);
  d[t] -= g * (1.0f - smoothing) * own;
}

int64_t countedRows(const int32_t *targets, int64_t n, int64_t V) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += counted(targets[i], V);
  return count;
}

/// The kernels on logits of Element (fp32, or a bf16 model's bf16: each
/// row widened, its gradient rounded once).
template <typename Map, typename Element>
void crossEntropyForward(float *loss, const Element *logits,
                         const int32_t *targets, int64_t n, int64_t V,
                         float smoothing, Map map) {
  std::vector<double> rowLoss(n, 0.0);
  parallelFor(
      n, rowGrain(V, kLossRowElements), [&](int64_t begin, int64_t end) {
        std::vector<float> widened = rowBuffers<Element>(1, V), z(V), e(V);
        for (int64_t i = begin; i < end; ++i)
          if (counted(targets[i], V)) {
            const float *row = fp32Row(logits, i, V, widened.data());
            const Softmax sm = softmaxRow(z.data(), e.data(), row, V, map);
            rowLoss[i] =
                crossEntropyRowLoss(z.data(), sm, targets[i], V, smoothing);
          }
      });
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i)
    total += rowLoss[i];
  int64_t count = countedRows(targets, n, V);
  *loss = count ? float(total / double(count)) : 0.0f;
}

template <typename Map, typename Element>
void crossEntropyBackward(Element *dlogits, float dloss, const Element *logits,
                          const int32_t *targets, int64_t n, int64_t V,
                          float smoothing, Map map) {
  int64_t count = countedRows(targets, n, V);
  float g = count ? dloss / float(count) : 0.0f;
  parallelFor(
      n, rowGrain(V, kLossRowElements), [&](int64_t begin, int64_t end) {
        std::vector<float> widened = rowBuffers<Element>(1, V), z(V), e(V);
        for (int64_t i = begin; i < end; ++i) {
          if (!counted(targets[i], V)) {
            std::memset(dlogits + i * V, 0, V * sizeof(Element));
            continue;
          }
          // The gradient is made in place of the widened row (or, at fp32, of
          // dlogits' row, which may be the logits' own: read before, into z).
          const float *row = fp32Row(logits, i, V, widened.data());
          const Softmax sm = softmaxRow(z.data(), e.data(), row, V, map);
          float *d = resultRow(dlogits, i, V, widened.data());
          crossEntropyRowGrad(d, z.data(), e.data(), sm, targets[i], V, g,
                              smoothing, map);
          storeRow(dlogits, i, V, d);
        }
      });
}

/// The rows of logits computed at a time by the fused lm_head and
/// cross-entropy: 16 MiB of them (rows unaliasedLd() apart), kept between
/// calls (fresh pages would fault on every call otherwise).
constexpr int64_t kChunkFloats = int64_t(1) << 22;

/// This thread's buffer `Slot` of at least `floats` (the logits chunk, a
/// bf16 kernel's fp32 dx and dw, a row's exponentials), kept between
/// calls.
template <int Slot> float *buffer(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (int64_t(buffer.size()) < floats)
    buffer.resize(size_t(floats));
  return buffer.data();
}

/// By chunks of rows: logits = x W^T, each row's loss and (in place) its
/// gradient, then dx = dlogits W and dW += dlogits^T x. Row losses are
/// summed in row order as in crossEntropyForward, so the loss is the
/// unfused one bit for bit. The GEMMs read w as wOp and x's rows [r0, r0 +
/// m) as xRows(r0, m) (operand(): each rounded once), dlogits at
/// `precision`; dx [n, C] and dw [V, C] are fp32.
template <typename Map, typename XRows>
void linearCrossEntropy(float *loss, float *dx, float *dw, float dloss,
                        XRows xRows, Matrix wOp, const int32_t *targets,
                        int64_t n, int64_t C, int64_t V, float smoothing,
                        lap_matmul precision, Map map) {
  const int64_t count = countedRows(targets, n, V);
  const float g = count ? dloss / float(count) : 0.0f;
  const int64_t rows = std::clamp<int64_t>(
      kChunkFloats / std::max<int64_t>(V, 1), 1, std::max<int64_t>(n, 1));
  const int64_t ld = unaliasedLd(V);
  float *logits = buffer<0>(rows * ld);
  std::vector<double> rowLoss(static_cast<size_t>(rows));
  double total = 0.0;
  if (n == 0 && dw)
    std::fill(dw, dw + V * C, 0.0f);
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    const int64_t m = std::min(rows, n - r0);
    const Matrix xc = xRows(r0, m);
    const int32_t *tc = targets + r0;
    gemm('N', 'T', m, V, C, xc, wOp, 0.0f, logits, ld);
    parallelFor(
        m, rowGrain(V, kLossRowElements), [&](int64_t begin, int64_t end) {
          float *e = buffer<3>(V); // this thread's exponentials
          for (int64_t i = begin; i < end; ++i) {
            float *row = logits + i * ld; // z, then the gradient, in place
            rowLoss[size_t(i)] = 0.0;
            if (!counted(tc[i], V)) {
              std::memset(row, 0, V * sizeof(float));
              continue;
            }
            const Softmax sm = softmaxRow(row, e, row, V, map);
            rowLoss[size_t(i)] =
                crossEntropyRowLoss(row, sm, tc[i], V, smoothing);
            crossEntropyRowGrad(row, row, e, sm, tc[i], V, g, smoothing, map);
          }
        });
    for (int64_t i = 0; i < m; ++i)
      total += rowLoss[size_t(i)];
    const Matrix dlogits =
        dx || dw ? operand(precision, logits, m, V, ld, 2) : Matrix{};
    if (dx)
      gemm('N', 'N', m, C, V, dlogits, wOp, 0.0f, dx + r0 * C, C);
    if (dw)
      gemm('T', 'N', V, C, m, dlogits, xc, r0 == 0 ? 0.0f : 1.0f, dw, C);
  }
  *loss = count ? float(total / double(count)) : 0.0f;
}

/// The loss's logit map: softcap c tanh(l / c) when c > 0, else l.
template <typename Body> void withLogitMap(float softcap, Body body) {
  if (softcap > 0.0f)
    body(Softcap{softcap, 1.0f / softcap});
  else
    body(Identity{});
}

/// log(1 + exp(-|l|)) + max(l, 0) - l t: BCE of sigmoid(l) against t,
/// without overflow for large |l|.
double bceWithLogits(float l, float t) {
  return std::log1p(std::exp(-double(std::fabs(l)))) +
         std::max(double(l), 0.0) - double(l) * double(t);
}

} // namespace

extern "C" void lap_cpu_cross_entropy_forward(float *loss, const float *logits,
                                              const int32_t *targets, int64_t n,
                                              int64_t V, float label_smoothing,
                                              float softcap) {
  withLogitMap(softcap, [&](auto map) {
    crossEntropyForward(loss, logits, targets, n, V, label_smoothing, map);
  });
}

extern "C" void
lap_cpu_cross_entropy_backward(float *dlogits, const float *dloss,
                               const float *logits, const int32_t *targets,
                               int64_t n, int64_t V, float label_smoothing,
                               float softcap) {
  withLogitMap(softcap, [&](auto map) {
    crossEntropyBackward(dlogits, *dloss, logits, targets, n, V,
                         label_smoothing, map);
  });
}

extern "C" void
lap_cpu_cross_entropy_forward_bf16(float *loss, const lap_bf16 *logits,
                                   const int32_t *targets, int64_t n, int64_t V,
                                   float label_smoothing, float softcap) {
  withLogitMap(softcap, [&](auto map) {
    crossEntropyForward(loss, logits, targets, n, V, label_smoothing, map);
  });
}

extern "C" void lap_cpu_cross_entropy_backward_bf16(
    lap_bf16 *dlogits, const float *dloss, const lap_bf16 *logits,
    const int32_t *targets, int64_t n, int64_t V, float label_smoothing,
    float softcap) {
  withLogitMap(softcap, [&](auto map) {
    crossEntropyBackward(dlogits, *dloss, logits, targets, n, V,
                         label_smoothing, map);
  });
}

extern "C" void lap_cpu_linear_cross_entropy(
    float *loss, float *dx, float *dw, const float *dloss, const float *x,
    const float *w, const int32_t *targets, int64_t n, int64_t C, int64_t V,
    float label_smoothing, float softcap, lap_matmul precision) {
  auto xRows = [&](int64_t r0, int64_t m) {
    return operand(precision, x + r0 * C, m, C, C, 1);
  };
  withLogitMap(softcap, [&](auto map) {
    linearCrossEntropy(loss, dx, dw, *dloss, xRows,
                       operand(precision, w, V, C, C, 0), targets, n, C, V,
                       label_smoothing, precision, map);
  });
}

extern "C" void lap_cpu_linear_cross_entropy_bf16(
    float *loss, lap_bf16 *dx, lap_bf16 *dw, const float *dloss,
    const lap_bf16 *x, const lap_bf16 *w, const int32_t *targets, int64_t n,
    int64_t C, int64_t V, float label_smoothing, float softcap) {
  auto xRows = [&](int64_t r0, int64_t m) {
    return operand(x + r0 * C, m, C, C, 1);
  };
  float *dx32 = dx ? buffer<1>(n * C) : nullptr;
  float *dw32 = dw ? buffer<2>(V * C) : nullptr;
  withLogitMap(softcap, [&](auto map) {
    linearCrossEntropy(loss, dx32, dw32, *dloss, xRows, operand(w, V, C, C, 0),
                       targets, n, C, V, label_smoothing, LAP_MATMUL_BF16, map);
  });
  if (dx)
    roundToBf16(dx, dx32, n, C);
  if (dw)
    roundToBf16(dw, dw32, V, C);
}

// Kinds 0 and 2 are the same loss at temperature 1 and T: with z = l / T,
// -sum_k t_k log_softmax(z)_k = sum_k t_k (lse(z) - z_k).
extern "C" void lap_cpu_row_loss_forward(float *loss, const float *logits,
                                         const float *targets, int64_t n,
                                         int64_t K, lap_row_loss kind,
                                         float temperature) {
  float scale = kind == LAP_ROW_LOSS_DINO ? 1.0f / temperature : 1.0f;
  std::vector<double> rowLoss(n, 0.0);
  parallelFor(n, rowGrain(K, kLossRowElements),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  const float *__restrict l = logits + i * K;
                  const float *__restrict t = targets + i * K;
                  double acc = 0.0;
                  if (kind == LAP_ROW_LOSS_BCE_WITH_LOGITS) {
                    for (int64_t k = 0; k < K; ++k)
                      acc += bceWithLogits(l[k], t[k]);
                  } else {
                    // lse >= z_k: the terms are not negative, so nothing
                    // cancels (as lse sum t - sum t z would at low
                    // temperatures).
                    float lse = rowLogSumExp(l, K, Scaled{scale}), sum = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
                    for (int64_t k = 0; k < K; ++k)
                      sum += t[k] * (lse - l[k] * scale);
                    acc = sum;
                  }
                  rowLoss[i] = acc;
                }
              });
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i)
    total += rowLoss[i];
  double denom =
      kind == LAP_ROW_LOSS_BCE_WITH_LOGITS ? double(n) * double(K) : double(n);
  *loss = denom > 0.0 ? float(total / denom) : 0.0f;
}

// The gradients of the forward above: (sumT softmax(z) - t) / (n T) for
// soft cross-entropy and DINO, which is the documented (softmax - t) / (n T)
// when the targets are distributions (sumT = 1); (sigmoid(l) - t) / (n K) for
// BCE.
extern "C" void lap_cpu_row_loss_backward(float *dlogits, const float *dloss,
                                          const float *logits,
                                          const float *targets, int64_t n,
                                          int64_t K, lap_row_loss kind,
                                          float temperature) {
  float scale = kind == LAP_ROW_LOSS_DINO ? 1.0f / temperature : 1.0f;
  double denom =
      kind == LAP_ROW_LOSS_BCE_WITH_LOGITS ? double(n) * double(K) : double(n);
  float g = denom > 0.0 ? float(double(*dloss) / denom) : 0.0f;
  parallelFor(n, rowGrain(K, kLossRowElements),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  const float *__restrict l = logits + i * K;
                  const float *__restrict t = targets + i * K;
                  float *__restrict d = dlogits + i * K;
                  if (kind == LAP_ROW_LOSS_BCE_WITH_LOGITS) {
                    for (int64_t k = 0; k < K; ++k)
                      d[k] = g * (1.0f / (1.0f + expApprox(-l[k])) - t[k]);
                    continue;
                  }
                  float lse = rowLogSumExp(l, K, Scaled{scale});
                  float sumT = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
                  for (int64_t k = 0; k < K; ++k)
                    sumT += t[k];
                  float gs = g * scale;
                  for (int64_t k = 0; k < K; ++k)
                    d[k] = gs * (sumT * expApprox(l[k] * scale - lse) - t[k]);
                }
              });
}
