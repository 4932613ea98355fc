//===- KernelTestSupport.h - Inputs for the kernel tests --------*- C++ -*-===//
//
// Seeded random inputs, NaN-filled outputs (so a kernel that skips or
// accumulates into an element fails), float-to-double copies for the
// double-precision references, the central differences every backward
// test compares with, and bf16 kernels held to the fp32 ones.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
#define LAP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/KernelEnums.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace lap::test {

/// A linear layer's shape: n rows of `in` features to `out`; its name in a
/// test's trace.
struct LinearShape {
  int64_t n, in, out;
  std::string name() const {
    return std::to_string(n) + "x" + std::to_string(in) + "x" +
           std::to_string(out);
  }
};

/// Document starts [B, T] of sequences packed from documents of 1 to
/// 2 * mean tokens (each sequence's first may have begun before it): for
/// each token, the position its document starts at.
inline std::vector<int32_t> packedDocumentStarts(std::mt19937 &rng, int64_t B,
                                                 int64_t T, int64_t mean) {
  std::uniform_int_distribution<int64_t> length(1, 2 * mean);
  std::vector<int32_t> starts;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0, start = 0, next = length(rng) / 2; t < T; ++t) {
      if (t == next)
        start = t, next = t + length(rng);
      starts.push_back(int32_t(start));
    }
  return starts;
}

inline std::vector<float> randomVector(std::mt19937 &rng, size_t n,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// v rounded to bf16, as the bits a bf16 kernel takes (lap_bf16).
inline std::vector<lap_bf16> bf16Vector(const std::vector<float> &v) {
  std::vector<lap_bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = lap::bf16::bits(v[i]);
  return out;
}

/// The fp32 values of bf16 bits.
inline std::vector<float> valuesOf(const std::vector<lap_bf16> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = lap::bf16::value(v[i]);
  return out;
}

inline std::vector<float> nanVector(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

/// sum_i y_i g_i: a scalar loss whose gradient with respect to y is g.
template <typename T>
double weightedSum(const std::vector<double> &y, const std::vector<T> &g) {
  double l = 0.0;
  for (size_t i = 0; i < y.size(); ++i)
    l += y[i] * double(g[i]);
  return l;
}

/// dL/dp[i] by central differences of a double-precision loss; p[i] is
/// restored, and the loss may read p through its argument or a capture.
inline double centralDifference(
    std::vector<double> &p, size_t i,
    const std::function<double(const std::vector<double> &)> &loss, double h) {
  double saved = p[i];
  p[i] = saved + h;
  double plus = loss(p);
  p[i] = saved - h;
  double minus = loss(p);
  p[i] = saved;
  return (plus - minus) / (2 * h);
}

/// dL/dp by central differences, every entry.
inline std::vector<double> centralDifferences(
    std::vector<double> &p,
    const std::function<double(const std::vector<double> &)> &loss,
    double h = 1e-6) {
  std::vector<double> grad(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    grad[i] = centralDifference(p, i, loss, h);
  return grad;
}

inline void expectNear(const std::vector<float> &got,
                       const std::vector<double> &want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

/// |got - want| <= tolerance * max |want| everywhere (NaN fails): the same
/// values computed another way (another device, fusion or summation
/// order), held to the largest magnitude of the tensor, or to leastScale
/// where that is larger; reports the worst element.
inline void expectWithinScale(const float *got, const float *want, size_t n,
                              double tolerance, const std::string &what,
                              double leastScale = 0.0) {
  double scale = leastScale, worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    scale = std::max(scale, std::fabs(double(want[i])));
    double d = std::fabs(double(got[i]) - double(want[i]));
    if (!(d <= worst)) {
      worst = std::isnan(d) ? INFINITY : d;
      at = i;
    }
  }
  EXPECT_LE(worst, tolerance * scale)
      << what << ": worst at " << at << ", " << (n ? got[at] : 0.0f) << " vs "
      << (n ? want[at] : 0.0f) << " (largest magnitude " << scale << ")";
}
inline void expectWithinScale(const std::vector<float> &got,
                              const std::vector<float> &want, double tolerance,
                              const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  expectWithinScale(got.data(), want.data(), got.size(), tolerance, what);
}

/// got (a bf16 kernel's result) is want (the fp32 kernel's on the same
/// values, which may sum in another order) rounded to nearest: within half
/// a bf16 step (2^-8 relative) plus `order` of the tensor's largest
/// magnitude, which truncation would exceed; and at least 99% of the
/// elements exactly want rounded.
inline void expectRoundedFrom(const std::vector<lap_bf16> &got,
                              const std::vector<float> &want,
                              const std::string &what, double order = 1e-6) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float w : want)
    scale = std::max(scale, std::fabs(double(w)));
  size_t exact = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = lap::bf16::value(got[i]), w = want[i];
    ASSERT_LE(std::fabs(g - w), 0x1p-8 * std::fabs(w) + order * scale)
        << what << "[" << i << "]";
    exact += got[i] == lap::bf16::bits(want[i]);
  }
  EXPECT_GE(double(exact), 0.99 * double(got.size()))
      << what << ": too few elements are the fp32 result rounded";
}

} // namespace lap::test

#endif // LAP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
