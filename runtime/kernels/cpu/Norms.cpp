//===- Norms.cpp - per-row normalisations and LayerScale --------*- C++ -*-===//
//
// Rows are independent and run in parallel. Parameter gradients are column
// sums over rows: rows are cut into chunks fixed by the shape (not by the
// thread count), each chunk sums into its own partial, and the partials are
// added in chunk order, so the sums are race-free and reproducible. A bf16
// model's norm gradients (`_bf16`) widen each row into fp32 buffers, run
// the same code, and round each result once.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/Rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <vector>

using namespace lap::cpu;

namespace {

// The pragmas let the vectoriser reassociate these float reductions.
float sum(const float *__restrict a, int64_t c) {
  float s = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
  for (int64_t j = 0; j < c; ++j)
    s += a[j];
  return s;
}

float dot(const float *__restrict a, const float *__restrict b, int64_t c) {
  float s = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
  for (int64_t j = 0; j < c; ++j)
    s += a[j] * b[j];
  return s;
}

/// sum_j (a_j - m)^2.
float centredSquares(const float *__restrict a, float m, int64_t c) {
  float s = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
  for (int64_t j = 0; j < c; ++j)
    s += (a[j] - m) * (a[j] - m);
  return s;
}

/// Runs body(begin, end, partials) over row ranges covering [0, n), where
/// partials points to `outs.size()` zeroed [c] accumulators private to the
/// range; then writes out[s] = the sum of the ranges' partial s, in range
/// order. Null outputs are skipped; with none, partials is null.
template <typename F>
void rowsWithColumnSums(int64_t n, int64_t c,
                        std::initializer_list<float *> outs, F body) {
  int64_t slots = int64_t(outs.size());
  bool any = std::any_of(outs.begin(), outs.end(), [](float *p) { return p; });
  if (!any) {
    parallelFor(n, rowGrain(c),
                [&](int64_t begin, int64_t end) { body(begin, end, nullptr); });
    return;
  }
  int64_t chunks = std::clamp<int64_t>(n * c / (int64_t(1) << 15), 1, 128);
  chunks = std::min(chunks, std::max<int64_t>(n, 1));
  int64_t rowsPerChunk = (n + chunks - 1) / chunks;
  std::vector<float> partial(chunks * slots * c, 0.0f);
  parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      body(std::min(n, k * rowsPerChunk), std::min(n, (k + 1) * rowsPerChunk),
           partial.data() + k * slots * c);
  });
  int64_t s = 0;
  for (float *out : outs) {
    if (out) {
      std::memcpy(out, partial.data() + s * c, c * sizeof(float));
      for (int64_t k = 1; k < chunks; ++k) {
        const float *__restrict acc = partial.data() + (k * slots + s) * c;
        for (int64_t j = 0; j < c; ++j)
          out[j] += acc[j];
      }
    }
    ++s;
  }
}

/// g = dy * w [c] into `buffer`, or dy itself where w is null. (One loop
/// for the product keeps a null w out of the loops that read g: a
/// vectorised select would load through it, masked.)
const float *weighted(const float *dy, const float *w, int64_t c,
                      float *buffer) {
  if (!w)
    return dy;
  for (int64_t j = 0; j < c; ++j)
    buffer[j] = dy[j] * w[j];
  return buffer;
}

} // namespace

//--- LayerNorm ---------------------------------------------------------------

/// The kernel on tensors of Element (fp32 or bf16), computing in fp32.
template <typename Element>
void layerNormBackward(Element *dx, Element *dw, Element *db, const Element *dy,
                       const Element *x, const Element *w, int64_t n, int64_t c,
                       float eps) {
  std::vector<float> buffers = rowBuffers<Element>(3, c);
  float *sumsW = sumsFor(dw, buffers.data()),
        *sumsB = sumsFor(db, buffers.data() + c);
  const float *wf = w ? fp32Row(w, 0, c, buffers.data() + 2 * c) : nullptr;
  rowsWithColumnSums(
      n, c, {sumsW, sumsB}, [&](int64_t begin, int64_t end, float *partials) {
        float *__restrict accW = partials && dw ? partials : nullptr;
        float *__restrict accB = partials && db ? partials + c : nullptr;
        std::vector<float> rows = rowBuffers<Element>(3, c),
                           product(wf ? c : 0);
        for (int64_t i = begin; i < end; ++i) {
          const float *__restrict xi = fp32Row(x, i, c, rows.data());
          const float *__restrict dyi = fp32Row(dy, i, c, rows.data() + c);
          const float *__restrict g = weighted(dyi, wf, c, product.data());
          float *__restrict dxi = resultRow(dx, i, c, rows.data() + 2 * c);
          float mean = sum(xi, c) / float(c);
          float rstd =
              1.0f / std::sqrt(centredSquares(xi, mean, c) / float(c) + eps);
          // With g = dy * w and xhat the normalised row:
          // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
          float sumG = 0.0f, sumGX = 0.0f;
#pragma clang loop vectorize(enable) interleave(enable)
          for (int64_t j = 0; j < c; ++j) {
            sumG += g[j];
            sumGX += g[j] * (xi[j] - mean) * rstd;
          }
          float meanG = sumG / float(c), meanGX = sumGX / float(c);
          for (int64_t j = 0; j < c; ++j) {
            float xhat = (xi[j] - mean) * rstd;
            dxi[j] = rstd * (g[j] - meanG - xhat * meanGX);
          }
          storeRow(dx, i, c, dxi);
          if (accW)
            for (int64_t j = 0; j < c; ++j)
              accW[j] += dyi[j] * (xi[j] - mean) * rstd;
          if (accB)
            for (int64_t j = 0; j < c; ++j)
              accB[j] += dyi[j];
        }
      });
  if (dw)
    storeRow(dw, 0, c, sumsW);
  if (db)
    storeRow(db, 0, c, sumsB);
}

extern "C" void lap_cpu_layer_norm_backward(float *dx, float *dw, float *db,
                                            const float *dy, const float *x,
                                            const float *w, int64_t n,
                                            int64_t c, float eps) {
  layerNormBackward(dx, dw, db, dy, x, w, n, c, eps);
}

extern "C" void lap_cpu_layer_norm_backward_bf16(
    lap_bf16 *dx, lap_bf16 *dw, lap_bf16 *db, const lap_bf16 *dy,
    const lap_bf16 *x, const lap_bf16 *w, int64_t n, int64_t c, float eps) {
  layerNormBackward(dx, dw, db, dy, x, w, n, c, eps);
}

//--- RMSNorm -----------------------------------------------------------------

/// The kernel on tensors of Element (fp32 or bf16), computing in fp32.
template <typename Element>
void rmsNormBackward(Element *dx, Element *dw, const Element *dy,
                     const Element *x, const Element *w, int64_t n, int64_t c,
                     float eps) {
  std::vector<float> buffers = rowBuffers<Element>(2, c);
  float *sumsW = sumsFor(dw, buffers.data());
  const float *wf = w ? fp32Row(w, 0, c, buffers.data() + c) : nullptr;
  rowsWithColumnSums(
      n, c, {sumsW}, [&](int64_t begin, int64_t end, float *__restrict accW) {
        std::vector<float> rows = rowBuffers<Element>(3, c),
                           product(wf ? c : 0);
        for (int64_t i = begin; i < end; ++i) {
          const float *__restrict xi = fp32Row(x, i, c, rows.data());
          const float *__restrict dyi = fp32Row(dy, i, c, rows.data() + c);
          float r = 1.0f / std::sqrt(dot(xi, xi, c) / float(c) + eps);
          if (dx) {
            // With g = dy * w: dx = r g - x r^3 mean(g x).
            const float *__restrict g = weighted(dyi, wf, c, product.data());
            float *__restrict dxi = resultRow(dx, i, c, rows.data() + 2 * c);
            float k = r * r * r * dot(g, xi, c) / float(c);
            for (int64_t j = 0; j < c; ++j)
              dxi[j] = r * g[j] - xi[j] * k;
            storeRow(dx, i, c, dxi);
          }
          if (accW)
            for (int64_t j = 0; j < c; ++j)
              accW[j] += dyi[j] * xi[j] * r;
        }
      });
  if (dw)
    storeRow(dw, 0, c, sumsW);
}

extern "C" void lap_cpu_rms_norm_backward(float *dx, float *dw, const float *dy,
                                          const float *x, const float *w,
                                          int64_t n, int64_t c, float eps) {
  rmsNormBackward(dx, dw, dy, x, w, n, c, eps);
}

extern "C" void lap_cpu_rms_norm_backward_bf16(lap_bf16 *dx, lap_bf16 *dw,
                                               const lap_bf16 *dy,
                                               const lap_bf16 *x,
                                               const lap_bf16 *w, int64_t n,
                                               int64_t c, float eps) {
  rmsNormBackward(dx, dw, dy, x, w, n, c, eps);
}

//--- L2 normalisation and weight normalisation
//---------------------------------

extern "C" void lap_cpu_l2_normalize_forward(float *y, const float *x,
                                             int64_t n, int64_t c, float eps) {
  parallelFor(n, rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float *__restrict xi = x + i * c;
      float *__restrict yi = y + i * c;
      float inv = 1.0f / std::max(std::sqrt(dot(xi, xi, c)), eps);
      for (int64_t j = 0; j < c; ++j)
        yi[j] = xi[j] * inv;
    }
  });
}

extern "C" void lap_cpu_l2_normalize_backward(float *dx, const float *dy,
                                              const float *x, int64_t n,
                                              int64_t c, float eps) {
  parallelFor(n, rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float *__restrict xi = x + i * c;
      const float *__restrict dyi = dy + i * c;
      float *__restrict dxi = dx + i * c;
      float norm = std::sqrt(dot(xi, xi, c));
      // Where the clamp is active (norm < eps) the row is just scaled by
      // 1 / eps; otherwise dx = dy / norm - x (x . dy) / norm^3. At the tie
      // the gradient goes through the norm, as torch.clamp_min's does.
      if (!(norm >= eps && norm > 0.0f)) {
        float inv = 1.0f / eps;
        for (int64_t j = 0; j < c; ++j)
          dxi[j] = dyi[j] * inv;
        continue;
      }
      float inv = 1.0f / norm;
      float k = dot(xi, dyi, c) * inv * inv * inv;
      for (int64_t j = 0; j < c; ++j)
        dxi[j] = dyi[j] * inv - xi[j] * k;
    }
  });
}

extern "C" void lap_cpu_weight_norm_forward(float *w, const float *v,
                                            const float *g, int64_t k,
                                            int64_t d) {
  parallelFor(k, rowGrain(d), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *__restrict vr = v + r * d;
      float *__restrict wr = w + r * d;
      float s = g[r] / std::sqrt(dot(vr, vr, d));
      for (int64_t j = 0; j < d; ++j)
        wr[j] = vr[j] * s;
    }
  });
}

extern "C" void lap_cpu_weight_norm_backward(float *dv, float *dg,
                                             const float *dw, const float *v,
                                             const float *g, int64_t k,
                                             int64_t d) {
  parallelFor(k, rowGrain(d), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *__restrict vr = v + r * d;
      const float *__restrict dwr = dw + r * d;
      float inv = 1.0f / std::sqrt(dot(vr, vr, d));
      float proj = dot(dwr, vr, d) * inv; // dw . v / ||v||
      if (dg)
        dg[r] = proj;
      if (dv) {
        // dv = g / ||v|| (dw - v (dw . v) / ||v||^2).
        float *__restrict dvr = dv + r * d;
        float s = g[r] * inv, t = proj * inv;
        for (int64_t j = 0; j < d; ++j)
          dvr[j] = s * (dwr[j] - vr[j] * t);
      }
    }
  });
}

//--- LayerScale
//------------------------------------------------------------------

/// LayerScale's gradients on tensors of Element (fp32 or bf16), in fp32.
template <typename Element>
void layerScaleBackward(Element *dx, Element *dgamma, const Element *dy,
                        const Element *x, const Element *gamma, int64_t n,
                        int64_t c) {
  std::vector<float> buffers = rowBuffers<Element>(2, c);
  float *sums = sumsFor(dgamma, buffers.data());
  const float *g = dx ? fp32Row(gamma, 0, c, buffers.data() + c) : nullptr;
  rowsWithColumnSums(
      n, c, {sums}, [&](int64_t begin, int64_t end, float *__restrict acc) {
        std::vector<float> rows = rowBuffers<Element>(3, c);
        for (int64_t i = begin; i < end; ++i) {
          const float *__restrict dyi = fp32Row(dy, i, c, rows.data());
          if (dx) {
            float *__restrict dxi = resultRow(dx, i, c, rows.data() + c);
            for (int64_t j = 0; j < c; ++j)
              dxi[j] = dyi[j] * g[j];
            storeRow(dx, i, c, dxi);
          }
          if (acc) {
            const float *__restrict xi = fp32Row(x, i, c, rows.data() + 2 * c);
            for (int64_t j = 0; j < c; ++j)
              acc[j] += dyi[j] * xi[j];
          }
        }
      });
  if (dgamma)
    storeRow(dgamma, 0, c, sums);
}

extern "C" void lap_cpu_layer_scale_backward(float *dx, float *dgamma,
                                             const float *dy, const float *x,
                                             const float *gamma, int64_t n,
                                             int64_t c) {
  layerScaleBackward(dx, dgamma, dy, x, gamma, n, c);
}

extern "C" void
lap_cpu_layer_scale_backward_bf16(lap_bf16 *dx, lap_bf16 *dgamma,
                                  const lap_bf16 *dy, const lap_bf16 *x,
                                  const lap_bf16 *gamma, int64_t n, int64_t c) {
  layerScaleBackward(dx, dgamma, dy, x, gamma, n, c);
}
