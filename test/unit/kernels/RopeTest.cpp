//===- RopeTest.cpp - rotary position embedding ---------------------------===//
//
// Against a double-precision rotation computed per element; the backward
// against central differences of L = sum(y * G), and as the inverse rotation.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace lap::test;

struct Shape {
  int64_t B, T, H, D;
  size_t size() const { return size_t(B * T * H * D); }
};

std::vector<double> reference(const std::vector<double> &x, Shape s,
                              double base) {
  std::vector<double> y(x.size());
  int64_t half = s.D / 2;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t h = 0; h < s.H; ++h) {
        const double *xr = x.data() + ((b * s.T + t) * s.H + h) * s.D;
        double *yr = y.data() + ((b * s.T + t) * s.H + h) * s.D;
        for (int64_t i = 0; i < half; ++i) {
          double angle = t * std::pow(base, -2.0 * i / s.D);
          yr[i] = xr[i] * std::cos(angle) - xr[i + half] * std::sin(angle);
          yr[i + half] =
              xr[i] * std::sin(angle) + xr[i + half] * std::cos(angle);
        }
      }
  return y;
}

TEST(Rope, ForwardMatchesReference) {
  std::mt19937 rng(1);
  for (float base : {10000.0f, 100.0f})
    for (Shape s : {Shape{2, 5, 3, 8}, Shape{1, 7, 2, 64}}) {
      auto x = randomVector(rng, s.size());
      auto y = nanVector(x.size());
      lap_cpu_rope_forward(y.data(), x.data(), s.B, s.T, s.H, s.D, base, 0);
      // Two fp32 products of O(1) values with a correctly rounded cos/sin.
      expectNear(y, reference({x.begin(), x.end()}, s, base), 1e-6);
    }
}

TEST(Rope, FarPositionsStayAccurate) {
  // Angles up to ~4000 rad: the table must not lose them to fp32 rounding.
  std::mt19937 rng(2);
  Shape s{1, 4096, 1, 8};
  auto x = randomVector(rng, s.size());
  auto y = nanVector(x.size());
  lap_cpu_rope_forward(y.data(), x.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  expectNear(y, reference({x.begin(), x.end()}, s, 10000.0), 1e-6);
}

TEST(Rope, BackwardInvertsForward) {
  std::mt19937 rng(3);
  Shape s{2, 6, 2, 16};
  auto x = randomVector(rng, s.size());
  auto y = nanVector(x.size()), back = nanVector(x.size());
  lap_cpu_rope_forward(y.data(), x.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  lap_cpu_rope_backward(back.data(), y.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  // A rotation and its transpose: identity up to a few fp32 roundings.
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(back[i], x[i], 1e-6) << "at " << i;
}

TEST(Rope, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(4);
  Shape s{1, 4, 2, 6};
  double base = 500.0;
  auto x = randomVector(rng, s.size()), g = randomVector(rng, s.size());
  auto dx = nanVector(x.size());
  lap_cpu_rope_backward(dx.data(), g.data(), s.B, s.T, s.H, s.D, float(base),
                        0);
  std::vector<double> xd = toDouble(x);
  auto want = centralDifferences(xd, [&](const std::vector<double> &p) {
    return weightedSum(reference(p, s, base), g);
  });
  // L is linear in x: differences exact to ~1e-10.
  expectNear(dx, want, 1e-6);
}

TEST(Rope, InPlace) {
  std::mt19937 rng(5);
  Shape s{2, 3, 4, 32};
  auto x = randomVector(rng, s.size());
  auto y = nanVector(x.size());
  lap_cpu_rope_forward(y.data(), x.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  lap_cpu_rope_forward(x.data(), x.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  EXPECT_EQ(x, y);
  auto back = nanVector(x.size());
  lap_cpu_rope_backward(back.data(), y.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  lap_cpu_rope_backward(y.data(), y.data(), s.B, s.T, s.H, s.D, 10000.0f, 0);
  EXPECT_EQ(back, y);
}

TEST(Rope, ChangingShapesAndBases) {
  // Tables are reused between calls; every (T, D, base) must still be right.
  std::mt19937 rng(6);
  for (Shape s : {Shape{1, 9, 1, 8}, Shape{1, 3, 1, 8}, Shape{1, 12, 1, 8},
                  Shape{1, 5, 1, 4}, Shape{1, 12, 1, 8}})
    for (float base : {10000.0f, 50.0f}) {
      auto x = randomVector(rng, s.size());
      auto y = nanVector(x.size());
      lap_cpu_rope_forward(y.data(), x.data(), s.B, s.T, s.H, s.D, base, 0);
      expectNear(y, reference({x.begin(), x.end()}, s, base), 1e-6);
    }
}

TEST(Rope, FirstPositionShiftsTheAngles) {
  // Decoding rotates T new tokens at positions first .. first + T - 1: the
  // same rows as a rotation of the whole sequence.
  std::mt19937 rng(5);
  Shape whole{2, 9, 3, 16}, tail{2, 4, 3, 16};
  int64_t first = whole.T - tail.T, row = whole.H * whole.D;
  auto x = randomVector(rng, whole.size());
  auto y = nanVector(x.size());
  lap_cpu_rope_forward(y.data(), x.data(), whole.B, whole.T, whole.H, whole.D,
                       10000.0f, 0);
  std::vector<float> xt, want;
  for (int64_t b = 0; b < whole.B; ++b) {
    auto begin = (b * whole.T + first) * row, end = (b + 1) * whole.T * row;
    xt.insert(xt.end(), x.begin() + begin, x.begin() + end);
    want.insert(want.end(), y.begin() + begin, y.begin() + end);
  }
  auto yt = nanVector(xt.size());
  lap_cpu_rope_forward(yt.data(), xt.data(), tail.B, tail.T, tail.H, tail.D,
                       10000.0f, first);
  EXPECT_EQ(yt, want);
}

// A bf16 model's rotation: the fp32 kernel's on the bf16 values, rounded;
// odd D, a decoding offset, both directions, in place as out of place.
TEST(Rope, Bf16KernelsRoundTheFp32Rotation) {
  std::mt19937 rng(7);
  for (Shape s : {Shape{2, 5, 3, 8}, Shape{1, 7, 2, 65}})
    for (bool backward : {false, true}) {
      auto cpu = backward ? lap_cpu_rope_backward : lap_cpu_rope_forward;
      auto bf16 =
          backward ? lap_cpu_rope_backward_bf16 : lap_cpu_rope_forward_bf16;
      auto x = bf16Vector(randomVector(rng, s.size()));
      auto want = nanVector(x.size());
      cpu(want.data(), valuesOf(x).data(), s.B, s.T, s.H, s.D, 10000.0f, 3);
      std::vector<lap_bf16> y(x.size(), 0xffff);
      bf16(y.data(), x.data(), s.B, s.T, s.H, s.D, 10000.0f, 3);
      expectRoundedFrom(y, want, backward ? "dx" : "y");
      bf16(x.data(), x.data(), s.B, s.T, s.H, s.D, 10000.0f, 3);
      EXPECT_EQ(x, y) << "in place";
    }
}

} // namespace
