//===- SplitMix.h - The counter-based hash of lap's random numbers -*- C++ -*-===//
//
// splitmix64's finaliser: a bijection of 64-bit integers that scrambles
// counters into random bits, so random values are functions of (seed,
// counter) and do not depend on threads or call order. Dropout masks
// (Kernels.h, and generated code, which computes the same) and parameter
// initialisation use it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_SPLITMIX_H
#define LAP_RUNTIME_KERNELS_CPU_SPLITMIX_H

#include <cstdint>

// The CUDA kernels compute the same masks on the device (runtime/kernels/
// cuda/Dropout.h), so the hash compiles for both sides under nvcc.
#ifdef __CUDACC__
#define LAP_HOST_DEVICE __host__ __device__
#else
#define LAP_HOST_DEVICE
#endif

namespace lap {

LAP_HOST_DEVICE inline uint64_t splitMix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

} // namespace lap

#endif // LAP_RUNTIME_KERNELS_CPU_SPLITMIX_H
