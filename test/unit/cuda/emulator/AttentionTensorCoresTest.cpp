//===- AttentionTensorCoresTest.cpp - The tensor-core attention, emulated -===//
//
// The kernels of runtime/kernels/cuda/AttentionTensorCores.h, from their
// own source, run by the emulator through the same launch plans as on a
// GPU, against the CPU's bf16 kernels on the same inputs and within the
// tolerances of the GPU tests (test/unit/cuda/kernels/AttentionChecks.h).
// What Attention.cu computes around them on a GPU (the row terms D_i, the
// coefficients' sums over the per-block partials) is computed here in
// double. Outputs start as NaN: an element the kernels skip fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/AttentionTensorCores.h"
#include "test/unit/cuda/emulator/Emulator.h"
#include "test/unit/cuda/kernels/AttentionChecks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using namespace lap::test::attention;
using lap::test::nanVector;
using lap::test::valuesOf;
using lap::test::emulator::Launch;
namespace tc = lap::cuda::tensorcore;

constexpr lap_bf16 kNan = 0x7fc0;

/// The row terms D_i [B, H, T] = rowsum(dO_i * (O_i - beta V_i)), V_i at
/// the query's own position (none where t >= S).
std::vector<float> rowTerms(const Bf16Run &run) {
  const Case &c = run.c;
  std::vector<float> terms(size_t(c.B * c.H * c.T));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t h = 0; h < c.H; ++h) {
        const int64_t row = ((b * c.T + t) * c.H + h) * c.D;
        const int64_t own = ((b * c.S + t) * c.KV + h / (c.H / c.KV)) * c.D;
        const double beta = run.coefficients[size_t(c.H + h)];
        double sum = 0.0;
        for (int64_t d = 0; d < c.D; ++d) {
          double y = lap::cuda::bf16Value(run.o[size_t(row + d)]);
          if (t < c.S)
            y -= beta * lap::cuda::bf16Value(run.v[size_t(own + d)]);
          sum += lap::cuda::bf16Value(run.dout[size_t(row + d)]) * y;
        }
        terms[size_t((b * c.H + h) * c.T + t)] = float(sum);
      }
  return terms;
}

void check(const Case &c, uint32_t seed) {
  SCOPED_TRACE(c.str());
  const Bf16Run cpu(c, seed);
  const lap::cuda::Shape s =
      lap::cuda::makeShape(c.B, c.T, c.S, c.H, c.KV, c.D, cpu.scale, c.causal);
  const size_t nq = cpu.q.size(), nk = cpu.k.size();

  std::vector<lap_bf16> o(nq, kNan);
  std::vector<float> lse = nanVector(cpu.lse.size());
  tc::launchForward(Launch(), o.data(), lse.data(), cpu.q.data(), cpu.k.data(),
                    cpu.v.data(), cpu.coefficients.data(), s);
  expectAttentionClose(valuesOf(o), valuesOf(cpu.o),
                       kForwardTolerance + kBf16Step + kBf16Weights, "o");
  expectAttentionClose(lse, cpu.lse, kForwardTolerance, "lse");

  // The backward reads the CPU's O and lse, as on the GPU.
  const std::vector<float> terms = rowTerms(cpu);
  const int64_t keyTiles = tc::tilesOf(c.S, lap::cuda::kTensorCoreKeys);
  std::vector<float> partials = nanVector(size_t(c.B * c.H * keyTiles));
  std::vector<lap_bf16> dq(nq, kNan), dk(nk, kNan), dv(nk, kNan);
  tc::launchGradients(Launch(), dq.data(), dk.data(), dv.data(),
                      c.learned ? partials.data() : nullptr, cpu.dout.data(),
                      cpu.q.data(), cpu.k.data(), cpu.v.data(), cpu.lse.data(),
                      terms.data(), cpu.coefficients.data(), s);
  const double tolerance = kBackwardTolerance + kBf16Step + kBf16Weights;
  expectAttentionClose(valuesOf(dq), valuesOf(cpu.dq), tolerance, "dq");
  expectAttentionClose(valuesOf(dk), valuesOf(cpu.dk), tolerance, "dk");
  expectAttentionClose(valuesOf(dv), valuesOf(cpu.dv), tolerance, "dv");
  if (c.learned) { // d alpha_h: the partials summed over b and key tiles
    std::vector<float> dalpha(size_t(c.H)), want(size_t(c.H));
    for (int64_t h = 0; h < c.H; ++h) {
      double sum = 0.0;
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t tile = 0; tile < keyTiles; ++tile)
          sum += partials[size_t((b * c.H + h) * keyTiles + tile)];
      dalpha[size_t(h)] = float(sum);
      want[size_t(h)] = cpu.dcoefficients[size_t(h)];
    }
    expectAttentionClose(dalpha, want, kBackwardTolerance, "d alpha");
  }
}

// Both compiled widths, every kind, causal and not, with partial tiles.
TEST(EmulatedTensorCoreAttention, MixedKinds) {
  check({1, 70, 70, 3, 3, 64, true, true}, 1);
  check({1, 70, 70, 3, 3, 64, false, false}, 2);
  check({1, 70, 70, 3, 3, 128, true, true}, 3);
}

// Widths that pad (D = 36 also loads element by element; D = 100 pads to
// 128) and D = 1.
TEST(EmulatedTensorCoreAttention, PaddedHeadDims) {
  check({1, 37, 37, 3, 3, 36, true, true}, 4);
  check({1, 37, 37, 3, 3, 100, false, true}, 5);
  check({1, 20, 20, 3, 3, 1, true, false}, 6);
}

// GQA: query head h reads kv head h / (H / KV); dk and dv sum the group.
TEST(EmulatedTensorCoreAttention, GroupedQueryAttention) {
  check({2, 40, 40, 4, 2, 64, true, true}, 7);
  check({1, 40, 40, 4, 1, 64, false, true}, 8);
}

// Cross attention (S != T, beta = 0) both ways round, a single token, no
// keys.
TEST(EmulatedTensorCoreAttention, EdgeShapes) {
  check({1, 20, 70, 2, 1, 64, false, true}, 9);
  check({1, 70, 20, 2, 2, 64, false, false}, 10);
  check({2, 1, 1, 3, 3, 64, true, true}, 11);
  check({1, 5, 0, 2, 1, 64, false, true}, 12);
}

} // namespace
