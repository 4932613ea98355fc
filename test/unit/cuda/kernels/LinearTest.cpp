//===- LinearTest.cpp - lap_cuda_linear_* against the CPU's ----------------===//
//
// Each kernel and its CPU twin run on the same seeded inputs; outputs start
// as NaN, so one the kernel skips or accumulates into fails. Shapes are odd
// (not multiples of 32) and the heads' blocks start at addresses only 4-byte
// aligned, which cuBLASLt's default algorithms assume away.
//
// Tolerance: 1e-4 of the output's largest magnitude. cuBLASLt and oneDNN
// add the K products of a dot in different orders (fp32 throughout, no
// TF32); for K <= 600 terms of size <= 1 the rounding differences stay
// near 1e-6 of the result's scale, and a bias gradient sums <= 600 rows.
// The GELU epilogues' bound is wider (geluTolerance(), below). Every test
// runs at both matmul precisions; at bf16 (cuBLASLt's
// CUBLAS_COMPUTE_32F_FAST_16BF against the CPU's operands rounded to
// nearest even) the bound is 2e-2: the two agree to summation order if
// cuBLASLt rounds to nearest too, and by bf16's 2^-8 per operand if it
// rounds otherwise.
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
#include <string>
#include <vector>

namespace {

using namespace lap::test;

constexpr double kFp32Tolerance = 1e-4, kFp32GeluTolerance = 5e-4,
                 kBf16Tolerance = 2e-2;

/// The tests, at each matmul precision.
class CudaLinear : public testing::TestWithParam<lap_matmul> {
protected:
  double tolerance() const {
    return GetParam() == LAP_MATMUL_BF16 ? kBf16Tolerance : kFp32Tolerance;
  }
  double geluTolerance() const {
    return GetParam() == LAP_MATMUL_BF16 ? kBf16Tolerance : kFp32GeluTolerance;
  }
};

using Shape = LinearShape;

// K = in = 0 makes y the bias alone (the GEMM's K = 0 path).
const Shape kShapes[] = {{5, 7, 3},      {1, 1, 1},       {37, 45, 29},
                         {300, 96, 130}, {513, 257, 129}, {6, 0, 5}};

TEST_P(CudaLinear, ForwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(1);
  for (Shape s : kShapes) {
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out);
    DeviceBuffer<float> dX(x), dW(w), dB(b);
    for (bool bias : {true, false}) {
      std::vector<float> want(s.n * s.out);
      lap_cpu_linear_forward(want.data(), x.data(), w.data(),
                             bias ? b.data() : nullptr, s.n, s.in, s.out,
                             GetParam());
      DeviceBuffer<float> y(nanVector(s.n * s.out));
      lap_cuda_linear_forward(y, dX, dW, bias ? dB.get() : nullptr, s.n, s.in,
                              s.out, GetParam());
      expectWithinScale(y.host(), want, tolerance(), bias ? "y (bias)" : "y");
    }
  }
}

TEST_P(CudaLinear, BackwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(2);
  for (Shape s : kShapes) {
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         dy = randomVector(rng, s.n * s.out);
    DeviceBuffer<float> dX(x), dW(w), dDy(dy);
    std::vector<float> wantDx(s.n * s.in), wantDw(s.out * s.in), wantDb(s.out);
    lap_cpu_linear_backward(wantDx.data(), wantDw.data(), wantDb.data(),
                            dy.data(), x.data(), w.data(), s.n, s.in, s.out,
                            GetParam());
    // All outputs (db from dW's GEMM epilogue), then each one alone: db
    // without dW takes the column-sum kernel instead.
    for (int mask : {7, 1, 2, 4, 6}) {
      DeviceBuffer<float> gx(nanVector(wantDx.size())),
          gw(nanVector(wantDw.size())), gb(nanVector(wantDb.size()));
      lap_cuda_linear_backward(mask & 1 ? gx.get() : nullptr,
                               mask & 2 ? gw.get() : nullptr,
                               mask & 4 ? gb.get() : nullptr, dDy, dX, dW, s.n,
                               s.in, s.out, GetParam());
      if (mask & 1)
        expectWithinScale(gx.host(), wantDx, tolerance(), "dx");
      if (mask & 2)
        expectWithinScale(gw.host(), wantDw, tolerance(), "dw");
      // db sums dy in fp32 at either precision: a fused epilogue that
      // summed the bf16-rounded dy would miss this.
      if (mask & 4)
        expectWithinScale(gb.host(), wantDb, kFp32Tolerance, "db");
    }
  }
}

TEST_P(CudaLinear, BackwardWithNoRowsZeroesParameterGradients) {
  REQUIRE_GPU();
  // n = 0: dW's GEMM has K = 0, so dW and its bias gradient are 0.
  std::mt19937 rng(3);
  const int64_t in = 9, out = 5;
  DeviceBuffer<float> x(0), dy(0), w(randomVector(rng, out * in));
  DeviceBuffer<float> gw(nanVector(out * in)), gb(nanVector(out));
  lap_cuda_linear_backward(nullptr, gw, gb, dy, x, w, 0, in, out, GetParam());
  expectWithinScale(gw.host(), std::vector<float>(out * in, 0.0f), 0.0, "dw");
  expectWithinScale(gb.host(), std::vector<float>(out, 0.0f), 0.0, "db");
}

struct HeadsShape {
  int64_t n, in, hq, hkv;
};

// hq odd: the k and v blocks of w and b start 4-byte aligned.
const HeadsShape kHeadsShapes[] = {{37, 45, 21, 7}, {130, 64, 64, 32}};

TEST_P(CudaLinear, HeadsForwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(4);
  for (HeadsShape s : kHeadsShapes) {
    const int64_t rows = s.hq + 2 * s.hkv;
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, rows * s.in),
         b = randomVector(rng, rows);
    DeviceBuffer<float> dX(x), dW(w), dB(b);
    for (bool bias : {true, false}) {
      std::vector<float> q(s.n * s.hq), k(s.n * s.hkv), v(s.n * s.hkv);
      lap_cpu_linear_heads_forward(q.data(), k.data(), v.data(), x.data(),
                                   w.data(), bias ? b.data() : nullptr, s.n,
                                   s.in, s.hq, s.hkv, GetParam());
      DeviceBuffer<float> gq(nanVector(q.size())), gk(nanVector(k.size())),
          gv(nanVector(v.size()));
      lap_cuda_linear_heads_forward(gq, gk, gv, dX, dW,
                                    bias ? dB.get() : nullptr, s.n, s.in, s.hq,
                                    s.hkv, GetParam());
      expectWithinScale(gq.host(), q, tolerance(), "q");
      expectWithinScale(gk.host(), k, tolerance(), "k");
      expectWithinScale(gv.host(), v, tolerance(), "v");
    }
  }
}

TEST_P(CudaLinear, HeadsBackwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(5);
  for (HeadsShape s : kHeadsShapes) {
    const int64_t rows = s.hq + 2 * s.hkv;
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, rows * s.in),
         dq = randomVector(rng, s.n * s.hq),
         dk = randomVector(rng, s.n * s.hkv),
         dv = randomVector(rng, s.n * s.hkv);
    DeviceBuffer<float> dX(x), dW(w), dDq(dq), dDk(dk), dDv(dv);
    std::vector<float> wantDx(s.n * s.in), wantDw(rows * s.in), wantDb(rows);
    lap_cpu_linear_heads_backward(wantDx.data(), wantDw.data(), wantDb.data(),
                                  dq.data(), dk.data(), dv.data(), x.data(),
                                  w.data(), s.n, s.in, s.hq, s.hkv, GetParam());
    for (int mask : {7, 1, 2, 4}) {
      DeviceBuffer<float> gx(nanVector(wantDx.size())),
          gw(nanVector(wantDw.size())), gb(nanVector(wantDb.size()));
      lap_cuda_linear_heads_backward(
          mask & 1 ? gx.get() : nullptr, mask & 2 ? gw.get() : nullptr,
          mask & 4 ? gb.get() : nullptr, dDq, dDk, dDv, dX, dW, s.n, s.in, s.hq,
          s.hkv, GetParam());
      if (mask & 1)
        expectWithinScale(gx.host(), wantDx, tolerance(), "dx");
      if (mask & 2)
        expectWithinScale(gw.host(), wantDw, tolerance(), "dw");
      // db sums dy in fp32 at either precision: a fused epilogue that
      // summed the bf16-rounded dy would miss this.
      if (mask & 4)
        expectWithinScale(gb.host(), wantDb, kFp32Tolerance, "db");
    }
  }
}

// The tanh GELU in the GEMM's epilogue (cuBLASLt's GELU_AUX_BIAS and
// DGELU_BGRAD, or the kernels that stand in where no algorithm fuses them)
// against the CPU's one pass after its GEMM. Tolerance 5e-4 of the largest
// magnitude: cuBLASLt's epilogue may take the hardware tanh (tanh.approx,
// relative error about 2^-11), which moves gelu(x) = x (1 + tanh u) / 2 by
// up to 2.5e-4 |x| and its slope as much; the kernels that stand in use
// tanhf, a few ulp from the CPU's polynomial.
TEST_P(CudaLinear, GeluForwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(6);
  for (Shape s : kShapes) {
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out, -2.0f, 2.0f);
    DeviceBuffer<float> dX(x), dW(w), dB(b);
    for (bool bias : {true, false}) {
      std::vector<float> want(s.n * s.out), wantPre(s.n * s.out);
      lap_cpu_linear_gelu_forward(want.data(), wantPre.data(), x.data(),
                                  w.data(), bias ? b.data() : nullptr, s.n,
                                  s.in, s.out, GetParam());
      for (bool keep : {true, false}) {
        DeviceBuffer<float> y(nanVector(want.size())),
            pre(nanVector(want.size()));
        lap_cuda_linear_gelu_forward(y, keep ? pre.get() : nullptr, dX, dW,
                                     bias ? dB.get() : nullptr, s.n, s.in,
                                     s.out, GetParam());
        expectWithinScale(y.host(), want, geluTolerance(),
                          bias ? "y (bias)" : "y");
        if (keep)
          expectWithinScale(pre.host(), wantPre, tolerance(), "pre");
      }
    }
  }
}

TEST_P(CudaLinear, GeluBackwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(7);
  // Here `in` is the GELU's width (the GEMM's columns), `out` the GEMM's K.
  for (Shape s : kShapes) {
    auto pre = randomVector(rng, s.n * s.in, -3.0f, 3.0f),
         w = randomVector(rng, s.out * s.in),
         dy = randomVector(rng, s.n * s.out);
    DeviceBuffer<float> dPre(pre), dW(w), dDy(dy);
    std::vector<float> want(s.n * s.in), wantBias(s.in);
    lap_cpu_gelu_linear_backward(want.data(), wantBias.data(), dy.data(),
                                 w.data(), pre.data(), s.n, s.in, s.out,
                                 GetParam());
    for (bool bias : {true, false}) {
      DeviceBuffer<float> got(nanVector(want.size())),
          gotBias(nanVector(wantBias.size()));
      lap_cuda_gelu_linear_backward(got, bias ? gotBias.get() : nullptr, dDy,
                                    dW, dPre, s.n, s.in, s.out, GetParam());
      expectWithinScale(got.host(), want, geluTolerance(), "dpre");
      if (bias)
        expectWithinScale(gotBias.host(), wantBias, geluTolerance(), "dbias");
    }
  }
  // No rows: the bias gradient is 0, not left as it was.
  DeviceBuffer<float> none(0), w(randomVector(rng, 15)), dbias(nanVector(5));
  lap_cuda_gelu_linear_backward(none, dbias, none, w, none, 0, 5, 3,
                                GetParam());
  expectWithinScale(dbias.host(), std::vector<float>(5, 0.0f), 0.0, "dbias");
}

// A bf16 model's linear kernels against the CPU's: the same bf16 products
// summed in another order, each result rounded to bf16, so within one bf16
// step (2^-7 relative) of the scale; db sums dy in fp32 on both (2^-7 for
// its rounding).
TEST(CudaLinearBf16, MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(5);
  constexpr double kTolerance = 0x1p-7;
  for (Shape s : kShapes) {
    auto x = bf16Vector(randomVector(rng, s.n * s.in)),
         w = bf16Vector(randomVector(rng, s.out * s.in)),
         b = bf16Vector(randomVector(rng, s.out)),
         dy = bf16Vector(randomVector(rng, s.n * s.out));
    DeviceBuffer<lap_bf16> dX(x), dW(w), dB(b), dDy(dy);
    std::vector<lap_bf16> y(s.n * s.out), dx(x.size()), dw(w.size()),
        db(b.size());
    lap_cpu_linear_forward_bf16(y.data(), x.data(), w.data(), b.data(), s.n,
                                s.in, s.out);
    lap_cpu_linear_backward_bf16(dx.data(), dw.data(), db.data(), dy.data(),
                                 x.data(), w.data(), s.n, s.in, s.out);
    DeviceBuffer<lap_bf16> gy(std::vector<lap_bf16>(y.size(), 0xffff)),
        gx(std::vector<lap_bf16>(dx.size(), 0xffff)),
        gw(std::vector<lap_bf16>(dw.size(), 0xffff)),
        gb(std::vector<lap_bf16>(db.size(), 0xffff));
    lap_cuda_linear_forward_bf16(gy, dX, dW, dB, s.n, s.in, s.out);
    lap_cuda_linear_backward_bf16(gx, gw, gb, dDy, dX, dW, s.n, s.in, s.out);
    expectWithinScale(valuesOf(gy.host()), valuesOf(y), kTolerance, "y");
    expectWithinScale(valuesOf(gx.host()), valuesOf(dx), kTolerance, "dx");
    expectWithinScale(valuesOf(gw.host()), valuesOf(dw), kTolerance, "dw");
    expectWithinScale(valuesOf(gb.host()), valuesOf(db), kTolerance, "db");
  }
}

// A bf16 model's linear layer with the tanh GELU and the GELU's gradient,
// with each optional vector and without: as MatchesCpu (the GPU's tanhf
// and the CPU's polynomial differ by a few ulp, within the same bound).
// Widths that are multiples of 8 take cuBLASLt's bf16 epilogues where an
// algorithm fuses them (GELU_AUX_BIAS, GELU_BIAS, GELU_AUX, GELU,
// DGELU_BGRAD, DGELU); other widths with pre, and K = 0, take
// GeluEpilogues.h's kernels.
TEST(CudaLinearBf16, GeluMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(8);
  constexpr double kTolerance = 0x1p-7;
  auto unset = [](size_t size) {
    return DeviceBuffer<lap_bf16>(std::vector<lap_bf16>(size, 0xffff));
  };
  const Shape shapes[] = {{5, 7, 3},      {37, 45, 29}, {64, 48, 40},
                          {300, 96, 128}, {6, 0, 8},    {6, 8, 0}};
  for (Shape s : shapes) {
    SCOPED_TRACE(s.name());
    auto x = bf16Vector(randomVector(rng, s.n * s.in)),
         w = bf16Vector(randomVector(rng, s.out * s.in)),
         b = bf16Vector(randomVector(rng, s.out, -2.0f, 2.0f)),
         dy = bf16Vector(randomVector(rng, s.n * s.out)),
         pre = bf16Vector(randomVector(rng, s.n * s.in, -3.0f, 3.0f));
    DeviceBuffer<lap_bf16> dX(x), dW(w), dB(b), dDy(dy), dPre(pre);
    for (bool bias : {true, false})
      for (bool keep : {true, false}) {
        std::vector<lap_bf16> y(s.n * s.out), yPre(y.size());
        lap_cpu_linear_gelu_forward_bf16(y.data(), yPre.data(), x.data(),
                                         w.data(), bias ? b.data() : nullptr,
                                         s.n, s.in, s.out);
        auto gy = unset(y.size()), gyPre = unset(y.size());
        lap_cuda_linear_gelu_forward_bf16(gy, keep ? gyPre.get() : nullptr, dX,
                                          dW, bias ? dB.get() : nullptr, s.n,
                                          s.in, s.out);
        expectWithinScale(valuesOf(gy.host()), valuesOf(y), kTolerance, "y");
        if (keep)
          expectWithinScale(valuesOf(gyPre.host()), valuesOf(yPre), kTolerance,
                            "pre");
      }
    // Here `in` is the GELU's width (the GEMM's columns), `out` the GEMM's K.
    std::vector<lap_bf16> dpre(pre.size()), dbias(s.in);
    lap_cpu_gelu_linear_backward_bf16(dpre.data(), dbias.data(), dy.data(),
                                      w.data(), pre.data(), s.n, s.in, s.out);
    for (bool bias : {true, false}) {
      auto gdpre = unset(dpre.size()), gdbias = unset(dbias.size());
      lap_cuda_gelu_linear_backward_bf16(gdpre, bias ? gdbias.get() : nullptr,
                                         dDy, dW, dPre, s.n, s.in, s.out);
      expectWithinScale(valuesOf(gdpre.host()), valuesOf(dpre), kTolerance,
                        "dpre");
      if (bias)
        expectWithinScale(valuesOf(gdbias.host()), valuesOf(dbias), kTolerance,
                          "dbias");
    }
  }
}

TEST(CudaLinearBf16, HeadsMatchCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(6);
  constexpr double kTolerance = 0x1p-7;
  const int64_t n = 70, in = 48, hq = 32, hkv = 16, rows = hq + 2 * hkv;
  auto x = bf16Vector(randomVector(rng, n * in)),
       w = bf16Vector(randomVector(rng, rows * in)),
       b = bf16Vector(randomVector(rng, rows)),
       dq = bf16Vector(randomVector(rng, n * hq)),
       dk = bf16Vector(randomVector(rng, n * hkv)),
       dv = bf16Vector(randomVector(rng, n * hkv));
  DeviceBuffer<lap_bf16> dX(x), dW(w), dB(b), dDq(dq), dDk(dk), dDv(dv);
  std::vector<lap_bf16> q(n * hq), k(n * hkv), v(n * hkv), dx(x.size()),
      dw(w.size()), db(b.size());
  lap_cpu_linear_heads_forward_bf16(q.data(), k.data(), v.data(), x.data(),
                                    w.data(), b.data(), n, in, hq, hkv);
  lap_cpu_linear_heads_backward_bf16(dx.data(), dw.data(), db.data(), dq.data(),
                                     dk.data(), dv.data(), x.data(), w.data(),
                                     n, in, hq, hkv);
  auto unset = [](size_t size) {
    return DeviceBuffer<lap_bf16>(std::vector<lap_bf16>(size, 0xffff));
  };
  auto gq = unset(q.size()), gk = unset(k.size()), gv = unset(v.size()),
       gx = unset(dx.size()), gw = unset(dw.size()), gb = unset(db.size());
  lap_cuda_linear_heads_forward_bf16(gq, gk, gv, dX, dW, dB, n, in, hq, hkv);
  lap_cuda_linear_heads_backward_bf16(gx, gw, gb, dDq, dDk, dDv, dX, dW, n, in,
                                      hq, hkv);
  expectWithinScale(valuesOf(gq.host()), valuesOf(q), kTolerance, "q");
  expectWithinScale(valuesOf(gk.host()), valuesOf(k), kTolerance, "k");
  expectWithinScale(valuesOf(gv.host()), valuesOf(v), kTolerance, "v");
  expectWithinScale(valuesOf(gx.host()), valuesOf(dx), kTolerance, "dx");
  expectWithinScale(valuesOf(gw.host()), valuesOf(dw), kTolerance, "dw");
  expectWithinScale(valuesOf(gb.host()), valuesOf(db), kTolerance, "db");
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaLinear,
                         testing::Values(LAP_MATMUL_FP32, LAP_MATMUL_BF16),
                         [](const testing::TestParamInfo<lap_matmul> &info) {
                           return info.param == LAP_MATMUL_BF16 ? "bf16"
                                                                : "fp32";
                         });

} // namespace
