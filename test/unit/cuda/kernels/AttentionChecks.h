//===- AttentionChecks.h - What the CUDA attention tests share ---*- C++ -*-===//
//
// Cases, tolerances and the check of the CUDA attention kernels against
// their CPU twins on the same seeded inputs, for the tests on a GPU
// (AttentionTest.cpp) and on the emulator (test/unit/cuda/emulator). The
// CPU kernels are checked against an independent reference in
// test/unit/kernels/AttentionTest.cpp. Every head of a call has its own
// kind, so each case mixes them.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_CUDA_KERNELS_ATTENTIONCHECKS_H
#define LAP_TEST_UNIT_CUDA_KERNELS_ATTENTIONCHECKS_H

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace lap::test::attention {

// Tolerances relative to each tensor's largest magnitude: the kernels sum
// in fp32 in another order than the CPU (and exp2 differs by a few ulp), so
// errors scale with the tensor, not with each entry. Backward's sums are
// longer and dS = P (alpha dP - D_i) cancels. Magnitudes below 1 count as
// 1: a tensor that is zero but for rounding (dq and dk of a single token,
// where P = 1 makes dS vanish) holds only noise of the inputs' scale.
inline constexpr double kForwardTolerance = 1e-5;
inline constexpr double kBackwardTolerance = 1e-4;
// A bf16 output is an fp32 result rounded once on each side: the two fp32
// results differ as above, and their roundings by at most one bf16 step
// (2^-8 relative) more.
inline constexpr double kBf16Step = 1.0 / 256;
// A bf16 model's heads up to 128 wide run on the tensor cores, where P
// and dS enter the next product as bf16: each weight is off by at most
// half a step. So O is off by at most |alpha| / 2 steps of max |v| (here
// |alpha| <= 1.3, |v| <= 1); the gradients' sums of such products stay as
// far within one more step of the scale the tolerances count in (at
// least 1).
inline constexpr double kBf16Weights = kBf16Step;

struct Case {
  int64_t B, T, S, H, KV, D;
  bool causal;
  bool learned; // dcoefficients requested
  std::string str() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) +
           " S=" + std::to_string(S) + " H=" + std::to_string(H) +
           " KV=" + std::to_string(KV) + " D=" + std::to_string(D) +
           (causal ? " causal" : "") + (learned ? " learned" : "");
  }
};

/// [2, H] coefficients: heads cycle through attn (1, 0), laplacian (-1, 1)
/// and an arbitrary learned-like pair; cross attention (S != T) takes no
/// beta, so its heads get arbitrary alphas.
inline std::vector<float> coefficientsFor(const Case &c) {
  const float kinds[3][2] = {{1.0f, 0.0f}, {-1.0f, 1.0f}, {0.7f, -0.4f}};
  std::vector<float> coefficients(2 * c.H);
  for (int64_t h = 0; h < c.H; ++h) {
    const bool self = c.S == c.T;
    coefficients[h] = self ? kinds[h % 3][0] : (h % 2 ? -0.6f : 1.3f);
    coefficients[c.H + h] = self ? kinds[h % 3][1] : 0.0f;
  }
  return coefficients;
}

/// Expects got to match want within tol times want's largest finite
/// magnitude (at least 1); infinite entries (lse of a row without keys)
/// must match exactly. Reports the count and the worst entry, not every
/// one.
inline void expectAttentionClose(const std::vector<float> &got,
                                 const std::vector<float> &want, double tol,
                                 const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double largest = 1.0;
  for (float w : want)
    if (std::isfinite(w))
      largest = std::max(largest, double(std::fabs(w)));
  const double bound = tol * largest;
  size_t bad = 0, worst = 0;
  double worstError = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool ok = std::isfinite(want[i])
                        ? std::fabs(double(got[i]) - want[i]) <= bound
                        : got[i] == want[i];
    if (ok)
      continue;
    const double error = std::isnan(got[i]) || !std::isfinite(want[i])
                             ? INFINITY
                             : std::fabs(double(got[i]) - want[i]);
    if (bad++ == 0 || error > worstError) {
      worst = i;
      worstError = error;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << want.size()
                     << " beyond " << bound << "; worst at " << worst
                     << ": got " << (bad ? got[worst] : 0.0f) << ", want "
                     << (bad ? want[worst] : 0.0f);
}

/// One case's seeded inputs at element type E (float, or lap_bf16's bits).
template <typename E> struct Inputs {
  Inputs(const Case &c, uint32_t seed)
      : c(c), scale(1.0f / std::sqrt(float(std::max<int64_t>(c.D, 1)))),
        coefficients(coefficientsFor(c)) {
    std::mt19937 rng(seed);
    const size_t nq = size_t(c.B * c.T * c.H * c.D);
    const size_t nk = size_t(c.B * c.S * c.KV * c.D);
    // Queries and keys in [-2, 2]: scores of about +-2, a peaked softmax.
    q = elements(randomVector(rng, nq, -2.0f, 2.0f));
    k = elements(randomVector(rng, nk, -2.0f, 2.0f));
    v = elements(randomVector(rng, nk));
    dout = elements(randomVector(rng, nq));
  }
  static std::vector<E> elements(const std::vector<float> &x) {
    if constexpr (std::is_same_v<E, float>)
      return x;
    else
      return bf16Vector(x);
  }

  Case c;
  float scale;
  std::vector<float> coefficients;
  std::vector<E> q, k, v, dout;
};

/// What a backend makes of the inputs (outputs start as NaN: an element
/// that a kernel skips fails). dcoefficients is only written for a learned
/// case.
template <typename E> struct Outputs {
  explicit Outputs(const Inputs<E> &in)
      : o(in.q.size(), nan()), dq(in.q.size(), nan()), dk(in.k.size(), nan()),
        dv(in.k.size(), nan()),
        lse(nanVector(size_t(in.c.B * in.c.H * in.c.T))),
        dcoefficients(nanVector(size_t(2 * in.c.H))) {}
  static E nan() {
    if constexpr (std::is_same_v<E, float>)
      return NAN;
    else
      return 0x7fc0;
  }
  std::vector<E> o, dq, dk, dv;
  std::vector<float> lse, dcoefficients;
};

inline void cpuForward(float *o, float *lse, const Inputs<float> &in) {
  const Case &c = in.c;
  lap_cpu_attention_forward(o, lse, in.q.data(), in.k.data(), in.v.data(),
                            in.coefficients.data(), c.B, c.T, c.S, c.H, c.KV,
                            c.D, in.scale, c.causal);
}
inline void cpuForward(lap_bf16 *o, float *lse, const Inputs<lap_bf16> &in) {
  const Case &c = in.c;
  lap_cpu_attention_forward_bf16(o, lse, in.q.data(), in.k.data(), in.v.data(),
                                 in.coefficients.data(), c.B, c.T, c.S, c.H,
                                 c.KV, c.D, in.scale, c.causal);
}
inline void cpuBackward(Outputs<float> &out, const Inputs<float> &in) {
  const Case &c = in.c;
  lap_cpu_attention_backward(out.dq.data(), out.dk.data(), out.dv.data(),
                             c.learned ? out.dcoefficients.data() : nullptr,
                             in.dout.data(), in.q.data(), in.k.data(),
                             in.v.data(), out.o.data(), out.lse.data(),
                             in.coefficients.data(), c.B, c.T, c.S, c.H, c.KV,
                             c.D, in.scale, c.causal);
}
inline void cpuBackward(Outputs<lap_bf16> &out, const Inputs<lap_bf16> &in) {
  const Case &c = in.c;
  lap_cpu_attention_backward_bf16(
      out.dq.data(), out.dk.data(), out.dv.data(),
      c.learned ? out.dcoefficients.data() : nullptr, in.dout.data(),
      in.q.data(), in.k.data(), in.v.data(), out.o.data(), out.lse.data(),
      in.coefficients.data(), c.B, c.T, c.S, c.H, c.KV, c.D, in.scale,
      c.causal);
}

inline std::vector<float> floatsOf(const std::vector<float> &x) { return x; }
inline std::vector<float> floatsOf(const std::vector<lap_bf16> &x) {
  return valuesOf(x);
}

/// Backend::run(in, cpu, got) on one case against the CPU's kernels: its
/// forward into got.o and got.lse; its backward, reading the CPU's O and
/// lse (so that only the backward differs), into got's gradients.
template <typename Backend, typename E>
void checkAgainstCpu(const Case &c, uint32_t seed) {
  const bool bf16 = std::is_same_v<E, lap_bf16>;
  SCOPED_TRACE(c.str() + (bf16 ? " bf16" : ""));
  const Inputs<E> in(c, seed);
  Outputs<E> cpu(in), got(in);
  cpuForward(cpu.o.data(), cpu.lse.data(), in);
  cpuBackward(cpu, in);
  Backend::run(in, cpu, got);

  const double rounding = bf16 ? kBf16Step + kBf16Weights : 0.0;
  expectAttentionClose(floatsOf(got.o), floatsOf(cpu.o),
                       kForwardTolerance + rounding, "o");
  expectAttentionClose(got.lse, cpu.lse, kForwardTolerance, "lse");
  const double tolerance = kBackwardTolerance + rounding;
  expectAttentionClose(floatsOf(got.dq), floatsOf(cpu.dq), tolerance, "dq");
  expectAttentionClose(floatsOf(got.dk), floatsOf(cpu.dk), tolerance, "dk");
  expectAttentionClose(floatsOf(got.dv), floatsOf(cpu.dv), tolerance, "dv");
  if (c.learned) {
    expectAttentionClose(got.dcoefficients, cpu.dcoefficients,
                         kBackwardTolerance, "dcoefficients");
  } else { // null: nothing written, so the NaN stay
    for (float x : got.dcoefficients)
      EXPECT_TRUE(std::isnan(x)) << "dcoefficients written though null";
  }
}

/// A decode call's seeded inputs: a cache holding B sequences of capacity
/// positions, T new queries, keys and values at positions first ..
/// first + T - 1, and per-head (alpha, beta) of either sign.
struct DecodeInputs {
  DecodeInputs(int64_t B, int64_t T, int64_t first, int64_t capacity, int64_t H,
               int64_t KV, int64_t D, uint32_t seed)
      : B(B), T(T), first(first), capacity(capacity), H(H), KV(KV), D(D),
        scale(1.0f / std::sqrt(float(D))) {
    std::mt19937 rng(seed);
    const size_t cache = size_t(B * capacity * KV * D);
    const size_t fresh = size_t(B * T * KV * D);
    q = randomVector(rng, size_t(B * T * H * D));
    k = randomVector(rng, fresh), v = randomVector(rng, fresh);
    kCache = randomVector(rng, cache), vCache = randomVector(rng, cache);
    coefficients = randomVector(rng, size_t(H), 0.5f, 1.5f);
    const std::vector<float> beta = randomVector(rng, size_t(H), -0.5f, 0.5f);
    coefficients.insert(coefficients.end(), beta.begin(), beta.end());
  }
  int64_t B, T, first, capacity, H, KV, D;
  float scale;
  std::vector<float> q, k, v, kCache, vCache, coefficients;
};

/// attention_decode by Backend::decode(in, o, kCache, vCache) and by the
/// CPU from the same caches: the appended keys and values and the untouched
/// cache rows exactly, o within 1e-5 of max(1, |o|) (sums in another
/// order).
template <typename Backend>
void checkDecodeAgainstCpu(int64_t B, int64_t T, int64_t first,
                           int64_t capacity, int64_t H, int64_t KV, int64_t D,
                           uint32_t seed) {
  SCOPED_TRACE("decode B=" + std::to_string(B) + " T=" + std::to_string(T) +
               " first=" + std::to_string(first) + " H=" + std::to_string(H) +
               " KV=" + std::to_string(KV) + " D=" + std::to_string(D));
  const DecodeInputs in(B, T, first, capacity, H, KV, D, seed);
  std::vector<float> want = nanVector(in.q.size()), kWant = in.kCache,
                     vWant = in.vCache;
  lap_cpu_attention_decode(want.data(), kWant.data(), vWant.data(), in.q.data(),
                           in.k.data(), in.v.data(), in.coefficients.data(), B,
                           T, first, capacity, H, KV, D, in.scale);
  std::vector<float> got = nanVector(in.q.size()), kGot = in.kCache,
                     vGot = in.vCache;
  Backend::decode(in, got, kGot, vGot);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i])))
        << "o at " << i;
  EXPECT_TRUE(kGot == kWant) << "the key cache differs";
  EXPECT_TRUE(vGot == vWant) << "the value cache differs";
}

} // namespace lap::test::attention

#endif // LAP_TEST_UNIT_CUDA_KERNELS_ATTENTIONCHECKS_H
