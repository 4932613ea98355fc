//===- DecodeAttention.cpp - attention against a key/value cache -*- C++ -*-===//
//
// Incremental decoding: a few new queries (one per step after the prompt)
// against every cached key. The work is a matrix-vector product per head,
// bound by reading the cache, so one plain pass per (sequence, head, query)
// with the scores in a per-thread buffer is as fast as a tiled kernel here.
// The new keys are read where they are, and stored into the cache only once
// every query has read it: a windowed cache of `window` slots may not have
// room for the keys of old and new positions at once.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

using lap::cpu::parallelFor;

namespace {

/// Consecutive key (and value) rows of one query: keys[i] at k + i row.
struct KeyRun {
  const float *k, *v;
  int64_t count;
};

} // namespace

extern "C" void
lap_cpu_attention_decode(float *o, float *kCache, float *vCache, const float *q,
                         const float *k, const float *v,
                         const float *coefficients, int64_t B, int64_t T,
                         int64_t first, int64_t slots, int64_t H, int64_t KV,
                         int64_t D, float scale, int64_t window) {
  const int64_t row = KV * D, group = H / KV;
  parallelFor(B * H * T, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores;
    std::vector<float> sum(static_cast<size_t>(D));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task % T, h = (task / T) % H, b = task / (T * H);
      // Causal: keys p <= first + t, and under a window p > first + t -
      // window. Those before first are in the cache, slot p mod slots (two
      // runs where they wrap), the others are rows of k.
      const int64_t g = h / group, self = first + t,
                    from = window > 0 ? std::max<int64_t>(0, self - window + 1)
                                      : 0,
                    old = std::max<int64_t>(0, first - from),
                    slot = old ? from % slots : 0,
                    wrapped = std::max<int64_t>(0, slot + old - slots);
      const int64_t cached = (b * slots) * row + g * D,
                    fresh =
                        (b * T + std::max(from, first) - first) * row + g * D;
      const std::array<KeyRun, 3> runs{
          KeyRun{kCache + cached + slot * row, vCache + cached + slot * row,
                 old - wrapped},
          KeyRun{kCache + cached, vCache + cached, wrapped},
          KeyRun{k + fresh, v + fresh, self + 1 - std::max(from, first)}};
      const float *qr = q + ((b * T + t) * H + h) * D;
      scores.resize(size_t(self + 1 - from));
      float max = -INFINITY;
      float *score = scores.data();
      for (const KeyRun &run : runs)
        for (int64_t s = 0; s < run.count; ++s, ++score) {
          float dot = 0;
          for (int64_t i = 0; i < D; ++i)
            dot += qr[i] * run.k[s * row + i];
          *score = scale * dot;
          max = std::max(max, *score);
        }
      float total = 0;
      std::fill(sum.begin(), sum.end(), 0.0f);
      score = scores.data();
      for (const KeyRun &run : runs)
        for (int64_t s = 0; s < run.count; ++s, ++score) {
          float p = std::exp(*score - max);
          total += p;
          for (int64_t i = 0; i < D; ++i)
            sum[i] += p * run.v[s * row + i];
        }
      // O = alpha P V + beta V at the query's own position.
      const float a = coefficients[h] / total, be = coefficients[H + h];
      const float *own = v + ((b * T + t) * KV + g) * D;
      float *out = o + ((b * T + t) * H + h) * D;
      for (int64_t i = 0; i < D; ++i)
        out[i] = a * sum[i] + be * own[i];
    }
  });
  // The new positions the cache keeps: the last `slots` of them.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = std::max(first, first + T - slots); p < first + T; ++p) {
      const int64_t to = (b * slots + p % slots) * row,
                    at = (b * T + p - first) * row;
      std::memcpy(kCache + to, k + at, size_t(row) * sizeof(float));
      std::memcpy(vCache + to, v + at, size_t(row) * sizeof(float));
    }
}
