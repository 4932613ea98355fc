//===- MatmulBf16Test.cpp - The linear kernels at bf16 matmul precision ---===//
//
// At LAP_MATMUL_BF16 a GEMM multiplies its operands rounded to bf16 and
// accumulates in fp32. The product of two bf16 values is exact in fp32, so
// a kernel at bf16 computes what the same kernel at fp32 computes from
// inputs rounded beforehand: the tests hold each kernel's outputs to that,
// within 1e-6 of each tensor's largest magnitude (the GEMMs may sum in
// another order). What is not a GEMM operand is not rounded: biases, the
// bias gradients' column sums and the GELU's pre-activation. Run once per
// kernel instruction set (IsaTestMain): at the best one, on a CPU with
// AVX512_BF16 or AMX, the GEMMs take oneDNN's bf16 matmul; below it, or
// without them, the fp32 GEMM of rounded values.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/platform/CpuFeatures.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace lap::test;

constexpr double kSameProducts = 1e-6;

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::vector<float> rounded(std::vector<float> v) {
  for (float &e : v)
    e = lap::bf16::round(e);
  return v;
}

using Shape = LinearShape;

/// A linear layer's random bf16 tensors (x, w, b, dy, drawn in that order)
/// and their values.
struct LayerInputs {
  LayerInputs(std::mt19937 &rng, Shape s)
      : x(bf16Vector(randomVector(rng, s.n * s.in))),
        w(bf16Vector(randomVector(rng, s.out * s.in))),
        b(bf16Vector(randomVector(rng, s.out))),
        dy(bf16Vector(randomVector(rng, s.n * s.out))), fx(valuesOf(x)),
        fw(valuesOf(w)), fb(valuesOf(b)), fdy(valuesOf(dy)) {}
  std::vector<lap_bf16> x, w, b, dy;
  std::vector<float> fx, fw, fb, fdy;
};

// Large enough for oneDNN's blocked paths and the parallel rounding.
const Shape kShapes[] = {{5, 7, 3}, {1, 1, 1}, {300, 96, 130}};

TEST(MatmulBf16, TakesBf16InstructionsWhereTheChosenSetHasThem) {
  std::string chosen = lap_cpu_isa(), available = lap_cpu_isas();
  bool best = available.rfind(chosen, 0) == 0; // lap_cpu_isas: best first
  // cpuid, as oneDNN asks it: a hypervisor may hide the flag from
  // /proc/cpuinfo while the CPU runs the instructions (AMX's bf16 comes
  // with AVX512_BF16).
  bool hardware = lap::platform::hostHasFeature("avx512bf16");
  EXPECT_EQ(lap::cpu::bf16Instructions(), best && hardware)
      << "kernels " << chosen << " of " << available
      << (hardware ? ", a CPU with bf16 instructions" : "");
}

TEST(Bf16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(bitsOf(lap::bf16::round(1.0f)), 0x3f800000u);
  // Halfway between two bf16 values: to the even one, down then up.
  EXPECT_EQ(bitsOf(lap::bf16::round(fromBits(0x3f808000u))), 0x3f800000u);
  EXPECT_EQ(bitsOf(lap::bf16::round(fromBits(0x3f818000u))), 0x3f820000u);
  // Just above and below halfway.
  EXPECT_EQ(bitsOf(lap::bf16::round(fromBits(0x3f808001u))), 0x3f810000u);
  EXPECT_EQ(bitsOf(lap::bf16::round(fromBits(0x3f807fffu))), 0x3f800000u);
  EXPECT_EQ(bitsOf(lap::bf16::round(fromBits(0xbf808001u))), 0xbf810000u);
  EXPECT_EQ(bitsOf(lap::bf16::round(-0.0f)), 0x80000000u);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(lap::bf16::round(inf), inf);
  EXPECT_EQ(lap::bf16::round(-inf), -inf);
  // Beyond the largest finite bf16 (0x7f7f0000) by more than half a step.
  EXPECT_EQ(lap::bf16::round(std::numeric_limits<float>::max()), inf);
  EXPECT_TRUE(
      std::isnan(lap::bf16::round(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(lap::bf16::round(fromBits(0x7f800001u))))
      << "a signalling NaN with a low payload must not round to infinity";
}

// operand() rounds whole rows in vector loops: every element as round()
// does, special values included, in rows of a leading dimension wider than
// the matrix (the columns beyond it are not the operand's). Widths around
// the vector lengths and their remainders. A NaN stays a NaN (bf16 cannot
// keep a payload that is all in fp32's low half).
TEST(MatmulBf16, OperandRoundsEveryElementAsRoundDoes) {
  const uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x3f808001u,
                               0xbf808001u, 0x80000000u, 0x7f800000u,
                               0xff800000u, 0x7f7fffffu, 0x7fc00000u,
                               0x7f800001u, 0x00000001u, 0x807fffffu};
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  for (int64_t cols : {1, 7, 16, 33, 100, 515}) {
    const int64_t rows = 70, ld = cols + 3;
    std::vector<float> a(size_t(rows * ld));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = i % 5 == 0 ? fromBits(specials[(i / 5) % std::size(specials)])
                        : uniform(gen);
    for (int slot = 0; slot < 4; ++slot) {
      const lap::cpu::Matrix m =
          lap::cpu::operand(LAP_MATMUL_BF16, a.data(), rows, cols, ld, slot);
      ASSERT_EQ(m.ld, ld);
      ASSERT_NE(m.data, static_cast<const void *>(a.data()));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const size_t at = size_t(i * ld + j);
          const uint32_t got =
              m.bf16 ? uint32_t(static_cast<const uint16_t *>(m.data)[at]) << 16
                     : bitsOf(static_cast<const float *>(m.data)[at]);
          const uint32_t want = bitsOf(lap::bf16::round(a[at]));
          auto where = [&] {
            std::ostringstream out;
            out << "cols " << cols << " slot " << slot << " at (" << i << ", "
                << j << ") of bits " << std::hex << bitsOf(a[at]);
            return out.str();
          };
          if (std::isnan(fromBits(want)))
            ASSERT_TRUE(std::isnan(fromBits(got))) << where();
          else
            ASSERT_EQ(got, want) << where();
        }
    }
  }
}

TEST(MatmulBf16, LinearMultipliesOperandsRoundedToBf16) {
  std::mt19937 rng(11);
  for (Shape s : kShapes) {
    SCOPED_TRACE(s.name());
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out), dy = randomVector(rng, s.n * s.out);
    auto rx = rounded(x), rw = rounded(w), rdy = rounded(dy);
    auto y = nanVector(s.n * s.out), want = nanVector(s.n * s.out);
    lap_cpu_linear_forward(y.data(), x.data(), w.data(), b.data(), s.n, s.in,
                           s.out, LAP_MATMUL_BF16);
    lap_cpu_linear_forward(want.data(), rx.data(), rw.data(), b.data(), s.n,
                           s.in, s.out, LAP_MATMUL_FP32);
    expectWithinScale(y, want, kSameProducts, "y");

    auto dx = nanVector(x.size()), dw = nanVector(w.size()),
         db = nanVector(b.size());
    auto wantDx = nanVector(x.size()), wantDw = nanVector(w.size()),
         wantDb = nanVector(b.size());
    lap_cpu_linear_backward(dx.data(), dw.data(), db.data(), dy.data(),
                            x.data(), w.data(), s.n, s.in, s.out,
                            LAP_MATMUL_BF16);
    lap_cpu_linear_backward(wantDx.data(), wantDw.data(), nullptr, rdy.data(),
                            rx.data(), rw.data(), s.n, s.in, s.out,
                            LAP_MATMUL_FP32);
    lap_cpu_linear_backward(nullptr, nullptr, wantDb.data(), dy.data(),
                            x.data(), w.data(), s.n, s.in, s.out,
                            LAP_MATMUL_FP32);
    expectWithinScale(dx, wantDx, kSameProducts, "dx");
    expectWithinScale(dw, wantDw, kSameProducts, "dw");
    EXPECT_EQ(db, wantDb) << "the bias gradient sums dy as given";
  }
}

// A bf16 model's linear kernels compute what the fp32 kernels compute on
// the bf16 values, rounded once: y with its bias added before rounding; db
// sums dy in fp32 in the fp32 kernel's order, so it is that sum rounded,
// bit for bit.
TEST(MatmulBf16, Bf16ModelLinearKernelsRoundTheFp32Results) {
  std::mt19937 rng(13);
  for (Shape s : kShapes) {
    SCOPED_TRACE(s.name());
    auto [x, w, b, dy, fx, fw, fb, fdy] = LayerInputs(rng, s);

    std::vector<lap_bf16> y(s.n * s.out, 0xffff);
    auto want = nanVector(s.n * s.out);
    lap_cpu_linear_forward_bf16(y.data(), x.data(), w.data(), b.data(), s.n,
                                s.in, s.out);
    lap_cpu_linear_forward(want.data(), fx.data(), fw.data(), fb.data(), s.n,
                           s.in, s.out, LAP_MATMUL_FP32);
    expectRoundedFrom(y, want, "y");

    std::vector<lap_bf16> dx(x.size(), 0xffff), dw(w.size(), 0xffff),
        db(b.size(), 0xffff);
    auto wantDx = nanVector(x.size()), wantDw = nanVector(w.size()),
         wantDb = nanVector(b.size());
    lap_cpu_linear_backward_bf16(dx.data(), dw.data(), db.data(), dy.data(),
                                 x.data(), w.data(), s.n, s.in, s.out);
    lap_cpu_linear_backward(wantDx.data(), wantDw.data(), wantDb.data(),
                            fdy.data(), fx.data(), fw.data(), s.n, s.in, s.out,
                            LAP_MATMUL_FP32);
    expectRoundedFrom(dx, wantDx, "dx");
    expectRoundedFrom(dw, wantDw, "dw");
    EXPECT_EQ(db, bf16Vector(wantDb));
  }
}

// So do its linear layer with the tanh GELU and that GELU's gradient: y
// and pre are the fp32 kernel's rounded (the GELU taken before rounding),
// dpre too, and dbias the fp32 kernel's column sums of the unrounded dpre
// rounded (the GEMMs may sum in another order: not bit for bit). With and
// without the optional outputs, and on empty shapes.
TEST(MatmulBf16, Bf16ModelGeluKernelsRoundTheFp32Results) {
  std::mt19937 rng(14);
  // Beside kShapes: no rows, and K = 0 forward (in) and backward (out).
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.insert(shapes.end(), {{0, 4, 3}, {6, 0, 5}, {6, 5, 0}});
  for (Shape s : shapes) {
    SCOPED_TRACE(s.name());
    auto [x, w, b, dy, fx, fw, fb, fdy] = LayerInputs(rng, s);

    std::vector<lap_bf16> y(s.n * s.out, 0xffff), pre(y.size(), 0xffff),
        alone(y.size(), 0xffff);
    auto wantY = nanVector(y.size()), wantPre = nanVector(y.size());
    lap_cpu_linear_gelu_forward_bf16(y.data(), pre.data(), x.data(), w.data(),
                                     b.data(), s.n, s.in, s.out);
    lap_cpu_linear_gelu_forward(wantY.data(), wantPre.data(), fx.data(),
                                fw.data(), fb.data(), s.n, s.in, s.out,
                                LAP_MATMUL_FP32);
    expectRoundedFrom(y, wantY, "y");
    expectRoundedFrom(pre, wantPre, "pre");
    lap_cpu_linear_gelu_forward_bf16(alone.data(), nullptr, x.data(), w.data(),
                                     nullptr, s.n, s.in, s.out);
    lap_cpu_linear_gelu_forward(wantY.data(), nullptr, fx.data(), fw.data(),
                                nullptr, s.n, s.in, s.out, LAP_MATMUL_FP32);
    expectRoundedFrom(alone, wantY, "y without pre and bias");

    // dy [n, out] through w [out, in] back to pre [n, in]: the layer after
    // the GELU.
    auto pin = bf16Vector(randomVector(rng, s.n * s.in));
    auto fpin = valuesOf(pin);
    std::vector<lap_bf16> dpre(pin.size(), 0xffff), dbias(s.in, 0xffff),
        dpreAlone(pin.size(), 0xffff);
    auto wantDpre = nanVector(pin.size()), wantDbias = nanVector(s.in);
    lap_cpu_gelu_linear_backward_bf16(dpre.data(), dbias.data(), dy.data(),
                                      w.data(), pin.data(), s.n, s.in, s.out);
    lap_cpu_gelu_linear_backward(wantDpre.data(), wantDbias.data(), fdy.data(),
                                 fw.data(), fpin.data(), s.n, s.in, s.out,
                                 LAP_MATMUL_FP32);
    expectRoundedFrom(dpre, wantDpre, "dpre");
    expectRoundedFrom(dbias, wantDbias, "dbias");
    lap_cpu_gelu_linear_backward_bf16(dpreAlone.data(), nullptr, dy.data(),
                                      w.data(), pin.data(), s.n, s.in, s.out);
    EXPECT_EQ(dpreAlone, dpre);
  }
}

// So do its fused query/key/value projections: each block as a linear
// layer, dx the three blocks' fp32 sum rounded once.
TEST(MatmulBf16, Bf16ModelHeadsKernelsRoundTheFp32Results) {
  std::mt19937 rng(15);
  const int64_t n = 70, in = 48, hq = 32, hkv = 16, rows = hq + 2 * hkv;
  auto x = bf16Vector(randomVector(rng, n * in)),
       w = bf16Vector(randomVector(rng, rows * in)),
       b = bf16Vector(randomVector(rng, rows)),
       dq = bf16Vector(randomVector(rng, n * hq)),
       dk = bf16Vector(randomVector(rng, n * hkv)),
       dv = bf16Vector(randomVector(rng, n * hkv));
  auto fx = valuesOf(x), fw = valuesOf(w), fb = valuesOf(b), fdq = valuesOf(dq),
       fdk = valuesOf(dk), fdv = valuesOf(dv);

  std::vector<lap_bf16> q(n * hq, 0xffff), k(n * hkv, 0xffff),
      v(n * hkv, 0xffff);
  auto wq = nanVector(q.size()), wk = nanVector(k.size()),
       wv = nanVector(v.size());
  lap_cpu_linear_heads_forward_bf16(q.data(), k.data(), v.data(), x.data(),
                                    w.data(), b.data(), n, in, hq, hkv);
  lap_cpu_linear_heads_forward(wq.data(), wk.data(), wv.data(), fx.data(),
                               fw.data(), fb.data(), n, in, hq, hkv,
                               LAP_MATMUL_FP32);
  expectRoundedFrom(q, wq, "q");
  expectRoundedFrom(k, wk, "k");
  expectRoundedFrom(v, wv, "v");

  std::vector<lap_bf16> dx(x.size(), 0xffff), dw(w.size(), 0xffff),
      db(b.size(), 0xffff);
  auto wantDx = nanVector(x.size()), wantDw = nanVector(w.size()),
       wantDb = nanVector(b.size());
  lap_cpu_linear_heads_backward_bf16(dx.data(), dw.data(), db.data(), dq.data(),
                                     dk.data(), dv.data(), x.data(), w.data(),
                                     n, in, hq, hkv);
  lap_cpu_linear_heads_backward(wantDx.data(), wantDw.data(), wantDb.data(),
                                fdq.data(), fdk.data(), fdv.data(), fx.data(),
                                fw.data(), n, in, hq, hkv, LAP_MATMUL_FP32);
  expectRoundedFrom(dx, wantDx, "dx");
  expectRoundedFrom(dw, wantDw, "dw");
  EXPECT_EQ(db, bf16Vector(wantDb));
}

// A bf16 model's lm_head with its cross-entropy is the fp32 kernel at bf16
// products on the bf16 values (which rounds the logits' gradient for its
// GEMMs as the bf16 kernel does), dx and dw rounded: bit for bit, with and
// without a softcap, with ignored targets.
TEST(MatmulBf16, Bf16ModelLinearCrossEntropyRoundsTheFp32Results) {
  std::mt19937 rng(14);
  const int64_t n = 37, C = 24, V = 301;
  auto x = bf16Vector(randomVector(rng, n * C)),
       w = bf16Vector(randomVector(rng, V * C));
  auto fx = valuesOf(x), fw = valuesOf(w);
  std::vector<int32_t> targets(n);
  std::uniform_int_distribution<int32_t> id(0, V - 1);
  for (int32_t &t : targets)
    t = id(rng);
  targets[3] = targets[20] = -1;
  const float dloss = 1.0f;
  for (float softcap : {0.0f, 15.0f}) {
    SCOPED_TRACE("softcap " + std::to_string(softcap));
    float loss = NAN, wantLoss = NAN;
    std::vector<lap_bf16> dx(x.size(), 0xffff), dw(w.size(), 0xffff);
    auto wantDx = nanVector(x.size()), wantDw = nanVector(w.size());
    lap_cpu_linear_cross_entropy_bf16(&loss, dx.data(), dw.data(), &dloss,
                                      x.data(), w.data(), targets.data(), n, C,
                                      V, 0.1f, softcap);
    lap_cpu_linear_cross_entropy(&wantLoss, wantDx.data(), wantDw.data(),
                                 &dloss, fx.data(), fw.data(), targets.data(),
                                 n, C, V, 0.1f, softcap, LAP_MATMUL_BF16);
    EXPECT_EQ(loss, wantLoss);
    EXPECT_EQ(dx, bf16Vector(wantDx));
    EXPECT_EQ(dw, bf16Vector(wantDw));
  }
}

// The rounding is there: bf16 keeps 8 significant bits, so products of
// [-1, 1] operands move by about 2^-9 of their size and sums of 96 of them
// by about 1e-2 at the worst of 39,000 outputs; not by more than 2^-7 of
// the sums' scale.
TEST(MatmulBf16, DiffersFromFp32ByBf16Rounding) {
  std::mt19937 rng(12);
  Shape s = kShapes[2];
  auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in);
  std::vector<float> y16(s.n * s.out), y32(s.n * s.out);
  lap_cpu_linear_forward(y16.data(), x.data(), w.data(), nullptr, s.n, s.in,
                         s.out, LAP_MATMUL_BF16);
  lap_cpu_linear_forward(y32.data(), x.data(), w.data(), nullptr, s.n, s.in,
                         s.out, LAP_MATMUL_FP32);
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < y32.size(); ++i) {
    worst = std::max(worst, std::fabs(double(y16[i]) - double(y32[i])));
    scale = std::max(scale, std::fabs(double(y32[i])));
  }
  EXPECT_GT(worst, 1e-3 * scale);
  EXPECT_LT(worst, 0x1p-7 * scale);
}

TEST(MatmulBf16, GeluLinearKernelsMultiplyOperandsRoundedToBf16) {
  std::mt19937 rng(13);
  for (Shape s : kShapes) {
    SCOPED_TRACE(s.name());
    auto x = randomVector(rng, s.n * s.in), w = randomVector(rng, s.out * s.in),
         b = randomVector(rng, s.out);
    auto rx = rounded(x), rw = rounded(w);
    auto y = nanVector(s.n * s.out), pre = nanVector(s.n * s.out),
         wantY = nanVector(s.n * s.out), wantPre = nanVector(s.n * s.out);
    lap_cpu_linear_gelu_forward(y.data(), pre.data(), x.data(), w.data(),
                                b.data(), s.n, s.in, s.out, LAP_MATMUL_BF16);
    lap_cpu_linear_gelu_forward(wantY.data(), wantPre.data(), rx.data(),
                                rw.data(), b.data(), s.n, s.in, s.out,
                                LAP_MATMUL_FP32);
    expectWithinScale(y, wantY, kSameProducts, "y");
    expectWithinScale(pre, wantPre, kSameProducts, "pre");

    // The backward of a layer [n, in] -> [n, out] whose input was the GELU
    // of pre [n, in].
    auto dy = randomVector(rng, s.n * s.out), p = randomVector(rng, s.n * s.in);
    auto rdy = rounded(dy);
    auto dpre = nanVector(s.n * s.in), dbias = nanVector(s.in),
         wantDpre = nanVector(s.n * s.in), wantDbias = nanVector(s.in);
    lap_cpu_gelu_linear_backward(dpre.data(), dbias.data(), dy.data(), w.data(),
                                 p.data(), s.n, s.in, s.out, LAP_MATMUL_BF16);
    lap_cpu_gelu_linear_backward(wantDpre.data(), wantDbias.data(), rdy.data(),
                                 rw.data(), p.data(), s.n, s.in, s.out,
                                 LAP_MATMUL_FP32);
    expectWithinScale(dpre, wantDpre, kSameProducts, "dpre");
    expectWithinScale(dbias, wantDbias, kSameProducts, "dbias");
  }
}

TEST(MatmulBf16, HeadsKernelsMultiplyOperandsRoundedToBf16) {
  std::mt19937 rng(14);
  const int64_t n = 70, in = 48, hq = 32, hkv = 16, rows = hq + 2 * hkv;
  auto x = randomVector(rng, n * in), w = randomVector(rng, rows * in),
       b = randomVector(rng, rows);
  auto rx = rounded(x), rw = rounded(w);
  std::vector<float> q(n * hq), k(n * hkv), v(n * hkv), wq(n * hq), wk(n * hkv),
      wv(n * hkv);
  lap_cpu_linear_heads_forward(q.data(), k.data(), v.data(), x.data(), w.data(),
                               b.data(), n, in, hq, hkv, LAP_MATMUL_BF16);
  lap_cpu_linear_heads_forward(wq.data(), wk.data(), wv.data(), rx.data(),
                               rw.data(), b.data(), n, in, hq, hkv,
                               LAP_MATMUL_FP32);
  expectWithinScale(q, wq, kSameProducts, "q");
  expectWithinScale(k, wk, kSameProducts, "k");
  expectWithinScale(v, wv, kSameProducts, "v");

  auto dq = randomVector(rng, n * hq), dk = randomVector(rng, n * hkv),
       dv = randomVector(rng, n * hkv);
  auto rdq = rounded(dq), rdk = rounded(dk), rdv = rounded(dv);
  auto dx = nanVector(x.size()), dw = nanVector(w.size()),
       db = nanVector(b.size()), wantDx = nanVector(x.size()),
       wantDw = nanVector(w.size()), wantDb = nanVector(b.size());
  lap_cpu_linear_heads_backward(dx.data(), dw.data(), db.data(), dq.data(),
                                dk.data(), dv.data(), x.data(), w.data(), n, in,
                                hq, hkv, LAP_MATMUL_BF16);
  lap_cpu_linear_heads_backward(wantDx.data(), wantDw.data(), nullptr,
                                rdq.data(), rdk.data(), rdv.data(), rx.data(),
                                rw.data(), n, in, hq, hkv, LAP_MATMUL_FP32);
  lap_cpu_linear_heads_backward(nullptr, nullptr, wantDb.data(), dq.data(),
                                dk.data(), dv.data(), x.data(), w.data(), n, in,
                                hq, hkv, LAP_MATMUL_FP32);
  expectWithinScale(dx, wantDx, kSameProducts, "dx");
  expectWithinScale(dw, wantDw, kSameProducts, "dw");
  EXPECT_EQ(db, wantDb) << "the bias gradient sums the blocks as given";
}

} // namespace
