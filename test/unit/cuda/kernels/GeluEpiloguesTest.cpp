//===- GeluEpiloguesTest.cpp - GeluEpilogues.h's plans, emulated ----------===//
//
// A bf16 model's linear layer with the tanh GELU, and that GELU's gradient,
// where cuBLASLt fuses no epilogue: the plans of runtime/kernels/cuda/
// GeluEpilogues.h on the emulator, whose GEMM is the CPU's. Like the CPU's
// `_bf16` kernels (MatmulBf16Test), each output must be the fp32 kernel's
// result on the bf16 values, rounded: within one bf16 rounding plus 1e-6 of
// the scale (the GPU's tanhf and the CPU's polynomial differ by a few ulp,
// and the column sums add in another order), and rounded alike in 99% of
// the elements. Outputs start as NaN.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/GeluEpilogues.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"
#include "test/unit/cuda/kernels/DeviceBuffer.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using namespace lap::test;
using lap::cuda::Launcher;

using Shape = LinearShape;

// Widths that are and are not multiples of 8 (cuBLASLt takes an auxiliary
// matrix only of the former), a single element, and K = 0.
const Shape kShapes[] = {
    {5, 7, 3}, {1, 1, 1}, {70, 48, 40}, {37, 45, 29}, {6, 0, 5}};

DeviceBuffer<lap_bf16> unset(size_t size) {
  return DeviceBuffer<lap_bf16>(std::vector<lap_bf16>(size, 0xffff));
}

TEST(EmulatedGeluEpilogues, Bf16ForwardRoundsTheFp32Kernel) {
  std::mt19937 rng(21);
  for (Shape s : kShapes) {
    SCOPED_TRACE(s.name());
    auto x = bf16Vector(randomVector(rng, s.n * s.in)),
         w = bf16Vector(randomVector(rng, s.out * s.in)),
         b = bf16Vector(randomVector(rng, s.out, -2.0f, 2.0f));
    auto fx = valuesOf(x), fw = valuesOf(w), fb = valuesOf(b);
    DeviceBuffer<lap_bf16> dX(x), dW(w), dB(b);
    for (bool bias : {true, false}) {
      auto want = nanVector(s.n * s.out), wantPre = nanVector(s.n * s.out);
      lap_cpu_linear_gelu_forward(want.data(), wantPre.data(), fx.data(),
                                  fw.data(), bias ? fb.data() : nullptr, s.n,
                                  s.in, s.out, LAP_MATMUL_FP32);
      auto y = unset(want.size()), pre = unset(want.size());
      lap::cuda::epilogues::linearGeluBf16(
          Launcher(), y.get(), pre.get(), dX.get(), dW.get(),
          bias ? dB.get() : nullptr, s.n, s.in, s.out);
      expectRoundedFrom(y.host(), want, bias ? "y (bias)" : "y");
      expectRoundedFrom(pre.host(), wantPre, "pre");
      auto alone = unset(want.size());
      lap::cuda::epilogues::linearGeluBf16(
          Launcher(), alone.get(), nullptr, dX.get(), dW.get(),
          bias ? dB.get() : nullptr, s.n, s.in, s.out);
      EXPECT_EQ(alone.host(), y.host()) << "without pre";
    }
  }
}

TEST(EmulatedGeluEpilogues, Bf16BackwardRoundsTheFp32Kernel) {
  std::mt19937 rng(22);
  // `in` is the GELU's width (the GEMM's columns), `out` the GEMM's K.
  for (Shape s : kShapes) {
    SCOPED_TRACE(s.name());
    auto pre = bf16Vector(randomVector(rng, s.n * s.in, -3.0f, 3.0f)),
         w = bf16Vector(randomVector(rng, s.out * s.in)),
         dy = bf16Vector(randomVector(rng, s.n * s.out));
    auto fpre = valuesOf(pre), fw = valuesOf(w), fdy = valuesOf(dy);
    DeviceBuffer<lap_bf16> dPre(pre), dW(w), dDy(dy);
    auto want = nanVector(pre.size()), wantBias = nanVector(s.in);
    lap_cpu_gelu_linear_backward(want.data(), wantBias.data(), fdy.data(),
                                 fw.data(), fpre.data(), s.n, s.in, s.out,
                                 LAP_MATMUL_FP32);
    auto dpre = unset(pre.size()), dbias = unset(s.in);
    lap::cuda::epilogues::geluLinearGradBf16(Launcher(), dpre.get(),
                                             dbias.get(), dDy.get(), dW.get(),
                                             dPre.get(), s.n, s.in, s.out);
    expectRoundedFrom(dpre.host(), want, "dpre");
    expectRoundedFrom(dbias.host(), wantBias, "dbias");
    auto alone = unset(pre.size());
    lap::cuda::epilogues::geluLinearGradBf16(Launcher(), alone.get(), nullptr,
                                             dDy.get(), dW.get(), dPre.get(),
                                             s.n, s.in, s.out);
    EXPECT_EQ(alone.host(), dpre.host()) << "without dbias";
  }
  // No rows: the bias gradient is 0, not left as it was.
  DeviceBuffer<lap_bf16> none(std::vector<lap_bf16>{}),
      w(bf16Vector(randomVector(rng, 15)));
  auto dbias = unset(5);
  lap::cuda::epilogues::geluLinearGradBf16(Launcher(), none.get(), dbias.get(),
                                           none.get(), w.get(), none.get(), 0,
                                           5, 3);
  EXPECT_EQ(dbias.host(), std::vector<lap_bf16>(5, 0));
}

} // namespace
