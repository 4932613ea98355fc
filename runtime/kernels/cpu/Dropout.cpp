//===- Dropout.cpp - counter-based dropout masks ----------------*- C++ -*-===//
//
// A mask bit is a hash of (seed, key, element), so the adjoint (the same op
// with the same key) recomputes the forward's mask instead of storing it,
// and any chunking of the loop gives the same mask.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/SplitMix.h"

#include <algorithm>
#include <cmath>

using lap::cpu::parallelFor;

namespace {

using lap::splitMix;

/// The per-(seed, key) stream; element i hashes splitMix(stream + i).
inline uint64_t stream(uint64_t seed, int64_t key) {
  return splitMix(seed ^ (uint64_t(key) * 0xD1B54A32D192ED03ull));
}

/// The smallest 24-bit draw m that survives, i.e. m * 2^-24 >= rate
/// (m * 2^-24 is exact, so this is m >= ceil(rate * 2^24)). An integer
/// compare keeps the element loop in 64-bit integer lanes.
uint64_t survivalThreshold(float rate) {
  constexpr double kOne = 16777216.0; // 2^24
  if (std::isnan(rate))
    return uint64_t(kOne); // no draw compares >= NaN
  double t = std::ceil(double(rate) * kOne);
  return t <= 0.0 ? 0 : uint64_t(std::min(t, kOne));
}

/// 1 / (1 - rate), or 0 when nothing survives (avoids 0 * inf).
float survivorScale(float rate) {
  return rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
}

} // namespace

extern "C" int32_t lap_cpu_keep(uint64_t seed, int64_t key, int64_t index,
                                float rate) {
  uint64_t u = splitMix(stream(seed, key) + uint64_t(index));
  return float(u >> 40) * 0x1p-24f >= rate;
}

// y may equal x: each element is read, then written, at the same index.
extern "C" void lap_cpu_dropout(float *y, const float *x, int64_t n, float rate,
                                uint64_t seed, int64_t key) {
  uint64_t base = stream(seed, key), threshold = survivalThreshold(rate);
  float scale = survivorScale(rate);
  parallelFor(n, int64_t(1) << 14, [&](int64_t begin, int64_t end) {
#pragma clang loop vectorize(assume_safety)
    for (int64_t i = begin; i < end; ++i) {
      bool keep = (splitMix(base + uint64_t(i)) >> 40) >= threshold;
      y[i] = keep ? x[i] * scale : 0.0f;
    }
  });
}

extern "C" void lap_cpu_drop_path(float *y, const float *x, int64_t B,
                                  int64_t per_sample, float rate, uint64_t seed,
                                  int64_t key) {
  uint64_t base = stream(seed, key), threshold = survivalThreshold(rate);
  float scale = survivorScale(rate);
  // Chunks of the flat range, so one large sample still spreads over threads.
  parallelFor(
      B * per_sample, int64_t(1) << 14, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin / per_sample; b * per_sample < end; ++b) {
          int64_t first = std::max(begin, b * per_sample);
          int64_t last = std::min(end, (b + 1) * per_sample);
          if ((splitMix(base + uint64_t(b)) >> 40) < threshold) {
            std::fill(y + first, y + last, 0.0f);
            continue;
          }
#pragma clang loop vectorize(assume_safety)
          for (int64_t i = first; i < last; ++i)
            y[i] = x[i] * scale;
        }
      });
}
