//===- AttentionTest.cpp - CUDA attention against its CPU twin ------------===//
//
// lap_cuda_attention_forward/backward and lap_cpu_attention_forward/backward
// (and their bf16 variants) on the same seeded inputs (the CPU kernels are
// checked against an independent reference in
// test/unit/kernels/AttentionTest.cpp). Every head of a call has its own kind,
// so each case mixes them. Outputs start as NaN: an element the kernel skips
// fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "test/unit/cuda/RequireGpu.h"
#include "test/unit/cuda/kernels/AttentionChecks.h"
#include "test/unit/cuda/kernels/DeviceBuffer.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using lap::test::bf16Vector;
using lap::test::DeviceBuffer;
using namespace lap::test::attention;
using lap::test::nanVector;
using lap::test::randomVector;
using lap::test::valuesOf;

/// Forward and backward of one case on the GPU and the CPU. The backward
/// of both reads the CPU's O and lse, so that only the backward differs.
void check(const Case &c, uint32_t seed) {
  SCOPED_TRACE(c.str());
  std::mt19937 rng(seed);
  const int64_t nq = c.B * c.T * c.H * c.D, nk = c.B * c.S * c.KV * c.D;
  const int64_t nl = c.B * c.H * c.T;
  const float scale = 1.0f / std::sqrt(float(std::max<int64_t>(c.D, 1)));
  // Queries and keys in [-2, 2]: scores of about +-2, a peaked softmax.
  const std::vector<float> q = randomVector(rng, nq, -2.0f, 2.0f);
  const std::vector<float> k = randomVector(rng, nk, -2.0f, 2.0f);
  const std::vector<float> v = randomVector(rng, nk);
  const std::vector<float> dout = randomVector(rng, nq);
  const std::vector<float> coefficients = coefficientsFor(c);
  const int32_t causal = c.causal;

  std::vector<float> o(nq), lse(nl);
  lap_cpu_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(),
                            coefficients.data(), c.B, c.T, c.S, c.H, c.KV, c.D,
                            scale, causal);
  std::vector<float> dq(nq), dk(nk), dv(nk), dcoefficients(2 * c.H);
  lap_cpu_attention_backward(dq.data(), dk.data(), dv.data(),
                             c.learned ? dcoefficients.data() : nullptr,
                             dout.data(), q.data(), k.data(), v.data(),
                             o.data(), lse.data(), coefficients.data(), c.B,
                             c.T, c.S, c.H, c.KV, c.D, scale, causal);

  DeviceBuffer<float> gq(q), gk(k), gv(v), gdout(dout),
      gcoefficients(coefficients);
  DeviceBuffer<float> go(nanVector(nq)), glse(nanVector(nl));
  lap_cuda_attention_forward(go, glse, gq, gk, gv, gcoefficients, c.B, c.T, c.S,
                             c.H, c.KV, c.D, scale, causal);
  expectAttentionClose(go.host(), o, kForwardTolerance, "o");
  expectAttentionClose(glse.host(), lse, kForwardTolerance, "lse");

  DeviceBuffer<float> cpuO(o), cpuLse(lse);
  DeviceBuffer<float> gdq(nanVector(nq)), gdk(nanVector(nk)),
      gdv(nanVector(nk)), gdcoefficients(nanVector(2 * c.H));
  lap_cuda_attention_backward(gdq, gdk, gdv,
                              c.learned ? gdcoefficients.get() : nullptr, gdout,
                              gq, gk, gv, cpuO, cpuLse, gcoefficients, c.B, c.T,
                              c.S, c.H, c.KV, c.D, scale, causal);
  expectAttentionClose(gdq.host(), dq, kBackwardTolerance, "dq");
  expectAttentionClose(gdk.host(), dk, kBackwardTolerance, "dk");
  expectAttentionClose(gdv.host(), dv, kBackwardTolerance, "dv");
  if (c.learned) {
    expectAttentionClose(gdcoefficients.host(), dcoefficients,
                         kBackwardTolerance, "dcoefficients");
  } else { // null: nothing written, so the NaN stay
    for (float x : gdcoefficients.host())
      EXPECT_TRUE(std::isnan(x)) << "dcoefficients written though null";
  }
}

/// The bf16 kernels on both sides, on the same bf16 inputs; the backward of
/// both reads the CPU's bf16 O and lse.
void checkBf16(const Case &c, uint32_t seed) {
  SCOPED_TRACE(c.str() + " bf16");
  const Bf16Run cpu(c, seed);
  const size_t nq = cpu.q.size(), nk = cpu.k.size();
  const lap_bf16 nan = 0x7fc0;
  DeviceBuffer<lap_bf16> gq(cpu.q), gk(cpu.k), gv(cpu.v), gdout(cpu.dout);
  DeviceBuffer<float> gcoefficients(cpu.coefficients);
  DeviceBuffer<lap_bf16> go(std::vector<lap_bf16>(nq, nan));
  DeviceBuffer<float> glse(nanVector(cpu.lse.size()));
  lap_cuda_attention_forward_bf16(go, glse, gq, gk, gv, gcoefficients, c.B, c.T,
                                  c.S, c.H, c.KV, c.D, cpu.scale, c.causal);
  expectAttentionClose(valuesOf(go.host()), valuesOf(cpu.o),
                       kForwardTolerance + kBf16Step + kBf16Weights, "o");
  expectAttentionClose(glse.host(), cpu.lse, kForwardTolerance, "lse");

  DeviceBuffer<lap_bf16> cpuO(cpu.o);
  DeviceBuffer<float> cpuLse(cpu.lse);
  DeviceBuffer<lap_bf16> gdq(std::vector<lap_bf16>(nq, nan)),
      gdk(std::vector<lap_bf16>(nk, nan)), gdv(std::vector<lap_bf16>(nk, nan));
  DeviceBuffer<float> gdcoefficients(nanVector(2 * c.H));
  lap_cuda_attention_backward_bf16(
      gdq, gdk, gdv, c.learned ? gdcoefficients.get() : nullptr, gdout, gq, gk,
      gv, cpuO, cpuLse, gcoefficients, c.B, c.T, c.S, c.H, c.KV, c.D, cpu.scale,
      c.causal);
  const double tolerance = kBackwardTolerance + kBf16Step + kBf16Weights;
  expectAttentionClose(valuesOf(gdq.host()), valuesOf(cpu.dq), tolerance, "dq");
  expectAttentionClose(valuesOf(gdk.host()), valuesOf(cpu.dk), tolerance, "dk");
  expectAttentionClose(valuesOf(gdv.host()), valuesOf(cpu.dv), tolerance, "dv");
  if (c.learned)
    expectAttentionClose(gdcoefficients.host(), cpu.dcoefficients,
                         kBackwardTolerance, "dcoefficients");
}

// Self-attention, every kind in one call, D = 64; T = 37 is a partial tile.
TEST(CudaAttention, MixedKinds) {
  REQUIRE_GPU();
  check({2, 37, 37, 3, 3, 64, false, false}, 1);
  check({2, 37, 37, 3, 3, 64, true, false}, 2);
  check({2, 37, 37, 3, 3, 64, true, true}, 3);
}

// Several query and key tiles, the last partial, with and without the mask.
TEST(CudaAttention, ManyTiles) {
  REQUIRE_GPU();
  check({1, 130, 130, 3, 3, 64, false, true}, 4);
  check({1, 130, 130, 3, 3, 64, true, true}, 5);
  check({2, 300, 300, 3, 3, 64, true, false}, 6);
}

TEST(CudaAttention, HeadDim128) {
  REQUIRE_GPU();
  check({2, 130, 130, 3, 3, 128, true, true}, 7);
  check({1, 37, 37, 3, 3, 128, false, false}, 8);
}

// D = 40 pads to the 64-wide kernels: the padding must stay out of the
// results.
TEST(CudaAttention, OddHeadDim) {
  REQUIRE_GPU();
  check({2, 37, 37, 3, 3, 40, true, true}, 9);
  check({1, 130, 130, 3, 3, 40, false, false}, 10);
}

// Every compiled width: 32, 96, 192 and 256 (and D = 1).
TEST(CudaAttention, OtherHeadDims) {
  REQUIRE_GPU();
  check({1, 37, 37, 3, 3, 32, true, true}, 11);
  check({1, 70, 70, 3, 3, 80, true, true}, 12);
  check({1, 70, 70, 3, 3, 160, true, true}, 13);
  check({1, 70, 70, 3, 3, 256, true, true}, 14);
  check({1, 37, 37, 3, 3, 1, false, true}, 15);
}

// GQA: query head h reads kv head h / (H / KV); dk and dv sum the group.
TEST(CudaAttention, GroupedQueryAttention) {
  REQUIRE_GPU();
  check({2, 130, 130, 4, 2, 64, true, true}, 16);
  check({2, 37, 37, 4, 1, 64, false, true}, 17);
  check({1, 130, 130, 4, 1, 128, true, false}, 18);
  check({1, 37, 37, 4, 2, 40, true, true}, 19);
}

// A single token: each query sees only its own key.
TEST(CudaAttention, OneToken) {
  REQUIRE_GPU();
  check({3, 1, 1, 3, 3, 64, true, true}, 20);
  check({3, 1, 1, 4, 2, 40, false, false}, 21);
}

// Cross attention (S != T, beta = 0), both ways round.
TEST(CudaAttention, Cross) {
  REQUIRE_GPU();
  check({2, 37, 130, 4, 2, 64, false, true}, 22);
  check({2, 130, 37, 4, 4, 64, false, false}, 23);
  check({1, 1, 70, 2, 1, 128, false, true}, 24);
}

// No keys: O = 0 and lse = -inf; dq = 0 and the coefficients' gradients 0.
TEST(CudaAttention, NoKeys) {
  REQUIRE_GPU();
  check({2, 5, 0, 2, 1, 64, false, true}, 25);
}

// A bf16 model's: mixed kinds, GQA, several tiles, a padded head width,
// cross attention.
TEST(CudaAttention, Bf16MatchesCpu) {
  REQUIRE_GPU();
  checkBf16({2, 37, 37, 3, 3, 64, true, true}, 30);
  checkBf16({1, 130, 130, 4, 2, 64, true, true}, 31);
  checkBf16({2, 130, 130, 4, 1, 128, false, true}, 32);
  checkBf16({1, 70, 70, 3, 3, 40, true, true}, 33);
  checkBf16({2, 37, 130, 4, 2, 64, false, false}, 34);
  checkBf16({1, 70, 70, 3, 3, 160, true, true}, 35); // beyond the tensor cores
}

// The tensor cores' forward and backward (bf16 heads up to 128 wide): both
// compiled widths, widths that pad (D = 36 also loads element by element,
// D = 100 pads to 128), many tiles with and without the mask, GQA, a
// single token, cross attention both ways round, and no keys.
TEST(CudaAttention, Bf16OnTensorCores) {
  REQUIRE_GPU();
  checkBf16({1, 300, 300, 3, 3, 64, true, false}, 40);
  checkBf16({1, 300, 300, 3, 3, 64, false, true}, 41);
  checkBf16({2, 200, 200, 3, 3, 128, true, true}, 42);
  checkBf16({1, 130, 130, 4, 2, 36, true, true}, 43);
  checkBf16({1, 130, 130, 3, 3, 100, false, false}, 44);
  checkBf16({2, 130, 130, 8, 2, 128, true, false}, 45);
  checkBf16({3, 1, 1, 3, 3, 64, true, true}, 46);
  checkBf16({2, 65, 200, 4, 2, 128, false, true}, 47);
  checkBf16({2, 200, 65, 4, 4, 64, false, false}, 48);
  checkBf16({2, 5, 0, 2, 1, 64, false, true}, 49);
  checkBf16({1, 37, 37, 3, 3, 1, true, true}, 50);
}

// Backward twice on the same inputs gives the same bits (no float atomics).
TEST(CudaAttention, BackwardIsDeterministic) {
  REQUIRE_GPU();
  const Case c{2, 130, 130, 4, 2, 64, true, true};
  std::mt19937 rng(26);
  const int64_t nq = c.B * c.T * c.H * c.D, nk = c.B * c.S * c.KV * c.D;
  const float scale = 0.125f;
  DeviceBuffer<float> q(randomVector(rng, nq, -2.0f, 2.0f)),
      k(randomVector(rng, nk, -2.0f, 2.0f)), v(randomVector(rng, nk)),
      dout(randomVector(rng, nq)), coefficients(coefficientsFor(c));
  DeviceBuffer<float> o(nq), lse(c.B * c.H * c.T);
  lap_cuda_attention_forward(o, lse, q, k, v, coefficients, c.B, c.T, c.S, c.H,
                             c.KV, c.D, scale, 1);
  std::vector<std::vector<float>> runs[2];
  for (auto &run : runs) {
    DeviceBuffer<float> dq(nq), dk(nk), dv(nk), dcoefficients(2 * c.H);
    lap_cuda_attention_backward(dq, dk, dv, dcoefficients, dout, q, k, v, o,
                                lse, coefficients, c.B, c.T, c.S, c.H, c.KV,
                                c.D, scale, 1);
    run = {dq.host(), dk.host(), dv.host(), dcoefficients.host()};
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(runs[0][i] == runs[1][i]) << "output " << i << " differs";
}

// A shape the kernels cannot take is a recorded failure, not a launch.
TEST(CudaAttention, RejectsUnsupportedShapes) {
  REQUIRE_GPU();
  lap_cuda_attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, 1, 4, 4, 3, 2, 64, 1.0f, 0);
  EXPECT_NE(lap::cuda::takeFailure().find("multiple of KV"), std::string::npos);
  lap_cuda_attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr,
                              nullptr, nullptr, nullptr, nullptr, nullptr,
                              nullptr, 1, 4, 4, 2, 2, 300, 1.0f, 0);
  EXPECT_NE(lap::cuda::takeFailure().find("head dim"), std::string::npos);
}

} // namespace
