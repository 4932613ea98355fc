//===- DecodeAttention.cpp - attention against a key/value cache -*- C++ -*-===//
//
// Incremental decoding: a few new queries (one per step after the prompt)
// against every cached key. The work is a matrix-vector product per head,
// bound by reading the cache, so one plain pass per (sequence, head, query)
// with the scores in a per-thread buffer is as fast as a tiled kernel here.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

using lap::cpu::parallelFor;

extern "C" void
lap_cpu_attention_decode(float *o, float *kCache, float *vCache, const float *q,
                         const float *k, const float *v,
                         const float *coefficients, int64_t B, int64_t T,
                         int64_t first, int64_t capacity, int64_t H, int64_t KV,
                         int64_t D, float scale, int64_t window) {
  const int64_t row = KV * D, group = H / KV;
  for (int64_t b = 0; b < B; ++b) {
    std::memcpy(kCache + (b * capacity + first) * row, k + b * T * row,
                size_t(T * row) * sizeof(float));
    std::memcpy(vCache + (b * capacity + first) * row, v + b * T * row,
                size_t(T * row) * sizeof(float));
  }
  parallelFor(B * H * T, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores;
    std::vector<float> sum(static_cast<size_t>(D));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task % T, h = (task / T) % H, b = task / (T * H);
      // Causal: keys p <= first + t, and under a window p > first + t -
      // window; kr and vr start at the first.
      const int64_t g = h / group, self = first + t,
                    from = window > 0 ? std::max<int64_t>(0, self - window + 1)
                                      : 0,
                    keys = self + 1 - from;
      const float *qr = q + ((b * T + t) * H + h) * D;
      const float *kr = kCache + (b * capacity + from) * row + g * D;
      const float *vr = vCache + (b * capacity + from) * row + g * D;
      scores.resize(size_t(keys));
      float max = -INFINITY;
      for (int64_t s = 0; s < keys; ++s) {
        float dot = 0;
        for (int64_t i = 0; i < D; ++i)
          dot += qr[i] * kr[s * row + i];
        scores[s] = scale * dot;
        max = std::max(max, scores[s]);
      }
      float total = 0;
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int64_t s = 0; s < keys; ++s) {
        float p = std::exp(scores[s] - max);
        total += p;
        for (int64_t i = 0; i < D; ++i)
          sum[i] += p * vr[s * row + i];
      }
      // O = alpha P V + beta V at the query's own position.
      const float a = coefficients[h] / total, be = coefficients[H + h];
      const float *own = vr + (self - from) * row;
      float *out = o + ((b * T + t) * H + h) * D;
      for (int64_t i = 0; i < D; ++i)
        out[i] = a * sum[i] + be * own[i];
    }
  });
}
