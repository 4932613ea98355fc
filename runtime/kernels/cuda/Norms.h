//===- Norms.h - per-row normalisations and LayerScale ----------*- CUDA -*-===//
//
// One warp per row: a row's sums are warp shuffles, no shared memory or
// barriers. Parameter gradients are column sums over rows (Gemm.h's
// columnSums: fixed row chunks added in an order fixed by the shape, the same
// on every run); the norms' rows save their statistics for them to scratch.
// A bf16 model's norm gradients (`_bf16`) are the same kernels on bf16
// elements, computed in fp32, each result rounded once. Kernels in
// DeviceCode.h's CUDA, plans over a Launcher (Launcher.h): the emulator runs
// this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_NORMS_H
#define LAP_RUNTIME_KERNELS_CUDA_NORMS_H

#include "runtime/kernels/cuda/ColumnSums.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/ScratchSlots.h"

#include <cstdint>
#include <type_traits>

namespace lap::cuda::norms {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

/// The sum over the warp, in every lane (a butterfly: each step adds the
/// same two values in every lane, so all lanes hold the same bits).
__device__ inline float warpSum(float v) {
  for (int mask = 16; mask > 0; mask /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, mask);
  return v;
}

/// The row of this thread's warp (a whole warp shares it, so a warp past
/// the last row returns together).
__device__ inline int64_t warpRow() {
  return (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}

/// Threads per block of the kernels; blocks for one warp per row of n.
constexpr int kThreads = 256;
inline int64_t rowBlocks(int64_t n) {
  return (n * 32 + kThreads - 1) / kThreads;
}

/// x, dy [n, c] -> dx [n, c] of y = (x - mean) rstd * w (w null: 1), and
/// each row's mean and rstd [n] where given. Element: the tensors' type
/// (fp32 or bf16), computed in fp32.
template <typename Element>
__global__ void layerNormRows(Element *dx, float *mean, float *rstd,
                              const Element *dy, const Element *x,
                              const Element *w, int64_t n, int64_t c,
                              float eps) {
  const int64_t i = warpRow();
  if (i >= n)
    return;
  const int lane = threadIdx.x % 32;
  const Element *xi = x + i * c, *dyi = dy + i * c;
  float s = 0.0f;
  for (int64_t j = lane; j < c; j += 32)
    s += load(xi[j]);
  const float m = warpSum(s) / float(c);
  // Centred squares: a second pass, as exact as the CPU's.
  float q = 0.0f;
  for (int64_t j = lane; j < c; j += 32)
    q += (load(xi[j]) - m) * (load(xi[j]) - m);
  const float r = 1.0f / sqrtf(warpSum(q) / float(c) + eps);
  // With g = dy * w and xhat the normalised row:
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
  // g rounded on its own (__fmul_rn): nvcc would otherwise fuse it into
  // the sum here and the difference below, each differently, and leave a
  // rounding error where g - mean(g) is exactly 0 (one column).
  float sumG = 0.0f, sumGX = 0.0f;
  for (int64_t j = lane; j < c; j += 32) {
    float g = w ? __fmul_rn(load(dyi[j]), load(w[j])) : load(dyi[j]);
    sumG += g;
    sumGX += g * (load(xi[j]) - m) * r;
  }
  const float meanG = warpSum(sumG) / float(c);
  const float meanGX = warpSum(sumGX) / float(c);
  for (int64_t j = lane; j < c; j += 32) {
    float xhat = (load(xi[j]) - m) * r;
    float g = w ? __fmul_rn(load(dyi[j]), load(w[j])) : load(dyi[j]);
    store(dx[i * c + j], r * (g - meanG - xhat * meanGX));
  }
  if (mean && lane == 0) {
    mean[i] = m;
    rstd[i] = r;
  }
}

/// x, dy [n, c] -> dx [n, c] (nullable) of y = x r * w, r = 1 /
/// sqrt(mean(x^2) + eps) (w null: 1), and each row's r [n] where given.
/// Element as layerNormRows'.
template <typename Element>
__global__ void rmsNormRows(Element *dx, float *rstd, const Element *dy,
                            const Element *x, const Element *w, int64_t n,
                            int64_t c, float eps) {
  const int64_t i = warpRow();
  if (i >= n)
    return;
  const int lane = threadIdx.x % 32;
  const Element *xi = x + i * c, *dyi = dy + i * c;
  float q = 0.0f;
  for (int64_t j = lane; j < c; j += 32)
    q += load(xi[j]) * load(xi[j]);
  const float r = 1.0f / sqrtf(warpSum(q) / float(c) + eps);
  if (dx) {
    // With g = dy * w: dx = r g - x r^3 mean(g x).
    float sumGX = 0.0f;
    for (int64_t j = lane; j < c; j += 32)
      sumGX += (w ? load(dyi[j]) * load(w[j]) : load(dyi[j])) * load(xi[j]);
    const float k = r * r * r * warpSum(sumGX) / float(c);
    for (int64_t j = lane; j < c; j += 32)
      store(dx[i * c + j], r * (w ? load(dyi[j]) * load(w[j]) : load(dyi[j])) -
                               load(xi[j]) * k);
  }
  if (rstd && lane == 0)
    rstd[i] = r;
}

/// y [n, c] = x / max(||x||, eps) per row.
__global__ void l2NormalizeRows(float *y, const float *x, int64_t n, int64_t c,
                                float eps) {
  const int64_t i = warpRow();
  if (i >= n)
    return;
  const int lane = threadIdx.x % 32;
  const float *xi = x + i * c;
  float s = 0.0f;
  for (int64_t j = lane; j < c; j += 32)
    s += xi[j] * xi[j];
  const float norm = sqrtf(warpSum(s));
  const float inv = 1.0f / (norm < eps ? eps : norm);
  for (int64_t j = lane; j < c; j += 32)
    y[i * c + j] = xi[j] * inv;
}

/// dx [n, c] of y = x / max(||x||, eps): dy / eps where the clamp holds,
/// else dy / ||x|| - x (x . dy) / ||x||^3 (at the tie the gradient goes
/// through the norm, as torch.clamp_min's and the CPU's do).
__global__ void l2NormalizeGrads(float *dx, const float *dy, const float *x,
                                 int64_t n, int64_t c, float eps) {
  const int64_t i = warpRow();
  if (i >= n)
    return;
  const int lane = threadIdx.x % 32;
  const float *xi = x + i * c, *dyi = dy + i * c;
  float xx = 0.0f, xdy = 0.0f;
  for (int64_t j = lane; j < c; j += 32) {
    xx += xi[j] * xi[j];
    xdy += xi[j] * dyi[j];
  }
  const float norm = sqrtf(warpSum(xx));
  xdy = warpSum(xdy);
  if (!(norm >= eps && norm > 0.0f)) {
    const float inv = 1.0f / eps;
    for (int64_t j = lane; j < c; j += 32)
      dx[i * c + j] = dyi[j] * inv;
    return;
  }
  const float inv = 1.0f / norm;
  const float k = xdy * inv * inv * inv;
  for (int64_t j = lane; j < c; j += 32)
    dx[i * c + j] = dyi[j] * inv - xi[j] * k;
}

/// w [k, d] = g[r] v[r] / ||v[r]|| per row r.
__global__ void weightNormRows(float *w, const float *v, const float *g,
                               int64_t k, int64_t d) {
  const int64_t r = warpRow();
  if (r >= k)
    return;
  const int lane = threadIdx.x % 32;
  const float *vr = v + r * d;
  float s = 0.0f;
  for (int64_t j = lane; j < d; j += 32)
    s += vr[j] * vr[j];
  const float scale = g[r] / sqrtf(warpSum(s));
  for (int64_t j = lane; j < d; j += 32)
    w[r * d + j] = vr[j] * scale;
}

/// dg [k] = dw . v / ||v|| and dv [k, d] = g / ||v|| (dw - v (dw . v) /
/// ||v||^2) per row (each nullable).
__global__ void weightNormGrads(float *dv, float *dg, const float *dw,
                                const float *v, const float *g, int64_t k,
                                int64_t d) {
  const int64_t r = warpRow();
  if (r >= k)
    return;
  const int lane = threadIdx.x % 32;
  const float *vr = v + r * d, *dwr = dw + r * d;
  float vv = 0.0f, dwv = 0.0f;
  for (int64_t j = lane; j < d; j += 32) {
    vv += vr[j] * vr[j];
    dwv += dwr[j] * vr[j];
  }
  const float inv = 1.0f / sqrtf(warpSum(vv));
  const float proj = warpSum(dwv) * inv;
  if (dg && lane == 0)
    dg[r] = proj;
  if (!dv)
    return;
  const float s = g[r] * inv, t = proj * inv;
  for (int64_t j = lane; j < d; j += 32)
    dv[r * d + j] = s * (dwr[j] - vr[j] * t);
}

/// dx [n, c] = dy * gamma [c], m = n c elements; Element as
/// layerNormRows'.
template <typename Element>
__global__ void scaleColumns(Element *dx, const Element *dy,
                             const Element *gamma, int64_t m, int64_t c) {
  int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < m)
    store(dx[e], load(dy[e]) * load(gamma[e % c]));
}

/// Device scratch for the column sums' partials, the rows' statistics
/// (stats floats per row) and `extra` floats, allocated together as all
/// are live at once.
template <typename Launcher>
float *normScratch(const Launcher &device, int64_t n, int64_t c, int64_t stats,
                   int64_t extra = 0) {
  return deviceScratch<float>(device, kReductionPartials,
                              columns::columnSumsScratch(n, c) + stats * n +
                                  extra);
}

/// out [c] = column sums that `sum` writes in fp32: into out itself, or
/// for a bf16 out into `fp32` [c], then rounded.
template <typename Launcher, typename Sum>
void columnSumsInto(const Launcher &, float *out, float *, int64_t, Sum sum) {
  sum(out);
}
template <typename Launcher, typename Sum>
void columnSumsInto(const Launcher &device, lap_bf16 *out, float *fp32,
                    int64_t c, Sum sum) {
  sum(fp32);
  columns::roundToBf16(device, out, fp32, 1, c);
}

/// Extra scratch floats for a bf16 kernel's fp32 column sums of c.
template <typename Element> int64_t sumsScratch(int64_t c) {
  return std::is_same_v<Element, float> ? 0 : c;
}

/// lap_cuda_layer_norm_backward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void layerNormBackward(const Launcher &device, Element *dx, Element *dw,
                       Element *db, const Element *dy, const Element *x,
                       const Element *w, int64_t n, int64_t c, float eps) {
  if (c == 0)
    return;
  // [partials | mean [n] | rstd [n] | fp32 sums [c] at bf16]: the
  // statistics only for dw.
  float *partials = nullptr, *mean = nullptr, *rstd = nullptr, *sums = nullptr;
  if (dw || db) {
    const int64_t stats = dw ? 2 : 0;
    partials = normScratch(device, n, c, stats, sumsScratch<Element>(c));
    if (!partials)
      return;
    float *afterPartials = partials + columns::columnSumsScratch(n, c);
    if (dw) {
      mean = afterPartials;
      rstd = mean + n;
    }
    sums = afterPartials + stats * n;
  }
  if (n > 0) {
    device.launch(layerNormRows<Element>, rowBlocks(n), kThreads, 0,
                  "layerNormRows", dx, mean, rstd, dy, x, w, n, c, eps);
  }
  // dw [c] = sum_i dy (x - mean) rstd, db [c] = sum_i dy.
  if (dw)
    columnSumsInto(device, dw, sums, c, [&](float *out) {
      columns::columnSums(device, out, ColumnTerms<Element>{dy, x, mean, rstd},
                          n, c, partials);
    });
  if (db)
    columnSumsInto(device, db, sums, c, [&](float *out) {
      columns::columnSums(device, out, ColumnTerms<Element>{dy}, n, c,
                          partials);
    });
}

/// lap_cuda_rms_norm_backward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void rmsNormBackward(const Launcher &device, Element *dx, Element *dw,
                     const Element *dy, const Element *x, const Element *w,
                     int64_t n, int64_t c, float eps) {
  if (c == 0 || !(dx || dw))
    return;
  // [partials | r [n] | fp32 sums [c] at bf16] for dw.
  float *partials = nullptr, *rstd = nullptr;
  if (dw) {
    partials = normScratch(device, n, c, 1, sumsScratch<Element>(c));
    if (!partials)
      return;
    rstd = partials + columns::columnSumsScratch(n, c);
  }
  if (n > 0) {
    device.launch(rmsNormRows<Element>, rowBlocks(n), kThreads, 0,
                  "rmsNormRows", dx, rstd, dy, x, w, n, c, eps);
  }
  // dw [c] = sum_i dy x r.
  if (dw)
    columnSumsInto(device, dw, rstd + n, c, [&](float *out) {
      columns::columnSums(device, out,
                          ColumnTerms<Element>{dy, x, nullptr, rstd}, n, c,
                          partials);
    });
}

/// lap_cuda_layer_scale_backward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void layerScaleBackward(const Launcher &device, Element *dx, Element *dgamma,
                        const Element *dy, const Element *x,
                        const Element *gamma, int64_t n, int64_t c) {
  if (dx && n * c > 0) {
    device.launch(scaleColumns<Element>, (n * c + kThreads - 1) / kThreads,
                  kThreads, 0, "scaleColumns", dx, dy, gamma, n * c, c);
  }
  if (!dgamma || c == 0)
    return;
  // [partials | fp32 sums [c] at bf16]; dgamma [c] = sum_i dy x.
  float *partials = normScratch(device, n, c, 0, sumsScratch<Element>(c));
  if (!partials)
    return;
  columnSumsInto(device, dgamma, partials + columns::columnSumsScratch(n, c), c,
                 [&](float *out) {
                   columns::columnSums(device, out, ColumnTerms<Element>{dy, x},
                                       n, c, partials);
                 });
}

/// lap_cuda_l2_normalize_forward.
template <typename Launcher>
void l2NormalizeForward(const Launcher &device, float *y, const float *x,
                        int64_t n, int64_t c, float eps) {
  if (n * c != 0)
    device.launch(l2NormalizeRows, rowBlocks(n), kThreads, 0, "l2NormalizeRows",
                  y, x, n, c, eps);
}

/// lap_cuda_l2_normalize_backward.
template <typename Launcher>
void l2NormalizeBackward(const Launcher &device, float *dx, const float *dy,
                         const float *x, int64_t n, int64_t c, float eps) {
  if (n * c != 0)
    device.launch(l2NormalizeGrads, rowBlocks(n), kThreads, 0,
                  "l2NormalizeGrads", dx, dy, x, n, c, eps);
}

/// lap_cuda_weight_norm_forward.
template <typename Launcher>
void weightNormForward(const Launcher &device, float *w, const float *v,
                       const float *g, int64_t k, int64_t d) {
  if (k * d != 0)
    device.launch(weightNormRows, rowBlocks(k), kThreads, 0, "weightNormRows",
                  w, v, g, k, d);
}

/// lap_cuda_weight_norm_backward.
template <typename Launcher>
void weightNormBackward(const Launcher &device, float *dv, float *dg,
                        const float *dw, const float *v, const float *g,
                        int64_t k, int64_t d) {
  if (k != 0 && (dv || dg))
    device.launch(weightNormGrads, rowBlocks(k), kThreads, 0, "weightNormGrads",
                  dv, dg, dw, v, g, k, d);
}

} // namespace
} // namespace lap::cuda::norms

#endif // LAP_RUNTIME_KERNELS_CUDA_NORMS_H
