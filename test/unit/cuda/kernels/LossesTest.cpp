//===- LossesTest.cpp - lap_cuda_ losses against the CPU's ------------------===//
//
// Each kernel and its CPU twin run on the same seeded inputs; outputs start
// as NaN, so one the kernel skips fails. Targets mix counted rows with
// ignored ones (-1, and one out of range, which both sides ignore too).
//
// Tolerances, relative to the output's largest magnitude:
//  - 1e-5 for dlogits: elementwise given the row's logsumexp, which both
//    sides sum in fp32 in different orders (and the CPU's exp and tanh are
//    polynomials within a few ulp of libm's);
//  - 1e-4 for losses (sums over rows of sums over a row) and for
//    linear_cross_entropy's dx and dw (GEMMs over V = 40000 and n rows);
//    2e-2 for those at bf16 matmul precision (as the linear kernels' test
//    says why).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "test/unit/cuda/RequireGpu.h"
#include "test/unit/cuda/kernels/DeviceBuffer.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace lap::test;

constexpr double kElementwise = 1e-5, kReduction = 1e-4, kBf16Reduction = 2e-2;

/// Targets in [0, V), every fifth row ignored (-1) and row 3 out of range.
std::vector<int32_t> randomTargets(std::mt19937 &rng, int64_t n, int64_t V) {
  std::uniform_int_distribution<int32_t> pick(0, int32_t(V) - 1);
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i)
    t[i] = i % 5 == 4 ? -1 : pick(rng);
  if (n > 3)
    t[3] = int32_t(V) + 2;
  return t;
}

struct Options {
  float smoothing, softcap;
};

const Options kOptions[] = {
    {0.0f, 0.0f}, {0.1f, 0.0f}, {0.0f, 5.0f}, {0.1f, 5.0f}};

TEST(CudaLosses, CrossEntropyMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(1);
  struct Shape {
    int64_t n, V;
  };
  // V = 3 leaves most of a row's warp idle; V = 1000 strides 512 threads.
  for (Shape s : {Shape{37, 1000}, Shape{6, 3}, Shape{64, 50}}) {
    // Logits beyond the cap of 5, so that it bends them.
    auto logits = randomVector(rng, s.n * s.V, -8.0f, 8.0f);
    auto targets = randomTargets(rng, s.n, s.V);
    const float dloss = 0.7f;
    DeviceBuffer<float> dLogits(logits), dDloss(std::vector<float>{dloss});
    DeviceBuffer<int32_t> dTargets(targets);
    for (Options o : kOptions) {
      std::vector<float> loss(1), dlogits(logits.size());
      lap_cpu_cross_entropy_forward(loss.data(), logits.data(), targets.data(),
                                    s.n, s.V, o.smoothing, o.softcap);
      lap_cpu_cross_entropy_backward(dlogits.data(), &dloss, logits.data(),
                                     targets.data(), s.n, s.V, o.smoothing,
                                     o.softcap);
      DeviceBuffer<float> gLoss(nanVector(1)), gDlogits(nanVector(s.n * s.V));
      lap_cuda_cross_entropy_forward(gLoss, dLogits, dTargets, s.n, s.V,
                                     o.smoothing, o.softcap);
      lap_cuda_cross_entropy_backward(gDlogits, dDloss, dLogits, dTargets, s.n,
                                      s.V, o.smoothing, o.softcap);
      expectWithinScale(gLoss.host(), loss, kReduction, "loss");
      expectWithinScale(gDlogits.host(), dlogits, kElementwise, "dlogits");
    }
  }
}

// A bf16 model's cross-entropy against the CPU's bf16 kernels: the loss as
// above, the gradient within a bf16 step (a result next to a rounding tie
// may round the other way).
TEST(CudaLosses, CrossEntropyBf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(2);
  const int64_t n = 37, V = 1000;
  auto logits = bf16Vector(randomVector(rng, n * V, -8.0f, 8.0f));
  auto targets = randomTargets(rng, n, V);
  const float dloss = 0.7f;
  DeviceBuffer<lap_bf16> dLogits(logits);
  DeviceBuffer<float> dDloss(std::vector<float>{dloss});
  DeviceBuffer<int32_t> dTargets(targets);
  for (Options o : kOptions) {
    std::vector<float> loss(1);
    std::vector<lap_bf16> dlogits(logits.size());
    lap_cpu_cross_entropy_forward_bf16(loss.data(), logits.data(),
                                       targets.data(), n, V, o.smoothing,
                                       o.softcap);
    lap_cpu_cross_entropy_backward_bf16(dlogits.data(), &dloss, logits.data(),
                                        targets.data(), n, V, o.smoothing,
                                        o.softcap);
    DeviceBuffer<float> gLoss(nanVector(1));
    DeviceBuffer<lap_bf16> gDlogits(std::vector<lap_bf16>(n * V, 0xffff));
    lap_cuda_cross_entropy_forward_bf16(gLoss, dLogits, dTargets, n, V,
                                        o.smoothing, o.softcap);
    lap_cuda_cross_entropy_backward_bf16(gDlogits, dDloss, dLogits, dTargets, n,
                                         V, o.smoothing, o.softcap);
    expectWithinScale(gLoss.host(), loss, kReduction, "loss");
    expectWithinScale(valuesOf(gDlogits.host()), valuesOf(dlogits),
                      0x1p-8 + kElementwise, "dlogits");
  }
}

TEST(CudaLosses, CrossEntropyWithoutCountedRowsIsZero) {
  REQUIRE_GPU();
  std::mt19937 rng(2);
  const int64_t n = 4, V = 7;
  DeviceBuffer<float> logits(randomVector(rng, n * V)),
      dloss(std::vector<float>{1.0f});
  DeviceBuffer<int32_t> ignored(std::vector<int32_t>(n, -1));
  DeviceBuffer<float> loss(nanVector(1)), dlogits(nanVector(n * V));
  lap_cuda_cross_entropy_forward(loss, logits, ignored, n, V, 0.1f, 0.0f);
  lap_cuda_cross_entropy_backward(dlogits, dloss, logits, ignored, n, V, 0.1f,
                                  0.0f);
  expectWithinScale(loss.host(), {0.0f}, 0.0, "loss");
  expectWithinScale(dlogits.host(), std::vector<float>(n * V, 0.0f), 0.0,
                    "dlogits");
  // No rows at all.
  DeviceBuffer<float> empty(nanVector(1));
  lap_cuda_cross_entropy_forward(empty, logits, ignored, 0, V, 0.0f, 0.0f);
  expectWithinScale(empty.host(), {0.0f}, 0.0, "loss of no rows");
}

/// The options and GEMM precision of a lm_head's cross-entropy.
struct LinearCrossEntropyCase {
  Options options;
  lap_matmul precision;
};
/// Logits have a standard deviation of sqrt(C / 9) = 2.3: a cap of 4
/// bends them.
constexpr LinearCrossEntropyCase kSmoothedCapped{{0.1f, 4.0f}, LAP_MATMUL_FP32};
const std::vector<LinearCrossEntropyCase> kEveryLinearCrossEntropyCase = {
    {{0.0f, 0.0f}, LAP_MATMUL_FP32},
    kSmoothedCapped,
    {{0.1f, 4.0f}, LAP_MATMUL_BF16}};
/// Both gradients, each alone, and the loss alone.
const std::vector<int> kEveryGradientMask = {3, 1, 2, 0};

/// lap_cuda_linear_cross_entropy on n rows against the CPU's, for `cases`
/// and the gradients `masks` ask for (1: dx, 2: dw).
void checkLinearCrossEntropy(int64_t n,
                             const std::vector<LinearCrossEntropyCase> &cases,
                             const std::vector<int> &masks) {
  std::mt19937 rng(3);
  const int64_t C = 48, V = 40000;
  auto x = randomVector(rng, n * C), w = randomVector(rng, V * C);
  auto targets = randomTargets(rng, n, V);
  const float dloss = 1.3f;
  DeviceBuffer<float> dX(x), dW(w), dDloss(std::vector<float>{dloss});
  DeviceBuffer<int32_t> dTargets(targets);
  for (auto [o, precision] : cases) {
    SCOPED_TRACE(precision == LAP_MATMUL_BF16 ? "bf16" : "fp32");
    const double tolerance =
        precision == LAP_MATMUL_BF16 ? kBf16Reduction : kReduction;
    std::vector<float> loss(1), dx(n * C), dw(V * C);
    lap_cpu_linear_cross_entropy(loss.data(), dx.data(), dw.data(), &dloss,
                                 x.data(), w.data(), targets.data(), n, C, V,
                                 o.smoothing, o.softcap, precision);
    for (int mask : masks) {
      DeviceBuffer<float> gLoss(nanVector(1)), gDx(nanVector(n * C)),
          gDw(nanVector(V * C));
      lap_cuda_linear_cross_entropy(
          gLoss, mask & 1 ? gDx.get() : nullptr, mask & 2 ? gDw.get() : nullptr,
          dDloss, dX, dW, dTargets, n, C, V, o.smoothing, o.softcap, precision);
      expectWithinScale(gLoss.host(), loss, tolerance, "loss");
      if (mask & 1)
        expectWithinScale(gDx.host(), dx, tolerance, "dx");
      if (mask & 2)
        expectWithinScale(gDw.host(), dw, tolerance, "dw");
    }
  }
}

// Chunks of logits rows: the CPU's and the emulator's are 2^22 floats, 2^22
// / V = 104 rows here, so n = 220 makes chunks of 104, 104 and 12 rows and
// dw accumulates across them; a GPU's are 2^26 floats (1677 rows), so it
// meets several only at n = 3400 (chunks of 1677, 1677 and 46).
TEST(CudaLosses, LinearCrossEntropyMatchesCpuAcrossChunks) {
  REQUIRE_GPU();
  checkLinearCrossEntropy(220, {kSmoothedCapped}, {3});
}

// Extended suite (tests named *AtScale): every option and precision, with
// every gradient mask.
TEST(CudaLosses, LinearCrossEntropyMatchesCpuAcrossChunksAtScale) {
  REQUIRE_GPU();
  checkLinearCrossEntropy(220, kEveryLinearCrossEntropyCase,
                          kEveryGradientMask);
}

#ifndef LAP_CUDA_EMULATOR
TEST(CudaLosses, LinearCrossEntropyMatchesCpuAcrossGpuChunks) {
  REQUIRE_GPU();
  checkLinearCrossEntropy(3400, kEveryLinearCrossEntropyCase,
                          kEveryGradientMask);
}
#endif

/// A bf16 model's lm_head with its cross-entropy against the CPU's, on n
/// rows: the GEMMs sum in other orders, dx and dw rounded to bf16 (one bf16
/// step, 2^-7, on top of the bf16 bound).
void checkLinearCrossEntropyBf16(int64_t n) {
  std::mt19937 rng(4);
  const int64_t C = 48, V = 40000;
  auto x = bf16Vector(randomVector(rng, n * C)),
       w = bf16Vector(randomVector(rng, V * C));
  auto targets = randomTargets(rng, n, V);
  const float dloss = 1.3f;
  DeviceBuffer<lap_bf16> dX(x), dW(w);
  DeviceBuffer<float> dDloss(std::vector<float>{dloss});
  DeviceBuffer<int32_t> dTargets(targets);
  const double tolerance = kBf16Reduction + 0x1p-7;
  float loss = NAN;
  std::vector<lap_bf16> dx(n * C), dw(V * C);
  lap_cpu_linear_cross_entropy_bf16(&loss, dx.data(), dw.data(), &dloss,
                                    x.data(), w.data(), targets.data(), n, C, V,
                                    0.1f, 4.0f);
  DeviceBuffer<float> gLoss(nanVector(1));
  DeviceBuffer<lap_bf16> gDx(std::vector<lap_bf16>(dx.size(), 0xffff)),
      gDw(std::vector<lap_bf16>(dw.size(), 0xffff));
  lap_cuda_linear_cross_entropy_bf16(gLoss, gDx, gDw, dDloss, dX, dW, dTargets,
                                     n, C, V, 0.1f, 4.0f);
  expectWithinScale(gLoss.host(), {loss}, kBf16Reduction, "loss");
  expectWithinScale(valuesOf(gDx.host()), valuesOf(dx), tolerance, "dx");
  expectWithinScale(valuesOf(gDw.host()), valuesOf(dw), tolerance, "dw");
}

TEST(CudaLosses, LinearCrossEntropyBf16MatchesCpuAcrossChunks) {
  REQUIRE_GPU();
  checkLinearCrossEntropyBf16(220);
}

#ifndef LAP_CUDA_EMULATOR
TEST(CudaLosses, LinearCrossEntropyBf16MatchesCpuAcrossGpuChunks) {
  REQUIRE_GPU();
  checkLinearCrossEntropyBf16(3400);
}
#endif

TEST(CudaLosses, RowLossesMatchCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(4);
  struct Shape {
    int64_t n, K;
  };
  for (Shape s : {Shape{37, 300}, Shape{5, 5}, Shape{3, 1500}}) {
    auto logits = randomVector(rng, s.n * s.K, -3.0f, 3.0f);
    // Rows summing to 1 (distributions) and rows that do not, where the
    // gradients' sum(t) factor shows.
    auto raw = randomVector(rng, s.n * s.K, 0.0f, 1.0f);
    auto normalised = raw;
    for (int64_t i = 0; i < s.n; ++i) {
      float sum = 0.0f;
      for (int64_t k = 0; k < s.K; ++k)
        sum += raw[i * s.K + k];
      for (int64_t k = 0; k < s.K; ++k)
        normalised[i * s.K + k] /= sum;
    }
    const float dloss = 0.9f;
    DeviceBuffer<float> dLogits(logits), dDloss(std::vector<float>{dloss});
    for (lap_row_loss kind : {LAP_ROW_LOSS_SOFT_CROSS_ENTROPY,
                              LAP_ROW_LOSS_BCE_WITH_LOGITS, LAP_ROW_LOSS_DINO})
      for (const std::vector<float> *targets : {&normalised, &raw}) {
        const float temperature = 0.1f;
        std::vector<float> loss(1), dlogits(logits.size());
        lap_cpu_row_loss_forward(loss.data(), logits.data(), targets->data(),
                                 s.n, s.K, kind, temperature);
        lap_cpu_row_loss_backward(dlogits.data(), &dloss, logits.data(),
                                  targets->data(), s.n, s.K, kind, temperature);
        DeviceBuffer<float> dTargets(*targets), gLoss(nanVector(1)),
            gDlogits(nanVector(logits.size()));
        lap_cuda_row_loss_forward(gLoss, dLogits, dTargets, s.n, s.K, kind,
                                  temperature);
        lap_cuda_row_loss_backward(gDlogits, dDloss, dLogits, dTargets, s.n,
                                   s.K, kind, temperature);
        SCOPED_TRACE(testing::Message()
                     << "kind " << int(kind) << ", n " << s.n << ", K " << s.K);
        expectWithinScale(gLoss.host(), loss, kReduction, "loss");
        expectWithinScale(gDlogits.host(), dlogits, kElementwise, "dlogits");
      }
  }
}

TEST(CudaLosses, RowLossOfNoRowsIsZero) {
  REQUIRE_GPU();
  DeviceBuffer<float> logits(1), targets(1);
  for (lap_row_loss kind : {LAP_ROW_LOSS_SOFT_CROSS_ENTROPY,
                            LAP_ROW_LOSS_BCE_WITH_LOGITS, LAP_ROW_LOSS_DINO}) {
    DeviceBuffer<float> loss(nanVector(1));
    lap_cuda_row_loss_forward(loss, logits, targets, 0, 8, kind, 0.1f);
    expectWithinScale(loss.host(), {0.0f}, 0.0, "loss");
  }
}

} // namespace
