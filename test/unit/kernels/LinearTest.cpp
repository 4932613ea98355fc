//===- LinearTest.cpp - lap_cpu_linear_* against a naive reference --------===//
//
// The reference is a double-precision triple loop; gradients are checked
// against central differences of L = sum(y * G) for a random G.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

namespace {

using namespace lap::test;

/// Outputs start as NaN, so a kernel that accumulates instead of
/// overwriting (or skips an element) fails.
struct Shape {
  int64_t n, in, out;
};

/// y = x W^T + b in double; b may be empty.
std::vector<double> referenceForward(const std::vector<double> &x,
                                     const std::vector<double> &w,
                                     const std::vector<double> &b, Shape s) {
  std::vector<double> y(s.n * s.out);
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t o = 0; o < s.out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int64_t k = 0; k < s.in; ++k)
        acc += x[i * s.in + k] * w[o * s.in + k];
      y[i * s.out + o] = acc;
    }
  return y;
}

/// dL/dv by central differences, L = sum(referenceForward * G), where v is
/// one of x, w, b.
std::vector<double> finiteDifferences(std::vector<double> &v,
                                      const std::vector<double> &x,
                                      const std::vector<double> &w,
                                      const std::vector<double> &b,
                                      const std::vector<double> &g, Shape s) {
  return centralDifferences(v, [&](const std::vector<double> &) {
    return weightedSum(referenceForward(x, w, b, s), g);
  });
}

TEST(Linear, ForwardMatchesReference) {
  std::mt19937 rng(1);
  // The large shape takes oneDNN's blocked path and the parallel bias add.
  for (Shape s : {Shape{5, 7, 3}, Shape{1, 1, 1}, Shape{300, 96, 130}}) {
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out);
    auto y = nanVector(s.n * s.out);
    lap_cpu_linear_forward(y.data(), x.data(), w.data(), b.data(), s.n, s.in,
                           s.out, LAP_MATMUL_FP32);
    // fp32 dot products of <= 96 terms of size <= 1: error well below 1e-4.
    expectNear(y, referenceForward(toDouble(x), toDouble(w), toDouble(b), s),
               1e-4);
    lap_cpu_linear_forward(y.data(), x.data(), w.data(), nullptr, s.n, s.in,
                           s.out, LAP_MATMUL_FP32);
    expectNear(y, referenceForward(toDouble(x), toDouble(w), {}, s), 1e-4);
  }
}

TEST(Linear, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(2);
  Shape s{4, 5, 3};
  auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
       b = randomVector(rng, s.out), g = randomVector(rng, s.n * s.out);
  auto dx = nanVector(x.size()), dw = nanVector(w.size()),
       db = nanVector(b.size());
  lap_cpu_linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  auto xd = toDouble(x), wd = toDouble(w), bd = toDouble(b), gd = toDouble(g);
  // L is linear in each argument, so the differences are exact up to
  // rounding (~1e-10); 1e-5 covers the kernel's fp32 sums of <= 4 terms.
  expectNear(dx, finiteDifferences(xd, xd, wd, bd, gd, s), 1e-5);
  expectNear(dw, finiteDifferences(wd, xd, wd, bd, gd, s), 1e-5);
  expectNear(db, finiteDifferences(bd, xd, wd, bd, gd, s), 1e-5);
}

TEST(Linear, BackwardLargeShapeMatchesReference) {
  // Exercises the chunked (parallel, deterministic) bias gradient.
  std::mt19937 rng(3);
  Shape s{2048, 48, 40};
  auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
       g = randomVector(rng, s.n * s.out);
  auto dx = nanVector(x.size()), dw = nanVector(w.size()),
       db = nanVector(s.out);
  lap_cpu_linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  std::vector<double> wantDx(x.size(), 0.0), wantDw(w.size(), 0.0),
      wantDb(s.out, 0.0);
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t o = 0; o < s.out; ++o) {
      double gi = g[i * s.out + o];
      wantDb[o] += gi;
      for (int64_t k = 0; k < s.in; ++k) {
        wantDx[i * s.in + k] += gi * w[o * s.in + k];
        wantDw[o * s.in + k] += gi * x[i * s.in + k];
      }
    }
  // dx sums 40 terms; dw and db sum 2048 terms of size <= 1 in fp32.
  expectNear(dx, wantDx, 1e-4);
  expectNear(dw, wantDw, 2e-3);
  expectNear(db, wantDb, 2e-3);
  // Same inputs, bitwise the same bias gradient.
  auto again = nanVector(s.out);
  lap_cpu_linear_backward(nullptr, nullptr, again.data(), g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  EXPECT_EQ(db, again);
}

TEST(Linear, NullGradientsAreSkipped) {
  std::mt19937 rng(4);
  Shape s{6, 4, 5};
  auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
       g = randomVector(rng, s.n * s.out);
  std::vector<float> dx(x.size()), dw(w.size()), db(s.out);
  lap_cpu_linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  // Each output alone equals its value from the full call.
  auto dxOnly = nanVector(dx.size()), dwOnly = nanVector(dw.size()),
       dbOnly = nanVector(db.size());
  lap_cpu_linear_backward(dxOnly.data(), nullptr, nullptr, g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  lap_cpu_linear_backward(nullptr, dwOnly.data(), nullptr, g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  lap_cpu_linear_backward(nullptr, nullptr, dbOnly.data(), g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  lap_cpu_linear_backward(nullptr, nullptr, nullptr, g.data(), x.data(),
                          w.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  EXPECT_EQ(dx, dxOnly);
  EXPECT_EQ(dw, dwOnly);
  EXPECT_EQ(db, dbOnly);
}

TEST(Linear, EmptyBatch) {
  // No rows: the weight and bias gradients are zero, not left untouched.
  std::vector<float> w(6, 1.0f), dw = nanVector(6), db = nanVector(3);
  float unused = 0.0f;
  lap_cpu_linear_backward(nullptr, dw.data(), db.data(), &unused, &unused,
                          w.data(), 0, 2, 3, LAP_MATMUL_FP32);
  EXPECT_EQ(dw, std::vector<float>(6, 0.0f));
  EXPECT_EQ(db, std::vector<float>(3, 0.0f));
}

// The heads' projection: q, k, v are the row blocks of one linear layer's
// output (reference: the double triple loop on the whole weight, split by
// columns), and its gradients are those of the whole layer, against central
// differences of L = sum(q Gq) + sum(k Gk) + sum(v Gv).
TEST(Linear, HeadsAreTheRowBlocksOfOneProjection) {
  std::mt19937 rng(5);
  for (auto [n, in, hq, hkv] : {std::array<int64_t, 4>{3, 5, 4, 2},
                                std::array<int64_t, 4>{300, 48, 64, 32}}) {
    Shape s{n, in, hq + 2 * hkv};
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out), g = randomVector(rng, s.n * s.out);
    auto q = nanVector(n * hq), k = nanVector(n * hkv), v = nanVector(n * hkv);
    lap_cpu_linear_heads_forward(q.data(), k.data(), v.data(), x.data(),
                                 w.data(), b.data(), n, in, hq, hkv,
                                 LAP_MATMUL_FP32);
    auto xd = toDouble(x), wd = toDouble(w), bd = toDouble(b), gd = toDouble(g);
    std::vector<double> y = referenceForward(xd, wd, bd, s);
    // Columns [start, start + width) of y's rows.
    auto columns = [&](const std::vector<double> &m, int64_t start,
                       int64_t width) {
      std::vector<double> part;
      for (int64_t i = 0; i < n; ++i)
        part.insert(part.end(), m.begin() + i * s.out + start,
                    m.begin() + i * s.out + start + width);
      return part;
    };
    expectNear(q, columns(y, 0, hq), 1e-4);
    expectNear(k, columns(y, hq, hkv), 1e-4);
    expectNear(v, columns(y, hq + hkv, hkv), 1e-4);

    std::vector<float> gq, gk, gv;
    for (auto [part, start, width] :
         {std::tuple{&gq, int64_t(0), hq}, std::tuple{&gk, hq, hkv},
          std::tuple{&gv, hq + hkv, hkv}})
      for (double d : columns(gd, start, width))
        part->push_back(float(d));
    auto dx = nanVector(x.size()), dw = nanVector(w.size()),
         db = nanVector(b.size());
    lap_cpu_linear_heads_backward(dx.data(), dw.data(), db.data(), gq.data(),
                                  gk.data(), gv.data(), x.data(), w.data(), n,
                                  in, hq, hkv, LAP_MATMUL_FP32);
    if (n > 10) {
      // The whole layer's kernel on the joined gradient: the same sums.
      auto wantDx = nanVector(dx.size()), wantDw = nanVector(dw.size()),
           wantDb = nanVector(db.size());
      lap_cpu_linear_backward(wantDx.data(), wantDw.data(), wantDb.data(),
                              g.data(), x.data(), w.data(), n, in, s.out,
                              LAP_MATMUL_FP32);
      // Sums of <= 300 products of size <= 1, in fp32 in either order.
      expectNear(dx, toDouble(wantDx), 1e-4);
      expectNear(dw, toDouble(wantDw), 1e-3);
      expectNear(db, toDouble(wantDb), 1e-3);
      continue;
    }
    expectNear(dx, finiteDifferences(xd, xd, wd, bd, gd, s), 1e-5);
    expectNear(dw, finiteDifferences(wd, xd, wd, bd, gd, s), 1e-5);
    expectNear(db, finiteDifferences(bd, xd, wd, bd, gd, s), 1e-5);
  }
}

//--- The tanh GELU fused after a linear layer, and its gradient ------------

double geluTanh(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

TEST(LinearGelu, ForwardMatchesReference) {
  std::mt19937 rng(6);
  // The large shape takes oneDNN's blocked path and the parallel pass.
  for (Shape s : {Shape{5, 7, 3}, Shape{1, 1, 1}, Shape{300, 96, 130}}) {
    // Pre-activations up to ~4 in size: both of tanhApprox's branches.
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out, -2.0f, 2.0f);
    for (bool bias : {true, false}) {
      std::vector<double> pre =
          referenceForward(toDouble(x), toDouble(w),
                           bias ? toDouble(b) : std::vector<double>{}, s);
      std::vector<double> y(pre.size());
      for (size_t i = 0; i < pre.size(); ++i)
        y[i] = geluTanh(pre[i]);
      // With the pre-activation kept, and without (y then takes it first).
      auto got = nanVector(y.size()), gotPre = nanVector(pre.size());
      lap_cpu_linear_gelu_forward(got.data(), gotPre.data(), x.data(), w.data(),
                                  bias ? b.data() : nullptr, s.n, s.in, s.out,
                                  LAP_MATMUL_FP32);
      // fp32 dot products of <= 96 terms of size <= 1, and a tanh within a
      // few ulp: well below 1e-4.
      expectNear(gotPre, pre, 1e-4);
      expectNear(got, y, 1e-4);
      auto alone = nanVector(y.size());
      lap_cpu_linear_gelu_forward(alone.data(), nullptr, x.data(), w.data(),
                                  bias ? b.data() : nullptr, s.n, s.in, s.out,
                                  LAP_MATMUL_FP32);
      EXPECT_EQ(alone, got);
    }
  }
}

/// L = sum(G * (gelu_tanh(pre) W^T)) for pre [n, in], W [out, in], G [n, out].
double geluLinearLoss(const std::vector<double> &pre,
                      const std::vector<double> &w,
                      const std::vector<double> &g, Shape s) {
  std::vector<double> a(pre.size());
  for (size_t i = 0; i < pre.size(); ++i)
    a[i] = geluTanh(pre[i]);
  return weightedSum(referenceForward(a, w, {}, s), g);
}

TEST(LinearGelu, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(7);
  Shape s{4, 6, 3};
  auto pre = randomVector(rng, s.n * s.in, -3.0f, 3.0f),
       w = randomVector(rng, s.out * s.in), g = randomVector(rng, s.n * s.out);
  auto dpre = nanVector(pre.size()), dbias = nanVector(s.in);
  lap_cpu_gelu_linear_backward(dpre.data(), dbias.data(), g.data(), w.data(),
                               pre.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  auto preD = toDouble(pre), wd = toDouble(w), gd = toDouble(g);
  std::vector<double> want = centralDifferences(
      preD, [&](const auto &p) { return geluLinearLoss(p, wd, gd, s); });
  std::vector<double> wantBias(s.in, 0.0);
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t j = 0; j < s.in; ++j)
      wantBias[j] += want[i * s.in + j];
  // Smooth in pre: central differences of step 1e-6 are good to ~1e-9; the
  // kernel's fp32 sums of <= 4 terms to ~1e-6.
  expectNear(dpre, want, 1e-5);
  expectNear(dbias, wantBias, 1e-5);
}

TEST(LinearGelu, BackwardLargeShapeSumsTheBiasInChunks) {
  // Enough rows for several chunks of the deterministic column sums.
  std::mt19937 rng(8);
  Shape s{2048, 40, 24};
  auto pre = randomVector(rng, s.n * s.in, -3.0f, 3.0f),
       w = randomVector(rng, s.out * s.in), g = randomVector(rng, s.n * s.out);
  auto dpre = nanVector(pre.size()), dbias = nanVector(s.in);
  lap_cpu_gelu_linear_backward(dpre.data(), dbias.data(), g.data(), w.data(),
                               pre.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  std::vector<double> want(pre.size()), wantBias(s.in, 0.0);
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t j = 0; j < s.in; ++j) {
      double da = 0.0;
      for (int64_t o = 0; o < s.out; ++o)
        da += double(g[i * s.out + o]) * w[o * s.in + j];
      double x = pre[i * s.in + j], h = 1e-6;
      double slope = (geluTanh(x + h) - geluTanh(x - h)) / (2 * h);
      want[i * s.in + j] = da * slope;
      wantBias[j] += da * slope;
    }
  // dpre: sums of 24 terms; the bias: 2048 rows of size <= ~5, in fp32.
  expectNear(dpre, want, 1e-4);
  expectNear(dbias, wantBias, 1e-2);
  // Without the bias gradient, the same dpre bit for bit.
  auto alone = nanVector(pre.size());
  lap_cpu_gelu_linear_backward(alone.data(), nullptr, g.data(), w.data(),
                               pre.data(), s.n, s.in, s.out, LAP_MATMUL_FP32);
  EXPECT_EQ(alone, dpre);
}

} // namespace
