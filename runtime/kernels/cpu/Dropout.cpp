//===- Dropout.cpp - counter-based dropout masks ----------------*- C++ -*-===//
//
// A mask bit is a hash of (seed, key, element), so the adjoint (the same op
// with the same key) recomputes the forward's mask instead of storing it,
// and any chunking of the loop gives the same mask.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/DropoutMask.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <algorithm>
#include <cmath>

using lap::bf16::load;
using lap::bf16::store;
using lap::cpu::parallelFor;

using lap::splitMix;
using lap::dropout::maskStream;
using lap::dropout::survivalThreshold;
using lap::dropout::survivorScale;

extern "C" int32_t lap_cpu_keep(uint64_t seed, int64_t key, int64_t index,
                                float rate) {
  uint64_t u = splitMix(maskStream(seed, key) + uint64_t(index));
  return float(u >> 40) * 0x1p-24f >= rate;
}

namespace {

// y may equal x: each element is read, then written, at the same index.
// Element: fp32 or bf16 (scaled in fp32, rounded once).
template <typename Element>
void dropout(Element *y, const Element *x, int64_t n, float rate,
             const uint64_t *seed, int64_t key) {
  uint64_t base = maskStream(*seed, key), threshold = survivalThreshold(rate);
  float scale = survivorScale(rate);
  parallelFor(n, int64_t(1) << 14, [&](int64_t begin, int64_t end) {
#pragma clang loop vectorize(assume_safety)
    for (int64_t i = begin; i < end; ++i) {
      bool keep = (splitMix(base + uint64_t(i)) >> 40) >= threshold;
      store(y[i], keep ? load(x[i]) * scale : 0.0f);
    }
  });
}

template <typename Element>
void dropPath(Element *y, const Element *x, int64_t B, int64_t per_sample,
              float rate, const uint64_t *seed, int64_t key) {
  uint64_t base = maskStream(*seed, key), threshold = survivalThreshold(rate);
  float scale = survivorScale(rate);
  // Chunks of the flat range, so one large sample still spreads over threads.
  parallelFor(
      B * per_sample, int64_t(1) << 14, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin / per_sample; b * per_sample < end; ++b) {
          int64_t first = std::max(begin, b * per_sample);
          int64_t last = std::min(end, (b + 1) * per_sample);
          if ((splitMix(base + uint64_t(b)) >> 40) < threshold) {
            std::fill(y + first, y + last, Element(0));
            continue;
          }
#pragma clang loop vectorize(assume_safety)
          for (int64_t i = first; i < last; ++i)
            store(y[i], load(x[i]) * scale);
        }
      });
}

} // namespace

extern "C" void lap_cpu_dropout(float *y, const float *x, int64_t n, float rate,
                                const uint64_t *seed, int64_t key) {
  dropout(y, x, n, rate, seed, key);
}

extern "C" void lap_cpu_drop_path(float *y, const float *x, int64_t B,
                                  int64_t per_sample, float rate,
                                  const uint64_t *seed, int64_t key) {
  dropPath(y, x, B, per_sample, rate, seed, key);
}

extern "C" void lap_cpu_dropout_bf16(lap_bf16 *y, const lap_bf16 *x, int64_t n,
                                     float rate, const uint64_t *seed,
                                     int64_t key) {
  dropout(y, x, n, rate, seed, key);
}

extern "C" void lap_cpu_drop_path_bf16(lap_bf16 *y, const lap_bf16 *x,
                                       int64_t B, int64_t per_sample,
                                       float rate, const uint64_t *seed,
                                       int64_t key) {
  dropPath(y, x, B, per_sample, rate, seed, key);
}
