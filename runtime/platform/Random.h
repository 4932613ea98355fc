//===- Random.h - The counter-based hash of lap's random numbers -*- C++ -*-===//
//
// splitmix64: a bijection of 64-bit integers that scrambles counters into
// random bits, so random values are functions of (seed, counter) and do not
// depend on threads or call order. Dropout masks (Kernels.h, and generated
// code, which computes the same), parameter initialisation and the token
// loader's epoch permutation use it, and seededShuffle the orders of
// conversations.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_RANDOM_H
#define LAP_RUNTIME_PLATFORM_RANDOM_H

#include <cstddef>
#include <cstdint>
#include <utility>

// The CUDA kernels compute the same masks on the device (runtime/kernels/
// cuda/Dropout.h), so the hash compiles for both sides under nvcc.
#ifdef __CUDACC__
#define LAP_HOST_DEVICE __host__ __device__
#else
#define LAP_HOST_DEVICE
#endif

namespace lap {

/// splitmix64's increment, the golden ratio's fraction in 64 bits.
constexpr uint64_t kSplitMixIncrement = 0x9E3779B97F4A7C15ull;

/// splitmix64's finaliser (Stafford's Mix13).
LAP_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// One splitmix64 output for state `z`: the finaliser of z + the increment.
LAP_HOST_DEVICE inline uint64_t splitMix(uint64_t z) {
  return mix64(z + kSplitMixIncrement);
}

/// Fisher-Yates over splitmix64 from `seed`: the same order on every
/// platform (std::shuffle is not).
template <class Vector> void seededShuffle(Vector &items, uint64_t seed) {
  uint64_t state = mix64(seed);
  for (size_t i = items.size(); i > 1; --i) {
    state += kSplitMixIncrement;
    using std::swap;
    swap(items[i - 1], items[mix64(state) % i]);
  }
}

} // namespace lap

#endif // LAP_RUNTIME_PLATFORM_RANDOM_H
