//===- TokensTest.cpp - patches, learned tokens and pooling ---------------===//
//
// Naive double references indexed straight from the op definitions;
// gradients against central differences of L = sum(y * G).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace lap::test;

using Vec = std::vector<double>;

/// dL/dp by central differences, L = sum(f(p) * g).
Vec finiteDifferences(Vec p, const std::function<Vec(const Vec &)> &f,
                      const std::vector<float> &g) {
  return centralDifferences(p,
                            [&](const Vec &q) { return weightedSum(f(q), g); });
}

// All ops here are linear: the differences are exact to ~1e-10, and the
// kernels either copy (exact) or add a few fp32 terms; 1e-5 bounds both.
constexpr double kTol = 1e-5;

//--- Patchify
//----------------------------------------------------------------------

struct Image {
  int64_t B, C, H, W, p;
  int64_t patches() const { return (H / p) * (W / p); }
};

Vec patchify(const Vec &img, Image s) {
  int64_t Wp = s.W / s.p, width = s.C * s.p * s.p;
  Vec y(s.B * s.patches() * width);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t ph = 0; ph < s.H / s.p; ++ph)
      for (int64_t pw = 0; pw < Wp; ++pw)
        for (int64_t c = 0; c < s.C; ++c)
          for (int64_t dy = 0; dy < s.p; ++dy)
            for (int64_t dx = 0; dx < s.p; ++dx)
              y[(b * s.patches() + ph * Wp + pw) * width +
                (c * s.p + dy) * s.p + dx] =
                  img[((b * s.C + c) * s.H + ph * s.p + dy) * s.W + pw * s.p +
                      dx];
  return y;
}

TEST(Patchify, ForwardMatchesReference) {
  std::mt19937 rng(1);
  for (Image s : {Image{2, 3, 4, 6, 2}, Image{1, 1, 28, 28, 4},
                  Image{2, 2, 5, 7, 2}}) { // the last: p divides neither side
    auto img = randomVector(rng, s.B * s.C * s.H * s.W);
    auto y = nanVector(s.B * s.patches() * s.C * s.p * s.p);
    lap_cpu_patchify_forward(y.data(), img.data(), s.B, s.C, s.H, s.W, s.p);
    expectNear(y, patchify(toDouble(img), s), 0.0);
  }
}

TEST(Patchify, RoundTrip) {
  // Backward of forward is the identity when the patches tile the image.
  std::mt19937 rng(2);
  Image s{3, 3, 8, 12, 4};
  auto img = randomVector(rng, s.B * s.C * s.H * s.W);
  auto y = nanVector(s.B * s.patches() * s.C * s.p * s.p);
  auto back = nanVector(img.size());
  lap_cpu_patchify_forward(y.data(), img.data(), s.B, s.C, s.H, s.W, s.p);
  lap_cpu_patchify_backward(back.data(), y.data(), s.B, s.C, s.H, s.W, s.p);
  EXPECT_EQ(back, img);
}

TEST(Patchify, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(3);
  for (Image s : {Image{2, 2, 4, 6, 2}, Image{1, 2, 5, 7, 2}}) {
    auto img = randomVector(rng, s.B * s.C * s.H * s.W);
    auto g = randomVector(rng, s.B * s.patches() * s.C * s.p * s.p);
    auto dimg = nanVector(img.size());
    lap_cpu_patchify_backward(dimg.data(), g.data(), s.B, s.C, s.H, s.W, s.p);
    // Uncovered pixels (last row and column of the 5 x 7 image) get zero.
    expectNear(
        dimg,
        finiteDifferences(
            toDouble(img), [&](const Vec &p) { return patchify(p, s); }, g),
        kTol);
  }
}

//--- Learned tokens
//------------------------------------------------------------------

Vec prepend(const Vec &x, const Vec &tokens, int64_t B, int64_t N, int64_t k,
            int64_t c) {
  Vec y(B * (k + N) * c);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < k + N; ++t)
      for (int64_t j = 0; j < c; ++j)
        y[(b * (k + N) + t) * c + j] =
            t < k ? tokens[t * c + j] : x[(b * N + t - k) * c + j];
  return y;
}

TEST(PrependTokens, ForwardAndBackward) {
  std::mt19937 rng(4);
  int64_t B = 3, N = 4, k = 2, c = 5;
  auto x = randomVector(rng, B * N * c), tokens = randomVector(rng, k * c),
       g = randomVector(rng, B * (k + N) * c);
  Vec xd = toDouble(x), td = toDouble(tokens);
  auto y = nanVector(g.size());
  lap_cpu_prepend_tokens_forward(y.data(), x.data(), tokens.data(), B, N, k, c);
  expectNear(y, prepend(xd, td, B, N, k, c), 0.0);

  auto dx = nanVector(x.size()), dtokens = nanVector(tokens.size());
  lap_cpu_prepend_tokens_backward(dx.data(), dtokens.data(), g.data(), B, N, k,
                                  c);
  expectNear(
      dx,
      finiteDifferences(
          xd, [&](const Vec &p) { return prepend(p, td, B, N, k, c); }, g),
      kTol);
  expectNear(
      dtokens,
      finiteDifferences(
          td, [&](const Vec &p) { return prepend(xd, p, B, N, k, c); }, g),
      kTol);

  // dx is nullable.
  auto dtokensOnly = nanVector(tokens.size());
  lap_cpu_prepend_tokens_backward(nullptr, dtokensOnly.data(), g.data(), B, N,
                                  k, c);
  EXPECT_EQ(dtokensOnly, dtokens);
}

//--- Pooling
//-------------------------------------------------------------------------

Vec takeToken(const Vec &x, int64_t B, int64_t T, int64_t c, int64_t index) {
  Vec y(B * c);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < c; ++j)
      y[b * c + j] = x[(b * T + index) * c + j];
  return y;
}

Vec meanTokens(const Vec &x, int64_t B, int64_t T, int64_t c, int64_t skip) {
  Vec y(B * c, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = skip; t < T; ++t)
      for (int64_t j = 0; j < c; ++j)
        y[b * c + j] += x[(b * T + t) * c + j] / double(T - skip);
  return y;
}

TEST(TakeToken, ForwardAndBackward) {
  std::mt19937 rng(5);
  int64_t B = 3, T = 5, c = 4;
  for (int64_t index : {int64_t(0), int64_t(3)}) {
    auto x = randomVector(rng, B * T * c), g = randomVector(rng, B * c);
    Vec xd = toDouble(x);
    auto y = nanVector(B * c), dx = nanVector(x.size());
    lap_cpu_take_token_forward(y.data(), x.data(), B, T, c, index);
    expectNear(y, takeToken(xd, B, T, c, index), 0.0);
    lap_cpu_take_token_backward(dx.data(), g.data(), B, T, c, index);
    expectNear(
        dx,
        finiteDifferences(
            xd, [&](const Vec &p) { return takeToken(p, B, T, c, index); }, g),
        kTol);
  }
}

TEST(MeanTokens, ForwardAndBackward) {
  std::mt19937 rng(6);
  int64_t B = 2, T = 6, c = 5;
  for (int64_t skip : {int64_t(0), int64_t(1), int64_t(5)}) {
    auto x = randomVector(rng, B * T * c), g = randomVector(rng, B * c);
    Vec xd = toDouble(x);
    auto y = nanVector(B * c), dx = nanVector(x.size());
    lap_cpu_mean_tokens_forward(y.data(), x.data(), B, T, c, skip);
    expectNear(y, meanTokens(xd, B, T, c, skip), 1e-6);
    lap_cpu_mean_tokens_backward(dx.data(), g.data(), B, T, c, skip);
    expectNear(
        dx,
        finiteDifferences(
            xd, [&](const Vec &p) { return meanTokens(p, B, T, c, skip); }, g),
        kTol);
  }
}

TEST(MeanTokens, WideRowsSpanChannelBlocks) {
  // More channels than one work item covers.
  std::mt19937 rng(7);
  int64_t B = 2, T = 3, c = 1300, skip = 1;
  auto x = randomVector(rng, B * T * c);
  auto y = nanVector(B * c);
  lap_cpu_mean_tokens_forward(y.data(), x.data(), B, T, c, skip);
  expectNear(y, meanTokens(toDouble(x), B, T, c, skip), 1e-6);
}

// A bf16 model's token kernels: the fp32 kernels on the same bf16 values,
// each result rounded once, bit for bit (the copies are exact; the sums
// over the batch or the tokens run in fp32 in the same order). Wide rows
// span mean_tokens' channel blocks; dx of prepend_tokens is nullable.
TEST(TokensBf16, KernelsAreTheFp32OnesRounded) {
  std::mt19937 rng(8);
  const int64_t B = 3, N = 5, k = 2, c = 1100, T = k + N;
  const auto x = bf16Vector(randomVector(rng, B * N * c)),
             tokens = bf16Vector(randomVector(rng, k * c)),
             dy = bf16Vector(randomVector(rng, B * T * c)),
             dpooled = bf16Vector(randomVector(rng, B * c));
  const auto x32 = valuesOf(x), tokens32 = valuesOf(tokens),
             dy32 = valuesOf(dy), dpooled32 = valuesOf(dpooled);
  const lap_bf16 nan = 0x7fc0;

  auto y32 = nanVector(B * T * c);
  std::vector<lap_bf16> y(B * T * c, nan);
  lap_cpu_prepend_tokens_forward(y32.data(), x32.data(), tokens32.data(), B, N,
                                 k, c);
  lap_cpu_prepend_tokens_forward_bf16(y.data(), x.data(), tokens.data(), B, N,
                                      k, c);
  EXPECT_EQ(y, bf16Vector(y32));

  auto dx32 = nanVector(B * N * c), dtokens32 = nanVector(k * c);
  std::vector<lap_bf16> dx(B * N * c, nan), dtokens(k * c, nan),
      dtokensOnly(k * c, nan);
  lap_cpu_prepend_tokens_backward(dx32.data(), dtokens32.data(), dy32.data(), B,
                                  N, k, c);
  lap_cpu_prepend_tokens_backward_bf16(dx.data(), dtokens.data(), dy.data(), B,
                                       N, k, c);
  lap_cpu_prepend_tokens_backward_bf16(nullptr, dtokensOnly.data(), dy.data(),
                                       B, N, k, c);
  EXPECT_EQ(dx, bf16Vector(dx32));
  EXPECT_EQ(dtokens, bf16Vector(dtokens32));
  EXPECT_EQ(dtokensOnly, dtokens);

  for (int64_t at : {int64_t(0), int64_t(4)}) { // take's index, mean's skip
    SCOPED_TRACE(at);
    auto pooled32 = nanVector(B * c), dpooledx32 = nanVector(B * T * c);
    std::vector<lap_bf16> pooled(B * c, nan), dpooledx(B * T * c, nan);
    lap_cpu_take_token_forward(pooled32.data(), dy32.data(), B, T, c, at);
    lap_cpu_take_token_forward_bf16(pooled.data(), dy.data(), B, T, c, at);
    EXPECT_EQ(pooled, bf16Vector(pooled32));
    lap_cpu_take_token_backward(dpooledx32.data(), dpooled32.data(), B, T, c,
                                at);
    lap_cpu_take_token_backward_bf16(dpooledx.data(), dpooled.data(), B, T, c,
                                     at);
    EXPECT_EQ(dpooledx, bf16Vector(dpooledx32));

    lap_cpu_mean_tokens_forward(pooled32.data(), dy32.data(), B, T, c, at);
    lap_cpu_mean_tokens_forward_bf16(pooled.data(), dy.data(), B, T, c, at);
    EXPECT_EQ(pooled, bf16Vector(pooled32));
    lap_cpu_mean_tokens_backward(dpooledx32.data(), dpooled32.data(), B, T, c,
                                 at);
    lap_cpu_mean_tokens_backward_bf16(dpooledx.data(), dpooled.data(), B, T, c,
                                      at);
    EXPECT_EQ(dpooledx, bf16Vector(dpooledx32));
  }
}

} // namespace
