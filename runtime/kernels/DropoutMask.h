//===- DropoutMask.h - The arithmetic of lap's dropout masks ----*- C++ -*-===//
//
// A mask bit is a hash of (seed, key, element): element i of the op keyed
// `key` survives when the top 24 bits of splitMix(maskStream(seed, key) +
// i) reach survivalThreshold(rate), and survivors are scaled by
// survivorScale(rate). The CPU and CUDA kernels share these (the stream is
// host and device code: a CUDA kernel reads the seed from device memory),
// so both draw the same masks.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_DROPOUTMASK_H
#define LAP_RUNTIME_KERNELS_DROPOUTMASK_H

#include "runtime/platform/Random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lap::dropout {

/// The per-(seed, key) stream; element i hashes splitMix(stream + i).
LAP_HOST_DEVICE inline uint64_t maskStream(uint64_t seed, int64_t key) {
  return splitMix(seed ^ (uint64_t(key) * 0xD1B54A32D192ED03ull));
}

/// The smallest 24-bit draw m that survives, i.e. m * 2^-24 >= rate
/// (m * 2^-24 is exact, so this is m >= ceil(rate * 2^24)). An integer
/// compare keeps the element loop in 64-bit integer lanes.
inline uint64_t survivalThreshold(float rate) {
  constexpr double kOne = 16777216.0; // 2^24
  if (std::isnan(rate))
    return uint64_t(kOne); // no draw compares >= NaN
  double t = std::ceil(double(rate) * kOne);
  return t <= 0.0 ? 0 : uint64_t(std::min(t, kOne));
}

/// 1 / (1 - rate), or 0 when nothing survives (avoids 0 * inf).
inline float survivorScale(float rate) {
  return rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
}

} // namespace lap::dropout

#endif // LAP_RUNTIME_KERNELS_DROPOUTMASK_H
