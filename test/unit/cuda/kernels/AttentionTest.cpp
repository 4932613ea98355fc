//===- AttentionTest.cpp - CUDA attention against its CPU twin ------------===//
//
// lap_cuda_attention_forward/backward and lap_cpu_attention_forward/backward
// (and their bf16 variants) on the same seeded inputs: AttentionChecks.h's
// checkAgainstCpu on the GPU.
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

using lap::test::DeviceBuffer;
using namespace lap::test::attention;
using lap::test::randomVector;

void cudaForward(float *o, float *lse, const float *q, const float *k,
                 const float *v, const float *coefficients, const Case &c,
                 float scale) {
  lap_cuda_attention_forward(o, lse, q, k, v, coefficients, c.B, c.T, c.S, c.H,
                             c.KV, c.D, scale, c.causal);
}
void cudaForward(lap_bf16 *o, float *lse, const lap_bf16 *q, const lap_bf16 *k,
                 const lap_bf16 *v, const float *coefficients, const Case &c,
                 float scale) {
  lap_cuda_attention_forward_bf16(o, lse, q, k, v, coefficients, c.B, c.T, c.S,
                                  c.H, c.KV, c.D, scale, c.causal);
}
void cudaBackward(float *dq, float *dk, float *dv, float *dcoefficients,
                  const float *dout, const float *q, const float *k,
                  const float *v, const float *o, const float *lse,
                  const float *coefficients, const Case &c, float scale) {
  lap_cuda_attention_backward(dq, dk, dv, dcoefficients, dout, q, k, v, o, lse,
                              coefficients, c.B, c.T, c.S, c.H, c.KV, c.D,
                              scale, c.causal);
}
void cudaBackward(lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv,
                  float *dcoefficients, const lap_bf16 *dout, const lap_bf16 *q,
                  const lap_bf16 *k, const lap_bf16 *v, const lap_bf16 *o,
                  const float *lse, const float *coefficients, const Case &c,
                  float scale) {
  lap_cuda_attention_backward_bf16(dq, dk, dv, dcoefficients, dout, q, k, v, o,
                                   lse, coefficients, c.B, c.T, c.S, c.H, c.KV,
                                   c.D, scale, c.causal);
}

/// checkAgainstCpu's backend: the CUDA entry points on device copies.
struct Gpu {
  template <typename E>
  static void run(const Inputs<E> &in, const Outputs<E> &cpu, Outputs<E> &got) {
    const Case &c = in.c;
    DeviceBuffer<E> q(in.q), k(in.k), v(in.v), dout(in.dout), o(got.o),
        cpuO(cpu.o), dq(got.dq), dk(got.dk), dv(got.dv);
    DeviceBuffer<float> coefficients(in.coefficients), lse(got.lse),
        cpuLse(cpu.lse), dcoefficients(got.dcoefficients);
    cudaForward(o, lse, q, k, v, coefficients, c, in.scale);
    cudaBackward(dq, dk, dv, c.learned ? dcoefficients.get() : nullptr, dout, q,
                 k, v, cpuO, cpuLse, coefficients, c, in.scale);
    got.o = o.host(), got.lse = lse.host();
    got.dq = dq.host(), got.dk = dk.host(), got.dv = dv.host();
    got.dcoefficients = dcoefficients.host();
  }

  static void decode(const DecodeInputs &in, std::vector<float> &o,
                     std::vector<float> &kCache, std::vector<float> &vCache) {
    DeviceBuffer<float> q(in.q), k(in.k), v(in.v), gk(kCache), gv(vCache),
        coefficients(in.coefficients), go(o);
    lap_cuda_attention_decode(go, gk, gv, q, k, v, coefficients, in.B, in.T,
                              in.first, in.capacity, in.H, in.KV, in.D,
                              in.scale);
    o = go.host(), kCache = gk.host(), vCache = gv.host();
  }
};

void check(const Case &c, uint32_t seed) {
  checkAgainstCpu<Gpu, float>(c, seed);
}
void checkDecode(int64_t B, int64_t T, int64_t first, int64_t capacity,
                 int64_t H, int64_t KV, int64_t D, uint32_t seed) {
  checkDecodeAgainstCpu<Gpu>(B, T, first, capacity, H, KV, D, seed);
}
void checkBf16(const Case &c, uint32_t seed) {
  checkAgainstCpu<Gpu, lap_bf16>(c, seed);
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

// Decode against a cache: after a prefix with GQA and D % 32 != 0; a
// prompt from an empty cache; more keys than the block's warps take at
// once, at each register layout.
TEST(CudaDecodeAttention, AfterPrefixGrouped) {
  REQUIRE_GPU();
  checkDecode(2, 3, 5, 12, 4, 2, 40, 25);
}

TEST(CudaDecodeAttention, PromptFromEmptyCache) {
  REQUIRE_GPU();
  checkDecode(1, 9, 0, 9, 2, 2, 7, 26);
}

TEST(CudaDecodeAttention, LongContextHeadSizes) {
  REQUIRE_GPU();
  for (int64_t D : {32, 64, 128, 200})
    checkDecode(2, 1, 700, 720, 4, 1, D, 27 + uint32_t(D));
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
