//===- NormsTest.cpp - lap_cuda_ norms against the CPU's --------------------===//
//
// Each kernel and its CPU twin run on the same seeded inputs; outputs start
// as NaN, so one the kernel skips or accumulates into fails. Nullable
// outputs are passed null in turn; widths are odd and n = 300 spans several
// of the column sums' row chunks.
//
// Tolerances, relative to the output's largest magnitude:
//  - 1e-5 for row outputs (dx, y, w, dv, dg): elementwise given the row's
//    sums, which both sides add in fp32 in different orders;
//  - 1e-4 for parameter gradients (dw, db, dgamma): column sums over up to
//    300 rows, chunked differently on the two sides.
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
#include <vector>

namespace {

using namespace lap::test;

constexpr double kElementwise = 1e-5, kReduction = 1e-4;

struct Shape {
  int64_t n, c;
};

const Shape kShapes[] = {{37, 45}, {300, 96}, {3, 1000}, {130, 1}};

TEST(CudaNorms, LayerNormBackwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(1);
  const float eps = 1e-5f;
  for (Shape s : kShapes) {
    auto x = randomVector(rng, s.n * s.c, -2.0f, 2.0f),
         dy = randomVector(rng, s.n * s.c), w = randomVector(rng, s.c);
    DeviceBuffer<float> dX(x), dDy(dy), dW(w);
    for (bool weighted : {true, false}) {
      std::vector<float> dx(x.size()), dw(s.c), db(s.c);
      lap_cpu_layer_norm_backward(dx.data(), dw.data(), db.data(), dy.data(),
                                  x.data(), weighted ? w.data() : nullptr, s.n,
                                  s.c, eps);
      // dw and db each present or null (dx is not nullable).
      for (int mask : {3, 1, 2, 0}) {
        DeviceBuffer<float> gx(nanVector(dx.size())), gw(nanVector(s.c)),
            gb(nanVector(s.c));
        lap_cuda_layer_norm_backward(
            gx, mask & 1 ? gw.get() : nullptr, mask & 2 ? gb.get() : nullptr,
            dDy, dX, weighted ? dW.get() : nullptr, s.n, s.c, eps);
        expectWithinScale(gx.host(), dx, kElementwise, "dx");
        if (mask & 1)
          expectWithinScale(gw.host(), dw, kReduction, "dw");
        if (mask & 2)
          expectWithinScale(gb.host(), db, kReduction, "db");
      }
    }
  }
}

TEST(CudaNorms, ParameterGradientsOfNoRowsAreZero) {
  REQUIRE_GPU();
  const int64_t c = 7;
  DeviceBuffer<float> none(1), w(std::vector<float>(c, 1.0f));
  DeviceBuffer<float> dw(nanVector(c)), db(nanVector(c)), dr(nanVector(c)),
      dgamma(nanVector(c));
  lap_cuda_layer_norm_backward(none, dw, db, none, none, w, 0, c, 1e-5f);
  lap_cuda_rms_norm_backward(nullptr, dr, none, none, w, 0, c, 1e-5f);
  lap_cuda_layer_scale_backward(nullptr, dgamma, none, none, w, 0, c);
  const std::vector<float> zeros(c, 0.0f);
  expectWithinScale(dw.host(), zeros, 0.0, "layer norm dw");
  expectWithinScale(db.host(), zeros, 0.0, "layer norm db");
  expectWithinScale(dr.host(), zeros, 0.0, "rms norm dw");
  expectWithinScale(dgamma.host(), zeros, 0.0, "dgamma");
}

TEST(CudaNorms, RmsNormBackwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(2);
  for (Shape s : kShapes) {
    // One column makes dx = g r (1 - x^2 r^2) a difference of nearly equal
    // terms when eps is small: rounding, not the kernel, would decide the
    // comparison. A large eps keeps that case well conditioned.
    const float eps = s.c == 1 ? 0.5f : 1e-6f;
    auto x = randomVector(rng, s.n * s.c, -2.0f, 2.0f),
         dy = randomVector(rng, s.n * s.c), w = randomVector(rng, s.c);
    DeviceBuffer<float> dX(x), dDy(dy), dW(w);
    for (bool weighted : {true, false}) {
      std::vector<float> dx(x.size()), dw(s.c);
      lap_cpu_rms_norm_backward(dx.data(), dw.data(), dy.data(), x.data(),
                                weighted ? w.data() : nullptr, s.n, s.c, eps);
      for (int mask : {3, 1, 2}) {
        DeviceBuffer<float> gx(nanVector(dx.size())), gw(nanVector(s.c));
        lap_cuda_rms_norm_backward(
            mask & 1 ? gx.get() : nullptr, mask & 2 ? gw.get() : nullptr, dDy,
            dX, weighted ? dW.get() : nullptr, s.n, s.c, eps);
        if (mask & 1)
          expectWithinScale(gx.host(), dx, kElementwise, "dx");
        if (mask & 2)
          expectWithinScale(gw.host(), dw, kReduction, "dw");
      }
    }
  }
}

// A bf16 model's norm gradients against the CPU's bf16 kernels: within a
// bf16 step (2^-8 of the scale) plus the tolerances above, as results next
// to a rounding tie may round the other way.
TEST(CudaNorms, Bf16BackwardsMatchCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(3);
  const float eps = 1e-5f;
  auto within = [](const std::vector<lap_bf16> &got,
                   const std::vector<lap_bf16> &want, double tolerance,
                   const char *what) {
    expectWithinScale(valuesOf(got), valuesOf(want), 0x1p-8 + tolerance, what);
  };
  for (Shape s : {Shape{37, 45}, Shape{300, 96}}) {
    auto x = bf16Vector(randomVector(rng, s.n * s.c, -2.0f, 2.0f)),
         dy = bf16Vector(randomVector(rng, s.n * s.c)),
         w = bf16Vector(randomVector(rng, s.c));
    DeviceBuffer<lap_bf16> dX(x), dDy(dy), dW(w);
    std::vector<lap_bf16> dx(x.size()), dw(s.c), db(s.c),
        unset(x.size(), 0xffff);
    DeviceBuffer<lap_bf16> gx(unset), gw(std::vector<lap_bf16>(s.c, 0xffff)),
        gb(std::vector<lap_bf16>(s.c, 0xffff));
    lap_cpu_layer_norm_backward_bf16(dx.data(), dw.data(), db.data(), dy.data(),
                                     x.data(), w.data(), s.n, s.c, eps);
    lap_cuda_layer_norm_backward_bf16(gx, gw, gb, dDy, dX, dW, s.n, s.c, eps);
    within(gx.host(), dx, kElementwise, "layer norm dx");
    within(gw.host(), dw, kReduction, "layer norm dw");
    within(gb.host(), db, kReduction, "layer norm db");
    lap_cpu_rms_norm_backward_bf16(dx.data(), dw.data(), dy.data(), x.data(),
                                   w.data(), s.n, s.c, eps);
    lap_cuda_rms_norm_backward_bf16(gx, gw, dDy, dX, dW, s.n, s.c, eps);
    within(gx.host(), dx, kElementwise, "rms norm dx");
    within(gw.host(), dw, kReduction, "rms norm dw");
  }
}

TEST(CudaNorms, L2NormalizeMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(3);
  // Rows of x have norms near sqrt(c / 3) >= 3.8; row 2, scaled down, falls
  // under eps, where the clamp holds (forward and backward).
  const float eps = 0.5f;
  for (Shape s : {Shape{37, 45}, Shape{8, 300}}) {
    auto x = randomVector(rng, s.n * s.c), dy = randomVector(rng, s.n * s.c);
    for (int64_t j = 0; j < s.c; ++j)
      x[2 * s.c + j] *= 0.01f;
    DeviceBuffer<float> dX(x), dDy(dy);
    std::vector<float> y(x.size()), dx(x.size());
    lap_cpu_l2_normalize_forward(y.data(), x.data(), s.n, s.c, eps);
    lap_cpu_l2_normalize_backward(dx.data(), dy.data(), x.data(), s.n, s.c,
                                  eps);
    DeviceBuffer<float> gy(nanVector(y.size())), gx(nanVector(dx.size()));
    lap_cuda_l2_normalize_forward(gy, dX, s.n, s.c, eps);
    lap_cuda_l2_normalize_backward(gx, dDy, dX, s.n, s.c, eps);
    expectWithinScale(gy.host(), y, kElementwise, "y");
    expectWithinScale(gx.host(), dx, kElementwise, "dx");
  }
}

TEST(CudaNorms, WeightNormMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(4);
  struct Rows {
    int64_t k, d;
  };
  for (Rows s : {Rows{37, 45}, Rows{5, 700}}) {
    auto v = randomVector(rng, s.k * s.d),
         g = randomVector(rng, s.k, 0.5f, 2.0f),
         dw = randomVector(rng, s.k * s.d);
    DeviceBuffer<float> dV(v), dG(g), dDw(dw);
    std::vector<float> w(v.size()), dv(v.size()), dg(s.k);
    lap_cpu_weight_norm_forward(w.data(), v.data(), g.data(), s.k, s.d);
    lap_cpu_weight_norm_backward(dv.data(), dg.data(), dw.data(), v.data(),
                                 g.data(), s.k, s.d);
    DeviceBuffer<float> gw(nanVector(w.size()));
    lap_cuda_weight_norm_forward(gw, dV, dG, s.k, s.d);
    expectWithinScale(gw.host(), w, kElementwise, "w");
    for (int mask : {3, 1, 2}) {
      DeviceBuffer<float> gv(nanVector(dv.size())), gg(nanVector(s.k));
      lap_cuda_weight_norm_backward(mask & 1 ? gv.get() : nullptr,
                                    mask & 2 ? gg.get() : nullptr, dDw, dV, dG,
                                    s.k, s.d);
      if (mask & 1)
        expectWithinScale(gv.host(), dv, kElementwise, "dv");
      if (mask & 2)
        expectWithinScale(gg.host(), dg, kElementwise, "dg");
    }
  }
}

TEST(CudaNorms, LayerScaleBackwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(5);
  for (Shape s : kShapes) {
    auto x = randomVector(rng, s.n * s.c), dy = randomVector(rng, s.n * s.c),
         gamma = randomVector(rng, s.c);
    DeviceBuffer<float> dX(x), dDy(dy), dGamma(gamma);
    std::vector<float> dx(x.size()), dgamma(s.c);
    lap_cpu_layer_scale_backward(dx.data(), dgamma.data(), dy.data(), x.data(),
                                 gamma.data(), s.n, s.c);
    for (int mask : {3, 1, 2}) {
      DeviceBuffer<float> gx(nanVector(dx.size())), gg(nanVector(s.c));
      lap_cuda_layer_scale_backward(mask & 1 ? gx.get() : nullptr,
                                    mask & 2 ? gg.get() : nullptr, dDy, dX,
                                    dGamma, s.n, s.c);
      if (mask & 1)
        expectWithinScale(gx.host(), dx, kElementwise, "dx");
      if (mask & 2)
        expectWithinScale(gg.host(), dgamma, kReduction, "dgamma");
    }
  }
}

// A bf16 model's LayerScale gradient against the CPU's bf16 kernel: dx is
// one product rounded on both sides (equal); dgamma's sums within a bf16
// step.
TEST(CudaNorms, LayerScaleBf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(6);
  const int64_t n = 300, c = 96;
  auto x = bf16Vector(randomVector(rng, n * c)),
       dy = bf16Vector(randomVector(rng, n * c)),
       gamma = bf16Vector(randomVector(rng, c));
  std::vector<lap_bf16> dx(x.size()), dgamma(c);
  lap_cpu_layer_scale_backward_bf16(dx.data(), dgamma.data(), dy.data(),
                                    x.data(), gamma.data(), n, c);
  DeviceBuffer<lap_bf16> dX(x), dDy(dy), dGamma(gamma),
      gx(std::vector<lap_bf16>(dx.size(), 0xffff)),
      gg(std::vector<lap_bf16>(c, 0xffff));
  lap_cuda_layer_scale_backward_bf16(gx, gg, dDy, dX, dGamma, n, c);
  EXPECT_EQ(gx.host(), dx);
  expectWithinScale(valuesOf(gg.host()), valuesOf(dgamma), 0x1p-8 + kReduction,
                    "dgamma");
}

} // namespace
