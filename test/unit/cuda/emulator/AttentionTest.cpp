//===- AttentionTest.cpp - The CUDA attention on the emulator -------------===//
//
// lap_cuda_attention_forward/backward and their bf16 variants as the GPU
// runs them (runtime/kernels/cuda/Attention.h's plan: the fp32-FMA kernels,
// the tensor-core ones, the row terms and the coefficients' sums), and
// lap_cuda_attention_decode (DecodeAttention.h), from their own source on
// the emulator, against the CPU's kernels:
// AttentionChecks.h's checks, as on a GPU. Smaller cases than the
// GPU's, which the emulator runs in seconds.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Attention.h"
#include "runtime/kernels/cuda/DecodeAttention.h"
#include "test/unit/cuda/emulator/Emulator.h"
#include "test/unit/cuda/kernels/AttentionChecks.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using namespace lap::test::attention;
using lap::test::emulator::Device;

/// checkAgainstCpu's backend: Attention.h's plan on the emulator.
struct Emulated {
  template <typename E>
  static void run(const Inputs<E> &in, const Outputs<E> &cpu, Outputs<E> &got) {
    const Case &c = in.c;
    const Device device;
    lap::cuda::attention::forward(device, got.o.data(), got.lse.data(),
                                  in.q.data(), in.k.data(), in.v.data(),
                                  in.coefficients.data(), c.B, c.T, c.S, c.H,
                                  c.KV, c.D, in.scale, c.causal);
    lap::cuda::attention::backward(
        device, got.dq.data(), got.dk.data(), got.dv.data(),
        c.learned ? got.dcoefficients.data() : nullptr, in.dout.data(),
        in.q.data(), in.k.data(), in.v.data(), cpu.o.data(), cpu.lse.data(),
        in.coefficients.data(), c.B, c.T, c.S, c.H, c.KV, c.D, in.scale,
        c.causal);
    EXPECT_EQ(device.takeFailure(), "");
  }

  static void decode(const DecodeInputs &in, std::vector<float> &o,
                     std::vector<float> &kCache, std::vector<float> &vCache) {
    const Device device;
    lap::cuda::decoding::decode(device, o.data(), kCache.data(), vCache.data(),
                                in.q.data(), in.k.data(), in.v.data(),
                                in.coefficients.data(), in.B, in.T, in.first,
                                in.capacity, in.H, in.KV, in.D, in.scale);
    EXPECT_EQ(device.takeFailure(), "");
  }
};

void check(const Case &c, uint32_t seed) {
  checkAgainstCpu<Emulated, float>(c, seed);
}
void checkBf16(const Case &c, uint32_t seed) {
  checkAgainstCpu<Emulated, lap_bf16>(c, seed);
}

// fp32 on the FMA kernels: every kind, causal and not, partial tiles, the
// compiled widths 32, 64, 128 and 256, GQA, cross attention, no keys.
TEST(EmulatedCudaAttention, Fp32) {
  check({1, 70, 70, 3, 3, 64, true, true}, 1);
  check({2, 37, 37, 3, 3, 40, false, false}, 2);
  check({1, 37, 37, 4, 2, 128, true, true}, 3);
  check({1, 20, 20, 3, 3, 256, true, true}, 4);
  check({1, 37, 37, 3, 3, 32, false, true}, 5);
  check({1, 20, 70, 4, 2, 64, false, true}, 6);
  check({1, 5, 0, 2, 1, 64, false, true}, 7);
}

// bf16 on the tensor cores (heads up to 128 wide): both compiled widths,
// every kind, causal and not, partial tiles.
TEST(EmulatedCudaAttention, Bf16OnTensorCores) {
  checkBf16({1, 70, 70, 3, 3, 64, true, true}, 11);
  checkBf16({1, 70, 70, 3, 3, 64, false, false}, 12);
  checkBf16({1, 70, 70, 3, 3, 128, true, true}, 13);
}

// Widths that pad (D = 36 also loads element by element; D = 100 pads to
// 128) and D = 1.
TEST(EmulatedCudaAttention, Bf16PaddedHeadDims) {
  checkBf16({1, 37, 37, 3, 3, 36, true, true}, 14);
  checkBf16({1, 37, 37, 3, 3, 100, false, true}, 15);
  checkBf16({1, 20, 20, 3, 3, 1, true, false}, 16);
}

// GQA: query head h reads kv head h / (H / KV); dk and dv sum the group.
TEST(EmulatedCudaAttention, Bf16GroupedQueryAttention) {
  checkBf16({2, 40, 40, 4, 2, 64, true, true}, 17);
  checkBf16({1, 40, 40, 4, 1, 64, false, true}, 18);
}

// Cross attention (S != T, beta = 0) both ways round, a single token, no
// keys; and a head wider than the tensor cores take (the FMA kernels).
TEST(EmulatedCudaAttention, Bf16EdgeShapes) {
  checkBf16({1, 20, 70, 2, 1, 64, false, true}, 19);
  checkBf16({1, 70, 20, 2, 2, 64, false, false}, 20);
  checkBf16({2, 1, 1, 3, 3, 64, true, true}, 21);
  checkBf16({1, 5, 0, 2, 1, 64, false, true}, 22);
  checkBf16({1, 20, 20, 3, 3, 160, true, true}, 23);
}

// Decode against a cache: after a prefix with GQA and D % 32 != 0; a
// prompt from an empty cache; more keys than the block's warps take at
// once, at each register layout.
TEST(EmulatedCudaDecodeAttention, MatchesCpu) {
  checkDecodeAgainstCpu<Emulated>(2, 3, 5, 12, 4, 2, 40, 25);
  checkDecodeAgainstCpu<Emulated>(1, 9, 0, 9, 2, 2, 7, 26);
  for (int64_t D : {32, 64, 128, 200})
    checkDecodeAgainstCpu<Emulated>(1, 1, 300, 310, 2, 1, D, 27 + uint32_t(D));
}

// A shape the kernels cannot take is a recorded failure, not a launch.
TEST(EmulatedCudaAttention, RejectsUnsupportedShapes) {
  const Device device;
  lap::cuda::attention::forward<Device, float>(
      device, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 4, 3,
      2, 64, 1.0f, 0);
  EXPECT_NE(device.takeFailure().find("multiple of KV"), std::string::npos);
  lap::cuda::attention::backward<Device, float>(
      device, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, 1, 4, 4, 2, 2, 300, 1.0f, 0);
  EXPECT_NE(device.takeFailure().find("head dim"), std::string::npos);
}

} // namespace
