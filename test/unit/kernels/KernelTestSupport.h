//===- KernelTestSupport.h - Inputs for the kernel tests --------*- C++ -*-===//
//
// Seeded random inputs, NaN-filled outputs (so a kernel that skips or
// accumulates into an element fails), and float-to-double copies for the
// double-precision references.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
#define LAP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H

#include <limits>
#include <random>
#include <vector>

namespace lap::test {

inline std::vector<float> randomVector(std::mt19937 &rng, size_t n, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

inline std::vector<float> nanVector(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

} // namespace lap::test

#endif // LAP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
