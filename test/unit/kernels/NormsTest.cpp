//===- NormsTest.cpp - norms, weight norm and LayerScale ------------------===//
//
// Double-precision naive references; every gradient against central
// differences of L = sum(y * G) for a random G. Tolerances: the differences
// are accurate to ~1e-9 (h = 1e-6 in double), so they bound the kernels' fp32
// error, ~1e-6 relative on these O(1) values; 1e-4 leaves margin.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

// The kernels run on libgomp's pool; the tests vary its size.
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace {

using namespace lap::test;

using Vec = std::vector<double>;

/// dL/dp by central differences, L = sum(f(p) * g).
Vec finiteDifferences(Vec p, const std::function<Vec(const Vec &)> &f,
                      const std::vector<float> &g) {
  return centralDifferences(p,
                            [&](const Vec &q) { return weightedSum(f(q), g); });
}

//--- References
//----------------------------------------------------------------

/// w, b empty = absent.
Vec layerNorm(const Vec &x, const Vec &w, const Vec &b, int64_t n, int64_t c,
              double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < c; ++j)
      mean += x[i * c + j] / c;
    for (int64_t j = 0; j < c; ++j)
      var += (x[i * c + j] - mean) * (x[i * c + j] - mean) / c;
    for (int64_t j = 0; j < c; ++j)
      y[i * c + j] = (x[i * c + j] - mean) / std::sqrt(var + eps) *
                         (w.empty() ? 1.0 : w[j]) +
                     (b.empty() ? 0.0 : b[j]);
  }
  return y;
}

Vec rmsNorm(const Vec &x, const Vec &w, int64_t n, int64_t c, double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double ms = 0.0;
    for (int64_t j = 0; j < c; ++j)
      ms += x[i * c + j] * x[i * c + j] / c;
    for (int64_t j = 0; j < c; ++j)
      y[i * c + j] =
          x[i * c + j] / std::sqrt(ms + eps) * (w.empty() ? 1.0 : w[j]);
  }
  return y;
}

Vec l2Normalize(const Vec &x, int64_t n, int64_t c, double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double ss = 0.0;
    for (int64_t j = 0; j < c; ++j)
      ss += x[i * c + j] * x[i * c + j];
    double d = std::max(std::sqrt(ss), eps);
    for (int64_t j = 0; j < c; ++j)
      y[i * c + j] = x[i * c + j] / d;
  }
  return y;
}

Vec weightNorm(const Vec &v, const Vec &g, int64_t k, int64_t d) {
  Vec w(v.size());
  for (int64_t r = 0; r < k; ++r) {
    double ss = 0.0;
    for (int64_t j = 0; j < d; ++j)
      ss += v[r * d + j] * v[r * d + j];
    for (int64_t j = 0; j < d; ++j)
      w[r * d + j] = g[r] * v[r * d + j] / std::sqrt(ss);
  }
  return w;
}

Vec layerScale(const Vec &x, const Vec &gamma, int64_t n, int64_t c) {
  Vec y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      y[i * c + j] = x[i * c + j] * gamma[j];
  return y;
}

//--- LayerNorm
//-----------------------------------------------------------------

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(2);
  int64_t n = 4, c = 7;
  float eps = 1e-5f;
  auto x = randomVector(rng, n * c), w = randomVector(rng, c),
       b = randomVector(rng, c), g = randomVector(rng, n * c);
  Vec xd = toDouble(x), wd = toDouble(w), bd = toDouble(b);
  auto dx = nanVector(x.size()), dw = nanVector(c), db = nanVector(c);
  lap_cpu_layer_norm_backward(dx.data(), dw.data(), db.data(), g.data(),
                              x.data(), w.data(), n, c, eps);
  expectNear(
      dx,
      finiteDifferences(
          xd, [&](const Vec &p) { return layerNorm(p, wd, bd, n, c, eps); }, g),
      1e-4);
  expectNear(
      dw,
      finiteDifferences(
          wd, [&](const Vec &p) { return layerNorm(xd, p, bd, n, c, eps); }, g),
      1e-4);
  expectNear(
      db,
      finiteDifferences(
          bd, [&](const Vec &p) { return layerNorm(xd, wd, p, n, c, eps); }, g),
      1e-4);

  // Without a weight, and with the parameter gradients skipped.
  auto dxPlain = nanVector(x.size());
  lap_cpu_layer_norm_backward(dxPlain.data(), nullptr, nullptr, g.data(),
                              x.data(), nullptr, n, c, eps);
  expectNear(
      dxPlain,
      finiteDifferences(
          xd, [&](const Vec &p) { return layerNorm(p, {}, {}, n, c, eps); }, g),
      1e-4);
  auto dxOnly = nanVector(x.size()), dbOnly = nanVector(c);
  lap_cpu_layer_norm_backward(dxOnly.data(), nullptr, dbOnly.data(), g.data(),
                              x.data(), w.data(), n, c, eps);
  EXPECT_EQ(dxOnly, dx);
  EXPECT_EQ(dbOnly, db);
}

TEST(LayerNorm, ParameterGradientsLargeAreDeterministic) {
  // Enough rows for several chunks: race-free, reproducible column sums.
  std::mt19937 rng(3);
  int64_t n = 4096, c = 96;
  float eps = 1e-5f;
  auto x = randomVector(rng, n * c), w = randomVector(rng, c),
       g = randomVector(rng, n * c);
  auto dx = nanVector(x.size()), dw = nanVector(c), db = nanVector(c);
  lap_cpu_layer_norm_backward(dx.data(), dw.data(), db.data(), g.data(),
                              x.data(), w.data(), n, c, eps);
  Vec xhat = layerNorm(toDouble(x), {}, {}, n, c, eps);
  Vec wantDw(c, 0.0), wantDb(c, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      wantDw[j] += g[i * c + j] * xhat[i * c + j];
      wantDb[j] += g[i * c + j];
    }
  // 4096 fp32 additions of terms of size <= ~2.
  expectNear(dw, wantDw, 5e-3);
  expectNear(db, wantDb, 5e-3);
  // Bitwise the same on 1 and 3 threads: the chunks follow the shape.
  int threads = omp_get_max_threads();
  for (int t : {1, 3}) {
    omp_set_num_threads(t);
    auto dw2 = nanVector(c), db2 = nanVector(c);
    lap_cpu_layer_norm_backward(dx.data(), dw2.data(), db2.data(), g.data(),
                                x.data(), w.data(), n, c, eps);
    EXPECT_EQ(dw, dw2) << t << " threads";
    EXPECT_EQ(db, db2) << t << " threads";
  }
  omp_set_num_threads(threads);
}

//--- RMSNorm
//-------------------------------------------------------------------

TEST(RMSNorm, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(5);
  int64_t n = 4, c = 9;
  float eps = 1e-6f;
  auto x = randomVector(rng, n * c), w = randomVector(rng, c),
       g = randomVector(rng, n * c);
  Vec xd = toDouble(x), wd = toDouble(w);
  auto dx = nanVector(x.size()), dw = nanVector(c);
  lap_cpu_rms_norm_backward(dx.data(), dw.data(), g.data(), x.data(), w.data(),
                            n, c, eps);
  expectNear(
      dx,
      finiteDifferences(
          xd, [&](const Vec &p) { return rmsNorm(p, wd, n, c, eps); }, g),
      1e-4);
  expectNear(
      dw,
      finiteDifferences(
          wd, [&](const Vec &p) { return rmsNorm(xd, p, n, c, eps); }, g),
      1e-4);
  // Parameter-free (nanochat): no weight, no weight gradient.
  auto dxPlain = nanVector(x.size());
  lap_cpu_rms_norm_backward(dxPlain.data(), nullptr, g.data(), x.data(),
                            nullptr, n, c, eps);
  expectNear(
      dxPlain,
      finiteDifferences(
          xd, [&](const Vec &p) { return rmsNorm(p, {}, n, c, eps); }, g),
      1e-4);
}

//--- L2 normalisation and weight norm
//--------------------------------------------

// A bf16 model's norm gradients: the fp32 kernels' on the bf16 values,
// rounded (the column sums too), with and without weights, and rows enough
// for the column sums to run in several chunks.
TEST(Norms, Bf16BackwardsRoundTheFp32Results) {
  std::mt19937 rng(21);
  for (int64_t n : {int64_t(7), int64_t(300)}) {
    const int64_t c = 130;
    auto x = bf16Vector(randomVector(rng, n * c)),
         dy = bf16Vector(randomVector(rng, n * c)),
         w = bf16Vector(randomVector(rng, c));
    auto fx = valuesOf(x), fdy = valuesOf(dy), fw = valuesOf(w);
    for (bool weighted : {true, false}) {
      SCOPED_TRACE("n " + std::to_string(n) + (weighted ? ", w" : ", no w"));
      const lap_bf16 *wb = weighted ? w.data() : nullptr;
      const float *wf = weighted ? fw.data() : nullptr;
      std::vector<lap_bf16> dx(x.size(), 0xffff), dw(c, 0xffff), db(c, 0xffff);
      auto wantDx = nanVector(x.size()), wantDw = nanVector(c),
           wantDb = nanVector(c);
      lap_cpu_layer_norm_backward_bf16(dx.data(), dw.data(), db.data(),
                                       dy.data(), x.data(), wb, n, c, 1e-5f);
      lap_cpu_layer_norm_backward(wantDx.data(), wantDw.data(), wantDb.data(),
                                  fdy.data(), fx.data(), wf, n, c, 1e-5f);
      expectRoundedFrom(dx, wantDx, "layer norm dx");
      expectRoundedFrom(dw, wantDw, "layer norm dw");
      expectRoundedFrom(db, wantDb, "layer norm db");

      lap_cpu_rms_norm_backward_bf16(dx.data(), dw.data(), dy.data(), x.data(),
                                     wb, n, c, 1e-5f);
      lap_cpu_rms_norm_backward(wantDx.data(), wantDw.data(), fdy.data(),
                                fx.data(), wf, n, c, 1e-5f);
      expectRoundedFrom(dx, wantDx, "rms norm dx");
      expectRoundedFrom(dw, wantDw, "rms norm dw");
    }
  }
}

TEST(L2Normalize, ForwardAndBackward) {
  std::mt19937 rng(6);
  int64_t n = 3, c = 8;
  float eps = 0.1f;
  auto x = randomVector(rng, n * c), g = randomVector(rng, n * c);
  // Row 1 has norm < eps: the clamp is active there.
  for (int64_t j = 0; j < c; ++j)
    x[c + j] *= 0.01f;
  Vec xd = toDouble(x);
  auto y = nanVector(x.size()), dx = nanVector(x.size());
  lap_cpu_l2_normalize_forward(y.data(), x.data(), n, c, eps);
  expectNear(y, l2Normalize(xd, n, c, eps), 1e-6);
  lap_cpu_l2_normalize_backward(dx.data(), g.data(), x.data(), n, c, eps);
  expectNear(
      dx,
      finiteDifferences(
          xd, [&](const Vec &p) { return l2Normalize(p, n, c, eps); }, g),
      1e-4);
}

TEST(WeightNorm, ForwardAndBackward) {
  std::mt19937 rng(7);
  int64_t k = 4, d = 11;
  auto v = randomVector(rng, k * d), gain = randomVector(rng, k, 0.5f, 2.0f),
       g = randomVector(rng, k * d);
  Vec vd = toDouble(v), gd = toDouble(gain);
  auto w = nanVector(v.size());
  lap_cpu_weight_norm_forward(w.data(), v.data(), gain.data(), k, d);
  expectNear(w, weightNorm(vd, gd, k, d), 1e-6);
  auto dv = nanVector(v.size()), dg = nanVector(k);
  lap_cpu_weight_norm_backward(dv.data(), dg.data(), g.data(), v.data(),
                               gain.data(), k, d);
  expectNear(dv,
             finiteDifferences(
                 vd, [&](const Vec &p) { return weightNorm(p, gd, k, d); }, g),
             1e-4);
  expectNear(dg,
             finiteDifferences(
                 gd, [&](const Vec &p) { return weightNorm(vd, p, k, d); }, g),
             1e-4);
}

//--- LayerScale
//----------------------------------------------------------------

TEST(LayerScale, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(8);
  int64_t n = 5, c = 6;
  auto x = randomVector(rng, n * c), gamma = randomVector(rng, c),
       g = randomVector(rng, n * c);
  Vec xd = toDouble(x), gammad = toDouble(gamma);
  auto dx = nanVector(x.size()), dgamma = nanVector(c);
  lap_cpu_layer_scale_backward(dx.data(), dgamma.data(), g.data(), x.data(),
                               gamma.data(), n, c);
  // Bilinear: differences exact to rounding; fp32 sums of 5 terms.
  expectNear(
      dx,
      finiteDifferences(
          xd, [&](const Vec &p) { return layerScale(p, gammad, n, c); }, g),
      1e-5);
  expectNear(
      dgamma,
      finiteDifferences(
          gammad, [&](const Vec &p) { return layerScale(xd, p, n, c); }, g),
      1e-5);
  auto dgammaOnly = nanVector(c);
  lap_cpu_layer_scale_backward(nullptr, dgammaOnly.data(), g.data(), x.data(),
                               gamma.data(), n, c);
  EXPECT_EQ(dgammaOnly, dgamma);
}

// A bf16 model's: the fp32 kernel on the bf16 values, rounded, bit for
// bit (dgamma's column sums in the same chunks).
TEST(LayerScale, Bf16KernelIsTheFp32OneRounded) {
  std::mt19937 rng(43);
  const int64_t n = 300, c = 130;
  auto dy = bf16Vector(randomVector(rng, n * c)),
       x = bf16Vector(randomVector(rng, n * c)),
       gamma = bf16Vector(randomVector(rng, c));
  std::vector<lap_bf16> dx(dy.size(), 0xffff), dgamma(c, 0xffff);
  auto wantDx = nanVector(dy.size()), wantDgamma = nanVector(c);
  lap_cpu_layer_scale_backward_bf16(dx.data(), dgamma.data(), dy.data(),
                                    x.data(), gamma.data(), n, c);
  lap_cpu_layer_scale_backward(wantDx.data(), wantDgamma.data(),
                               valuesOf(dy).data(), valuesOf(x).data(),
                               valuesOf(gamma).data(), n, c);
  EXPECT_EQ(dx, bf16Vector(wantDx));
  EXPECT_EQ(dgamma, bf16Vector(wantDgamma));
}

TEST(LayerScale, LargeIsDeterministic) {
  std::mt19937 rng(9);
  int64_t n = 3000, c = 64;
  auto x = randomVector(rng, n * c), gamma = randomVector(rng, c),
       g = randomVector(rng, n * c);
  auto first = nanVector(c), second = nanVector(c);
  lap_cpu_layer_scale_backward(nullptr, first.data(), g.data(), x.data(),
                               gamma.data(), n, c);
  lap_cpu_layer_scale_backward(nullptr, second.data(), g.data(), x.data(),
                               gamma.data(), n, c);
  EXPECT_EQ(first, second);
  Vec want(c, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      want[j] += double(g[i * c + j]) * x[i * c + j];
  expectNear(first, want, 2e-3); // 3000 fp32 additions of terms <= 1
}

} // namespace
