//===- DropoutTest.cpp - counter-based dropout and drop path --------------===//
//
// The mask hash is pinned by values computed by hand from the definition in
// Kernels.h; the bulk kernels are checked element by element against
// lap_cpu_keep, and statistically against the rate.
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

// The kernels read the step's seed through a pointer.
void dropout(float *y, const float *x, int64_t n, float rate, uint64_t seed,
             int64_t key) {
  lap_cpu_dropout(y, x, n, rate, &seed, key);
}
void dropPath(float *y, const float *x, int64_t B, int64_t perSample,
              float rate, uint64_t seed, int64_t key) {
  lap_cpu_drop_path(y, x, B, perSample, rate, &seed, key);
}

TEST(Keep, MatchesHandComputedHash) {
  // seed 1, key 2, index 3: mix(mix(1 ^ 2 * 0xD1B54A32D192ED03) + 3) =
  // 0x6530827308a9a4ce, so u >> 40 = 6631554 and the draw is
  // 6631554 / 2^24 = 0.39527142... (exact in fp32).
  float draw = 6631554.0f * 0x1p-24f;
  EXPECT_EQ(lap_cpu_keep(1, 2, 3, draw), 1); // survives when draw >= rate
  EXPECT_EQ(lap_cpu_keep(1, 2, 3, std::nextafter(draw, 1.0f)), 0);
  // A negative key wraps modulo 2^64: seed 0x0123456789ABCDEF, key -5,
  // index 1000 gives u = 0xd9025311f0535eec, u >> 40 = 14221907.
  float draw2 = 14221907.0f * 0x1p-24f;
  EXPECT_EQ(lap_cpu_keep(0x0123456789ABCDEFull, -5, 1000, draw2), 1);
  EXPECT_EQ(lap_cpu_keep(0x0123456789ABCDEFull, -5, 1000,
                         std::nextafter(draw2, 1.0f)),
            0);
  // Rate 0 keeps everything, rate 1 nothing (the draw is below 1).
  EXPECT_EQ(lap_cpu_keep(1, 2, 3, 0.0f), 1);
  EXPECT_EQ(lap_cpu_keep(1, 2, 3, 1.0f), 0);
}

TEST(Dropout, BulkKernelsAgreeAtTheBoundary) {
  // Element (and sample) 3 under seed 1, key 2 draws 6631554 / 2^24 (see
  // above): kept at a rate equal to the draw, dropped just above it.
  float draw = 6631554.0f * 0x1p-24f, above = std::nextafter(draw, 1.0f);
  std::vector<float> x(8, 1.0f), y(8);
  dropout(y.data(), x.data(), 8, draw, 1, 2);
  EXPECT_NE(y[3], 0.0f);
  dropout(y.data(), x.data(), 8, above, 1, 2);
  EXPECT_EQ(y[3], 0.0f);
  dropPath(y.data(), x.data(), 4, 2, draw, 1, 2);
  EXPECT_NE(y[6], 0.0f);
  EXPECT_NE(y[7], 0.0f);
  dropPath(y.data(), x.data(), 4, 2, above, 1, 2);
  EXPECT_EQ(y[6], 0.0f);
  EXPECT_EQ(y[7], 0.0f);
}

TEST(Dropout, MaskIsLapCpuKeepAndScalesSurvivors) {
  std::mt19937 rng(1);
  int64_t n = 100003; // several parallel chunks, odd tail
  auto x = randomVector(rng, n);
  std::vector<float> y(n);
  // 0.1 and 0.3 are not multiples of 2^-24: the threshold rounding matters.
  for (float rate : {0.1f, 0.3f, 0.5f}) {
    dropout(y.data(), x.data(), n, rate, 42, 7);
    for (int64_t i = 0; i < n; ++i) {
      float want = lap_cpu_keep(42, 7, i, rate) ? x[i] / (1.0f - rate) : 0.0f;
      ASSERT_NEAR(y[i], want, 1e-6f * std::fabs(want)) << "at " << i;
    }
  }
}

TEST(Dropout, KeptFractionIsOneMinusRate) {
  int64_t n = 1 << 20;
  std::vector<float> x(n, 1.0f), y(n);
  for (float rate : {0.1f, 0.5f, 0.9f}) {
    dropout(y.data(), x.data(), n, rate, 12345, 3);
    int64_t kept = 0;
    for (float v : y)
      kept += v != 0.0f;
    // The standard deviation of the fraction is <= 0.5 / sqrt(n) ~ 5e-4;
    // 3e-3 is six of them.
    EXPECT_NEAR(double(kept) / n, 1.0 - rate, 3e-3) << "rate " << rate;
  }
}

TEST(Dropout, SameSeedAndKeySameMask) {
  int64_t n = 1 << 16;
  std::vector<float> x(n, 1.0f), a(n), b(n), otherKey(n), otherSeed(n);
  dropout(a.data(), x.data(), n, 0.5f, 99, 4);
  dropout(b.data(), x.data(), n, 0.5f, 99, 4);
  dropout(otherKey.data(), x.data(), n, 0.5f, 99, 5);
  dropout(otherSeed.data(), x.data(), n, 0.5f, 100, 4);
  EXPECT_EQ(a, b);
  // Independent masks at rate 0.5 differ in about half the positions.
  int64_t diffKey = 0, diffSeed = 0;
  for (int64_t i = 0; i < n; ++i) {
    diffKey += a[i] != otherKey[i];
    diffSeed += a[i] != otherSeed[i];
  }
  EXPECT_NEAR(double(diffKey) / n, 0.5, 0.02);
  EXPECT_NEAR(double(diffSeed) / n, 0.5, 0.02);
}

TEST(Dropout, InPlaceAndEdgeRates) {
  std::mt19937 rng(2);
  int64_t n = 5000;
  auto x = randomVector(rng, n);
  std::vector<float> y(n);
  dropout(y.data(), x.data(), n, 0.25f, 8, 1);
  auto inPlace = x;
  dropout(inPlace.data(), inPlace.data(), n, 0.25f, 8, 1);
  EXPECT_EQ(inPlace, y);
  dropout(y.data(), x.data(), n, 0.0f, 8, 1);
  EXPECT_EQ(y, x); // rate 0: the identity
  dropout(y.data(), x.data(), n, 1.0f, 8, 1);
  EXPECT_EQ(y, std::vector<float>(n, 0.0f)); // rate 1: zeros, not NaN
}

TEST(DropPath, OneDrawPerSample) {
  std::mt19937 rng(3);
  // Samples larger than a parallel chunk, so chunks cut through samples.
  int64_t B = 24, perSample = 5000;
  float rate = 0.4f;
  auto x = randomVector(rng, B * perSample);
  std::vector<float> y(x.size());
  dropPath(y.data(), x.data(), B, perSample, rate, 77, 11);
  for (int64_t b = 0; b < B; ++b) {
    bool keep = lap_cpu_keep(77, 11, b, rate);
    for (int64_t j = 0; j < perSample; ++j) {
      float want = keep ? x[b * perSample + j] / (1.0f - rate) : 0.0f;
      ASSERT_NEAR(y[b * perSample + j], want, 1e-6f * std::fabs(want))
          << "sample " << b << " element " << j;
    }
  }
}

TEST(DropPath, KeptFractionIsOneMinusRate) {
  int64_t B = 200000, perSample = 3;
  float rate = 0.2f;
  std::vector<float> x(B * perSample, 1.0f), y(x.size());
  dropPath(y.data(), x.data(), B, perSample, rate, 5, 6);
  int64_t kept = 0;
  for (int64_t b = 0; b < B; ++b)
    kept += y[b * perSample] != 0.0f;
  // sd = sqrt(0.16 / B) ~ 9e-4.
  EXPECT_NEAR(double(kept) / B, 1.0 - rate, 5e-3);
}

// A bf16 model's: the fp32 kernels' masks and scaling on the bf16 values,
// rounded, bit for bit; in place too.
TEST(Dropout, Bf16KernelsAreTheFp32OnesRounded) {
  std::mt19937 rng(51);
  const int64_t B = 4, perSample = 5000, n = B * perSample;
  auto x = bf16Vector(randomVector(rng, n));
  auto values = valuesOf(x);
  const uint64_t seed = 77;
  std::vector<lap_bf16> y(n, 0xffff);
  auto want = nanVector(n);
  lap_cpu_dropout_bf16(y.data(), x.data(), n, 0.3f, &seed, 5);
  lap_cpu_dropout(want.data(), values.data(), n, 0.3f, &seed, 5);
  EXPECT_EQ(y, bf16Vector(want));
  lap_cpu_drop_path_bf16(y.data(), x.data(), B, perSample, 0.5f, &seed, 6);
  lap_cpu_drop_path(want.data(), values.data(), B, perSample, 0.5f, &seed, 6);
  EXPECT_EQ(y, bf16Vector(want));
  lap_cpu_dropout_bf16(x.data(), x.data(), n, 0.3f, &seed, 5);
  lap_cpu_dropout(values.data(), values.data(), n, 0.3f, &seed, 5);
  EXPECT_EQ(x, bf16Vector(values)) << "in place";
}

} // namespace
