//===- AttentionChecks.h - What the CUDA attention tests share ---*- C++ -*-===//
//
// Cases, tolerances and the comparison of the CUDA attention kernels with
// their CPU twins, for the tests on a GPU (AttentionTest.cpp) and on the
// emulator (test/unit/cuda/emulator).
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

/// A bf16 case's seeded inputs and what the CPU's bf16 kernels make of
/// them (dcoefficients only for a learned case).
struct Bf16Run {
  Bf16Run(const Case &c, uint32_t seed)
      : c(c), scale(1.0f / std::sqrt(float(std::max<int64_t>(c.D, 1)))) {
    std::mt19937 rng(seed);
    const int64_t nq = c.B * c.T * c.H * c.D, nk = c.B * c.S * c.KV * c.D;
    // Queries and keys in [-2, 2]: scores of about +-2, a peaked softmax.
    q = bf16Vector(randomVector(rng, nq, -2.0f, 2.0f));
    k = bf16Vector(randomVector(rng, nk, -2.0f, 2.0f));
    v = bf16Vector(randomVector(rng, nk));
    dout = bf16Vector(randomVector(rng, nq));
    coefficients = coefficientsFor(c);
    o.resize(nq), dq.resize(nq), dk.resize(nk), dv.resize(nk);
    lse.resize(c.B * c.H * c.T), dcoefficients.resize(2 * c.H);
    lap_cpu_attention_forward_bf16(o.data(), lse.data(), q.data(), k.data(),
                                   v.data(), coefficients.data(), c.B, c.T, c.S,
                                   c.H, c.KV, c.D, scale, c.causal);
    lap_cpu_attention_backward_bf16(
        dq.data(), dk.data(), dv.data(),
        c.learned ? dcoefficients.data() : nullptr, dout.data(), q.data(),
        k.data(), v.data(), o.data(), lse.data(), coefficients.data(), c.B, c.T,
        c.S, c.H, c.KV, c.D, scale, c.causal);
  }

  Case c;
  float scale;
  std::vector<lap_bf16> q, k, v, dout;
  std::vector<float> coefficients;
  // The CPU's
  std::vector<lap_bf16> o, dq, dk, dv;
  std::vector<float> lse, dcoefficients;
};

} // namespace lap::test::attention

#endif // LAP_TEST_UNIT_CUDA_KERNELS_ATTENTIONCHECKS_H
