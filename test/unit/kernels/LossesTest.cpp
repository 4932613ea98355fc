//===- LossesTest.cpp - cross-entropy and row losses ----------------------===//
//
// References follow the op definitions literally in double precision (a
// softmax with max subtraction, libm's exp/log/tanh). Gradients against
// central differences of the reference loss, scaled by dloss.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace lap::test;

using Vec = std::vector<double>;

/// log sum_k exp(z_k) of one row.
double logSumExp(const Vec &z) {
  double m = *std::max_element(z.begin(), z.end()), s = 0.0;
  for (double v : z)
    s += std::exp(v - m);
  return m + std::log(s);
}

//--- Cross-entropy
//---------------------------------------------------------------

struct CrossEntropy {
  double smoothing, softcap;
};

double crossEntropy(const Vec &logits, const std::vector<int32_t> &targets,
                    int64_t V, CrossEntropy ce) {
  double total = 0.0;
  int64_t count = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == -1)
      continue;
    ++count;
    Vec z(logits.begin() + i * V, logits.begin() + (i + 1) * V);
    if (ce.softcap > 0)
      for (double &v : z)
        v = ce.softcap * std::tanh(v / ce.softcap);
    double lse = logSumExp(z);
    for (int64_t k = 0; k < V; ++k) {
      double q = (1 - ce.smoothing) * (k == targets[i]) + ce.smoothing / V;
      total -= q * (z[k] - lse);
    }
  }
  return count ? total / count : 0.0;
}

const CrossEntropy kVariants[] = {
    {0.0, 0.0}, {0.1, 0.0}, {0.0, 5.0}, {0.2, 5.0}};

TEST(CrossEntropy, ForwardMatchesReference) {
  std::mt19937 rng(1);
  int64_t n = 6, V = 11;
  // Logits beyond the cap, so capping changes the loss.
  auto logits = randomVector(rng, n * V, -8.0f, 8.0f);
  std::vector<int32_t> targets = {3, -1, 0, 10, -1, 7};
  for (CrossEntropy ce : kVariants) {
    float loss = std::numeric_limits<float>::quiet_NaN();
    lap_cpu_cross_entropy_forward(&loss, logits.data(), targets.data(), n, V,
                                  float(ce.smoothing), float(ce.softcap));
    // Losses ~3: fp32 with a few-ulp exp/tanh is within ~1e-6 of it.
    EXPECT_NEAR(loss, crossEntropy(toDouble(logits), targets, V, ce), 1e-5)
        << "smoothing " << ce.smoothing << " softcap " << ce.softcap;
  }
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(2);
  int64_t n = 5, V = 9;
  auto logits = randomVector(rng, n * V, -8.0f, 8.0f);
  std::vector<int32_t> targets = {2, -1, 8, 0, 2};
  float dloss = 0.7f;
  for (CrossEntropy ce : kVariants) {
    auto dlogits = nanVector(logits.size());
    lap_cpu_cross_entropy_backward(dlogits.data(), &dloss, logits.data(),
                                   targets.data(), n, V, float(ce.smoothing),
                                   float(ce.softcap));
    Vec p = toDouble(logits);
    auto loss = [&](const Vec &l) {
      return dloss * crossEntropy(l, targets, V, ce);
    };
    for (size_t i = 0; i < p.size(); ++i) {
      // h = 1e-5 in double: differences good to ~1e-9; the fp32 gradient
      // (entries up to ~0.2) to ~1e-7.
      double want = centralDifference(p, i, loss, 1e-5);
      EXPECT_NEAR(dlogits[i], want, 2e-6)
          << "at " << i << " smoothing " << ce.smoothing << " softcap "
          << ce.softcap;
    }
    for (int64_t k = 0; k < V; ++k)
      EXPECT_EQ(dlogits[V + k], 0.0f); // ignored row: exactly zero
  }
}

TEST(CrossEntropy, AllIgnored) {
  std::vector<float> logits(2 * 4, 1.0f);
  std::vector<int32_t> targets = {-1, -1};
  float loss = std::numeric_limits<float>::quiet_NaN(), dloss = 1.0f;
  lap_cpu_cross_entropy_forward(&loss, logits.data(), targets.data(), 2, 4,
                                0.1f, 0.0f);
  EXPECT_EQ(loss, 0.0f);
  auto dlogits = nanVector(logits.size());
  lap_cpu_cross_entropy_backward(dlogits.data(), &dloss, logits.data(),
                                 targets.data(), 2, 4, 0.1f, 0.0f);
  EXPECT_EQ(dlogits, std::vector<float>(logits.size(), 0.0f));
}

// A bf16 model's cross-entropy: the fp32 kernel's on the bf16 values, the
// loss bit for bit and the gradient rounded, with and without a softcap
// and label smoothing, with ignored positions.
TEST(CrossEntropy, Bf16KernelsAreTheFp32OnesRounded) {
  std::mt19937 rng(31);
  const int64_t n = 23, V = 517;
  auto logits = bf16Vector(randomVector(rng, n * V, -6.0f, 6.0f));
  auto values = valuesOf(logits);
  std::vector<int32_t> targets(n);
  std::uniform_int_distribution<int32_t> id(0, V - 1);
  for (int32_t &t : targets)
    t = id(rng);
  targets[4] = targets[11] = -1;
  const float dloss = 0.75f;
  for (float softcap : {0.0f, 5.0f})
    for (float smoothing : {0.0f, 0.1f}) {
      SCOPED_TRACE("softcap " + std::to_string(softcap) + ", smoothing " +
                   std::to_string(smoothing));
      float loss = NAN, want = NAN;
      lap_cpu_cross_entropy_forward_bf16(&loss, logits.data(), targets.data(),
                                         n, V, smoothing, softcap);
      lap_cpu_cross_entropy_forward(&want, values.data(), targets.data(), n, V,
                                    smoothing, softcap);
      EXPECT_EQ(loss, want);
      std::vector<lap_bf16> d(logits.size(), 0xffff);
      auto wantD = nanVector(logits.size());
      lap_cpu_cross_entropy_backward_bf16(d.data(), &dloss, logits.data(),
                                          targets.data(), n, V, smoothing,
                                          softcap);
      lap_cpu_cross_entropy_backward(wantD.data(), &dloss, values.data(),
                                     targets.data(), n, V, smoothing, softcap);
      EXPECT_EQ(d, bf16Vector(wantD));
    }
}

TEST(CrossEntropy, WideVocabulary) {
  // 64K logits per row, many blocks of the online softmax: rising logits
  // move the running max every block, falling ones never, and a spike in
  // the middle moves it once.
  std::mt19937 rng(3);
  int64_t n = 3, V = 65536;
  auto noise = randomVector(rng, n * V, -0.5f, 0.5f);
  std::vector<float> logits(n * V);
  for (int64_t j = 0; j < V; ++j) {
    logits[j] = 12.0f * j / V + noise[j];
    logits[V + j] = -12.0f * j / V + noise[V + j];
    logits[2 * V + j] = noise[2 * V + j] * 4.0f;
  }
  logits[2 * V + V / 2] = 20.0f;
  std::vector<int32_t> targets = {int32_t(V - 1), 5, int32_t(V / 2 + 1)};
  Vec p = toDouble(logits);
  float dloss = 1.0f;
  for (CrossEntropy ce : {CrossEntropy{0.0, 0.0}, CrossEntropy{0.1, 15.0}}) {
    float loss = 0.0f;
    lap_cpu_cross_entropy_forward(&loss, logits.data(), targets.data(), n, V,
                                  float(ce.smoothing), float(ce.softcap));
    // Losses ~10; 64K fp32 exponentials summed by blocks into a double.
    EXPECT_NEAR(loss, crossEntropy(p, targets, V, ce), 1e-4);

    auto dlogits = nanVector(logits.size());
    lap_cpu_cross_entropy_backward(dlogits.data(), &dloss, logits.data(),
                                   targets.data(), n, V, float(ce.smoothing),
                                   float(ce.softcap));
    auto lossOf = [&](const Vec &l) { return crossEntropy(l, targets, V, ce); };
    // Sampled coordinates: targets, maxima, and a few others. Entries are
    // ~1e-5 .. 0.3; h = 1e-3 keeps the differences' rounding (~1e-12)
    // and truncation (~1e-6 relative) small against them.
    for (size_t i : {size_t(V - 1), size_t(0), size_t(777), size_t(V + 5),
                     size_t(V), size_t(V + 40000), size_t(2 * V + V / 2),
                     size_t(2 * V + V / 2 + 1), size_t(3 * V - 1)}) {
      double want = centralDifference(p, i, lossOf, 1e-3);
      EXPECT_NEAR(dlogits[i], want, 1e-3 * std::fabs(want) + 1e-8)
          << "at " << i << " softcap " << ce.softcap;
    }
  }
}

//--- The lm_head and cross-entropy fused
//------------------------------------------------

/// logits [n, V] = x [n, C] w^T, w [V, C], in double.
Vec logitsOf(const Vec &x, const Vec &w, int64_t n, int64_t C, int64_t V) {
  Vec z(n * V, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t v = 0; v < V; ++v)
      for (int64_t c = 0; c < C; ++c)
        z[i * V + v] += x[i * C + c] * w[v * C + c];
  return z;
}

struct Fused {
  float loss = NAN;
  std::vector<float> dx, dw;
};

Fused runFused(const std::vector<float> &x, const std::vector<float> &w,
               const std::vector<int32_t> &targets, int64_t C, int64_t V,
               float dloss, CrossEntropy ce,
               lap_matmul precision = LAP_MATMUL_FP32) {
  const int64_t n = int64_t(targets.size());
  Fused f{NAN, nanVector(n * C), nanVector(V * C)};
  lap_cpu_linear_cross_entropy(&f.loss, f.dx.data(), f.dw.data(), &dloss,
                               x.data(), w.data(), targets.data(), n, C, V,
                               float(ce.smoothing), float(ce.softcap),
                               precision);
  return f;
}

// Loss and both gradients against central differences of the double
// reference CE(x w^T), every entry (h = 1e-5: differences good to ~1e-9).
TEST(LinearCrossEntropy, MatchesFiniteDifferences) {
  std::mt19937 rng(4);
  const int64_t n = 5, C = 4, V = 9;
  auto x = randomVector(rng, n * C, -2.0f, 2.0f);
  auto w = randomVector(rng, V * C, -2.0f, 2.0f);
  std::vector<int32_t> targets = {2, -1, 8, 0, 2};
  const float dloss = 0.7f;
  for (CrossEntropy ce : kVariants) {
    SCOPED_TRACE("smoothing " + std::to_string(ce.smoothing) + " softcap " +
                 std::to_string(ce.softcap));
    Fused f = runFused(x, w, targets, C, V, dloss, ce);
    Vec xd = toDouble(x), wd = toDouble(w);
    EXPECT_NEAR(f.loss, crossEntropy(logitsOf(xd, wd, n, C, V), targets, V, ce),
                1e-5);
    auto lossOfX = [&](const Vec &xs) {
      return dloss * crossEntropy(logitsOf(xs, wd, n, C, V), targets, V, ce);
    };
    auto lossOfW = [&](const Vec &ws) {
      return dloss * crossEntropy(logitsOf(xd, ws, n, C, V), targets, V, ce);
    };
    for (size_t i = 0; i < xd.size(); ++i)
      EXPECT_NEAR(f.dx[i], centralDifference(xd, i, lossOfX, 1e-5), 1e-5)
          << "dx " << i;
    for (size_t i = 0; i < wd.size(); ++i)
      EXPECT_NEAR(f.dw[i], centralDifference(wd, i, lossOfW, 1e-5), 1e-5)
          << "dw " << i;
    for (int64_t c = 0; c < C; ++c)
      EXPECT_EQ(f.dx[C + c], 0.0f); // the ignored row
  }
}

// A vocabulary wide enough for several chunks of rows (16 MiB of logits
// each: 64 rows of 64K), the last one partial: the same loss as the
// unfused kernels bit for bit (the same rows summed in the same order),
// and their gradients to fp32 rounding of the GEMMs' sums; at both matmul
// precisions (bf16: the unfused kernels round the logits' gradient, the
// fused one each chunk of it).
TEST(LinearCrossEntropy, ChunksMatchTheUnfusedKernels) {
  std::mt19937 rng(5);
  const int64_t n = 130, C = 8, V = 65536;
  auto x = randomVector(rng, n * C, -1.0f, 1.0f);
  auto w = randomVector(rng, V * C, -1.0f, 1.0f);
  std::vector<int32_t> targets(n);
  std::uniform_int_distribution<int32_t> token(0, int32_t(V - 1));
  for (int32_t &t : targets)
    t = token(rng);
  targets[3] = targets[100] = -1;
  const float dloss = 1.0f;
  for (auto [ce, precision] :
       {std::pair{CrossEntropy{0.0, 0.0}, LAP_MATMUL_FP32},
        std::pair{CrossEntropy{0.1, 15.0}, LAP_MATMUL_FP32},
        std::pair{CrossEntropy{0.1, 15.0}, LAP_MATMUL_BF16}}) {
    SCOPED_TRACE("softcap " + std::to_string(ce.softcap) + ", " +
                 (precision == LAP_MATMUL_BF16 ? "bf16" : "fp32"));
    Fused f = runFused(x, w, targets, C, V, dloss, ce, precision);
    std::vector<float> logits(n * V), dlogits(n * V), dx(n * C), dw(V * C);
    float loss = NAN;
    lap_cpu_linear_forward(logits.data(), x.data(), w.data(), nullptr, n, C, V,
                           precision);
    lap_cpu_cross_entropy_forward(&loss, logits.data(), targets.data(), n, V,
                                  float(ce.smoothing), float(ce.softcap));
    lap_cpu_cross_entropy_backward(dlogits.data(), &dloss, logits.data(),
                                   targets.data(), n, V, float(ce.smoothing),
                                   float(ce.softcap));
    lap_cpu_linear_backward(dx.data(), dw.data(), nullptr, dlogits.data(),
                            x.data(), w.data(), n, C, V, precision);
    EXPECT_EQ(f.loss, loss);
    if (precision == LAP_MATMUL_BF16)
      EXPECT_NE(f.loss, runFused(x, w, targets, C, V, dloss, ce).loss)
          << "bf16 operands give the same loss as fp32 ones";
    // Relative to the largest entry: sums of 64K (dx) or 128 (dw) products
    // in another blocking.
    auto largest = [](const std::vector<float> &v) {
      float m = 0.0f;
      for (float e : v)
        m = std::max(m, std::fabs(e));
      return m;
    };
    expectNear(f.dx, toDouble(dx), 1e-5 * largest(dx));
    expectNear(f.dw, toDouble(dw), 1e-5 * largest(dw));
  }
}

TEST(LinearCrossEntropy, NoRows) {
  std::vector<float> x, w(3 * 2, 1.0f);
  std::vector<int32_t> targets;
  Fused f = runFused(x, w, targets, 2, 3, 1.0f, CrossEntropy{0.0, 0.0});
  EXPECT_EQ(f.loss, 0.0f);
  EXPECT_EQ(f.dw, std::vector<float>(6, 0.0f));
}

//--- Row losses
//------------------------------------------------------------------

using Kind = lap_row_loss;
constexpr Kind SoftCrossEntropy = LAP_ROW_LOSS_SOFT_CROSS_ENTROPY,
               BCEWithLogits = LAP_ROW_LOSS_BCE_WITH_LOGITS,
               DinoLoss = LAP_ROW_LOSS_DINO;

double rowLoss(const Vec &logits, const Vec &targets, int64_t n, int64_t K,
               Kind kind, double temperature) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (kind == BCEWithLogits) {
      for (int64_t k = 0; k < K; ++k) {
        double s = 1.0 / (1.0 + std::exp(-logits[i * K + k]));
        double t = targets[i * K + k];
        total -= t * std::log(s) + (1 - t) * std::log(1 - s);
      }
      continue;
    }
    double T = kind == DinoLoss ? temperature : 1.0;
    Vec z(K);
    for (int64_t k = 0; k < K; ++k)
      z[k] = logits[i * K + k] / T;
    double lse = logSumExp(z);
    for (int64_t k = 0; k < K; ++k)
      total -= targets[i * K + k] * (z[k] - lse);
  }
  return kind == BCEWithLogits ? total / (n * K) : total / n;
}

/// Random targets: rows summing to `mass` for the softmax losses, values in
/// [0, 1] for BCE.
std::vector<float> rowTargets(std::mt19937 &rng, int64_t n, int64_t K,
                              Kind kind, float mass) {
  auto t = randomVector(rng, n * K, 0.0f, 1.0f);
  if (kind == BCEWithLogits)
    return t;
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      sum += t[i * K + k];
    for (int64_t k = 0; k < K; ++k)
      t[i * K + k] *= mass / sum;
  }
  return t;
}

TEST(RowLoss, ForwardAndBackward) {
  std::mt19937 rng(4);
  int64_t n = 4, K = 7;
  float dloss = 1.3f;
  for (Kind kind : {SoftCrossEntropy, BCEWithLogits, DinoLoss})
    // mass 1: distributions; mass 0.7: the gradient is still the forward's.
    for (float mass : {1.0f, 0.7f}) {
      float temperature = kind == DinoLoss ? 0.1f : 1.0f;
      auto logits = randomVector(rng, n * K, -1.0f, 1.0f);
      auto targets = rowTargets(rng, n, K, kind, mass);
      Vec p = toDouble(logits), t = toDouble(targets);
      float loss = std::numeric_limits<float>::quiet_NaN();
      lap_cpu_row_loss_forward(&loss, logits.data(), targets.data(), n, K, kind,
                               temperature);
      EXPECT_NEAR(loss, rowLoss(p, t, n, K, kind, temperature), 1e-5)
          << "kind " << kind;

      auto dlogits = nanVector(logits.size());
      lap_cpu_row_loss_backward(dlogits.data(), &dloss, logits.data(),
                                targets.data(), n, K, kind, temperature);
      auto lossOf = [&](const Vec &l) {
        return dloss * rowLoss(l, t, n, K, kind, temperature);
      };
      for (size_t i = 0; i < p.size(); ++i) {
        // h = 1e-5: differences good to ~1e-9 (the dino loss at T = 0.1
        // has curvature ~100, still ~1e-8); gradients are O(0.1 .. 1).
        double want = centralDifference(p, i, lossOf, 1e-5);
        EXPECT_NEAR(dlogits[i], want, 5e-6)
            << "kind " << kind << " mass " << mass << " at " << i;
      }
    }
}

TEST(RowLoss, WideRows) {
  // DINO's heads are wide (65536 prototypes): rows span many blocks.
  std::mt19937 rng(5);
  int64_t n = 2, K = 5000;
  auto logits = randomVector(rng, n * K, -3.0f, 3.0f);
  for (Kind kind : {SoftCrossEntropy, DinoLoss}) {
    auto targets = rowTargets(rng, n, K, kind, 1.0f);
    float loss = 0.0f;
    lap_cpu_row_loss_forward(&loss, logits.data(), targets.data(), n, K, kind,
                             0.04f);
    double want =
        rowLoss(toDouble(logits), toDouble(targets), n, K, kind, 0.04);
    EXPECT_NEAR(loss, want, 1e-5 * std::fabs(want) + 1e-5) << "kind " << kind;
  }
}

} // namespace
