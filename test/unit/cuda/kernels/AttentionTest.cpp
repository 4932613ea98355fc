//===- AttentionTest.cpp - CUDA attention against its CPU twin ------------===//
//
// lap_cuda_attention_forward/backward and lap_cpu_attention_forward/backward
// (and their bf16 variants), and lap_cuda_attention_decode, on the same
// seeded inputs (the CPU kernels are checked against an independent
// reference in test/unit/kernels/AttentionTest.cpp). Every head of a call
// has its own kind, so each case mixes them. Built for the emulator
// (test/unit/cuda/emulator) the same tests run on the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "test/unit/cuda/RequireGpu.h"
#include "test/unit/cuda/kernels/DeviceBuffer.h"
#include "test/unit/kernels/KernelTestSupport.h"
#ifdef LAP_CUDA_EMULATOR
#include "test/unit/cuda/emulator/Emulator.h"
#else
#include "runtime/kernels/cuda/Context.h"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace lap::test;

// Tolerances relative to each tensor's largest magnitude: the kernels sum
// in fp32 in another order than the CPU (and exp2 differs by a few ulp), so
// errors scale with the tensor, not with each entry. Backward's sums are
// longer and dS = P (alpha dP - D_i) cancels. Magnitudes below 1 count as
// 1: a tensor that is zero but for rounding (dq and dk of a single token,
// where P = 1 makes dS vanish) holds only noise of the inputs' scale.
constexpr double kForwardTolerance = 1e-5;
constexpr double kBackwardTolerance = 1e-4;
// A bf16 output is an fp32 result rounded once on each side: the two fp32
// results differ as above, and their roundings by at most one bf16 step
// (2^-8 relative) more.
constexpr double kBf16Step = 1.0 / 256;
// A bf16 model's heads up to 128 wide run on the tensor cores, where P
// and dS enter the next product as bf16: each weight is off by at most
// half a step. So O is off by at most |alpha| / 2 steps of max |v| (here
// |alpha| <= 1.3, |v| <= 1); the gradients' sums of such products stay as
// far within one more step of the scale the tolerances count in (at
// least 1).
constexpr double kBf16Weights = kBf16Step;

struct Case {
  int64_t B, T, S, H, KV, D;
  bool causal;
  bool learned;       // dcoefficients requested
  int64_t window = 0; // causal: keys t - window < s <= t (0: all)
  int64_t documents = 0; // causal: packed documents of about this length
  bool padded = false;   // sequence b's keys: S - b (S / 2 + 7), at least 0
  std::string str() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) +
           " S=" + std::to_string(S) + " H=" + std::to_string(H) +
           " KV=" + std::to_string(KV) + " D=" + std::to_string(D) +
           (causal ? " causal" : "") + (learned ? " learned" : "") +
           (window ? " window=" + std::to_string(window) : "") +
           (documents ? " documents=" + std::to_string(documents) : "") +
           (padded ? " padded" : "");
  }
};

/// [2, H] coefficients: heads cycle through attn (1, 0), laplacian (-1, 1)
/// and an arbitrary learned-like pair; cross attention (S != T) takes no
/// beta, so its heads get arbitrary alphas.
std::vector<float> coefficientsFor(const Case &c) {
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
void expectAttentionClose(const std::vector<float> &got,
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
    // Documents of 1 to 2 * c.documents tokens: each query's start.
    if (c.documents > 0)
      starts = packedDocumentStarts(rng, c.B, c.T, c.documents);
    for (int64_t b = 0; c.padded && b < c.B; ++b)
      lengths.push_back(int32_t(std::max<int64_t>(0, c.S - b * (c.S / 2 + 7))));
  }
  /// The kernels' starts: null without documents.
  const int32_t *startsOrNull() const {
    return starts.empty() ? nullptr : starts.data();
  }
  /// The kernels' lengths: null without padding.
  const int32_t *lengthsOrNull() const {
    return lengths.empty() ? nullptr : lengths.data();
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
  std::vector<int32_t> starts, lengths;
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

void cpuForward(float *o, float *lse, const Inputs<float> &in) {
  const Case &c = in.c;
  lap_cpu_attention_forward(o, lse, in.q.data(), in.k.data(), in.v.data(),
                            in.coefficients.data(), in.startsOrNull(),
                            in.lengthsOrNull(), c.B, c.T, c.S, c.H, c.KV, c.D,
                            in.scale, c.causal, c.window);
}
void cpuForward(lap_bf16 *o, float *lse, const Inputs<lap_bf16> &in) {
  const Case &c = in.c;
  lap_cpu_attention_forward_bf16(o, lse, in.q.data(), in.k.data(), in.v.data(),
                                 in.coefficients.data(), in.startsOrNull(),
                                 in.lengthsOrNull(), c.B, c.T, c.S, c.H, c.KV,
                                 c.D, in.scale, c.causal, c.window);
}
void cpuBackward(Outputs<float> &out, const Inputs<float> &in) {
  const Case &c = in.c;
  lap_cpu_attention_backward(
      out.dq.data(), out.dk.data(), out.dv.data(),
      c.learned ? out.dcoefficients.data() : nullptr, in.dout.data(),
      in.q.data(), in.k.data(), in.v.data(), out.o.data(), out.lse.data(),
      in.coefficients.data(), in.startsOrNull(), in.lengthsOrNull(), c.B, c.T,
      c.S, c.H, c.KV, c.D, in.scale, c.causal, c.window);
}
void cpuBackward(Outputs<lap_bf16> &out, const Inputs<lap_bf16> &in) {
  const Case &c = in.c;
  lap_cpu_attention_backward_bf16(
      out.dq.data(), out.dk.data(), out.dv.data(),
      c.learned ? out.dcoefficients.data() : nullptr, in.dout.data(),
      in.q.data(), in.k.data(), in.v.data(), out.o.data(), out.lse.data(),
      in.coefficients.data(), in.startsOrNull(), in.lengthsOrNull(), c.B, c.T,
      c.S, c.H, c.KV, c.D, in.scale, c.causal, c.window);
}

std::vector<float> floatsOf(const std::vector<float> &x) { return x; }
std::vector<float> floatsOf(const std::vector<lap_bf16> &x) {
  return valuesOf(x);
}

void cudaForward(float *o, float *lse, const float *q, const float *k,
                 const float *v, const float *coefficients,
                 const int32_t *starts, const int32_t *lengths, const Case &c,
                 float scale) {
  lap_cuda_attention_forward(o, lse, q, k, v, coefficients, starts, lengths,
                             c.B, c.T, c.S, c.H, c.KV, c.D, scale, c.causal,
                             c.window);
}
void cudaForward(lap_bf16 *o, float *lse, const lap_bf16 *q, const lap_bf16 *k,
                 const lap_bf16 *v, const float *coefficients,
                 const int32_t *starts, const int32_t *lengths, const Case &c,
                 float scale) {
  lap_cuda_attention_forward_bf16(o, lse, q, k, v, coefficients, starts,
                                  lengths, c.B, c.T, c.S, c.H, c.KV, c.D, scale,
                                  c.causal, c.window);
}
void cudaBackward(float *dq, float *dk, float *dv, float *dcoefficients,
                  const float *dout, const float *q, const float *k,
                  const float *v, const float *o, const float *lse,
                  const float *coefficients, const int32_t *starts,
                  const int32_t *lengths, const Case &c, float scale) {
  lap_cuda_attention_backward(dq, dk, dv, dcoefficients, dout, q, k, v, o, lse,
                              coefficients, starts, lengths, c.B, c.T, c.S, c.H,
                              c.KV, c.D, scale, c.causal, c.window);
}
void cudaBackward(lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv,
                  float *dcoefficients, const lap_bf16 *dout, const lap_bf16 *q,
                  const lap_bf16 *k, const lap_bf16 *v, const lap_bf16 *o,
                  const float *lse, const float *coefficients,
                  const int32_t *starts, const int32_t *lengths, const Case &c,
                  float scale) {
  lap_cuda_attention_backward_bf16(
      dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients, starts,
      lengths, c.B, c.T, c.S, c.H, c.KV, c.D, scale, c.causal, c.window);
}

/// The CUDA entry points on device copies: the forward into got.o and
/// got.lse; the backward, reading cpu.o and cpu.lse, into got's gradients.
template <typename E>
void runOnGpu(const Inputs<E> &in, const Outputs<E> &cpu, Outputs<E> &got) {
  const Case &c = in.c;
  DeviceBuffer<E> q(in.q), k(in.k), v(in.v), dout(in.dout), o(got.o),
      cpuO(cpu.o), dq(got.dq), dk(got.dk), dv(got.dv);
  DeviceBuffer<float> coefficients(in.coefficients), lse(got.lse),
      cpuLse(cpu.lse), dcoefficients(got.dcoefficients);
  DeviceBuffer<int32_t> startsBuffer(in.starts);
  DeviceBuffer<int32_t> lengthsBuffer(in.lengths);
  const int32_t *starts = in.starts.empty() ? nullptr : startsBuffer.get();
  const int32_t *lengths = in.lengths.empty() ? nullptr : lengthsBuffer.get();
  cudaForward(o, lse, q, k, v, coefficients, starts, lengths, c, in.scale);
  cudaBackward(dq, dk, dv, c.learned ? dcoefficients.get() : nullptr, dout, q,
               k, v, cpuO, cpuLse, coefficients, starts, lengths, c, in.scale);
  got.o = o.host(), got.lse = lse.host();
  got.dq = dq.host(), got.dk = dk.host(), got.dv = dv.host();
  got.dcoefficients = dcoefficients.host();
}

/// The CUDA kernels on one case against the CPU's: the forward, and the
/// backward reading the CPU's O and lse (so that only the backward
/// differs).
template <typename E> void checkAgainstCpu(const Case &c, uint32_t seed) {
  const bool bf16 = std::is_same_v<E, lap_bf16>;
  SCOPED_TRACE(c.str() + (bf16 ? " bf16" : ""));
  const Inputs<E> in(c, seed);
  Outputs<E> cpu(in), got(in);
  cpuForward(cpu.o.data(), cpu.lse.data(), in);
  cpuBackward(cpu, in);
  runOnGpu(in, cpu, got);

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

void check(const Case &c, uint32_t seed) { checkAgainstCpu<float>(c, seed); }
void checkBf16(const Case &c, uint32_t seed) {
  checkAgainstCpu<lap_bf16>(c, seed);
}

/// A decode call's seeded inputs: a cache holding B sequences of `slots`
/// positions, T new queries, keys and values at positions first ..
/// first + T - 1, and per-head (alpha, beta) of either sign.
struct DecodeInputs {
  DecodeInputs(int64_t B, int64_t T, int64_t first, int64_t slots, int64_t H,
               int64_t KV, int64_t D, uint32_t seed, int64_t window)
      : B(B), T(T), first(first), slots(slots), H(H), KV(KV), D(D),
        window(window), scale(1.0f / std::sqrt(float(D))) {
    std::mt19937 rng(seed);
    const size_t cache = size_t(B * slots * KV * D);
    const size_t fresh = size_t(B * T * KV * D);
    q = randomVector(rng, size_t(B * T * H * D));
    k = randomVector(rng, fresh), v = randomVector(rng, fresh);
    kCache = randomVector(rng, cache), vCache = randomVector(rng, cache);
    coefficients = randomVector(rng, size_t(H), 0.5f, 1.5f);
    const std::vector<float> beta = randomVector(rng, size_t(H), -0.5f, 0.5f);
    coefficients.insert(coefficients.end(), beta.begin(), beta.end());
  }
  int64_t B, T, first, slots, H, KV, D, window;
  float scale;
  std::vector<float> q, k, v, kCache, vCache, coefficients;
};

void decodeOnGpu(const DecodeInputs &in, std::vector<float> &o,
                 std::vector<float> &kCache, std::vector<float> &vCache) {
  DeviceBuffer<float> q(in.q), k(in.k), v(in.v), gk(kCache), gv(vCache),
      coefficients(in.coefficients), go(o);
  lap_cuda_attention_decode(go, gk, gv, q, k, v, coefficients, in.B, in.T,
                            in.first, in.slots, in.H, in.KV, in.D, in.scale,
                            in.window);
  o = go.host(), kCache = gk.host(), vCache = gv.host();
}

/// attention_decode on both sides from the same caches: the stored keys and
/// values and the untouched cache rows exactly, o within 1e-5 of max(1, |o|)
/// (sums in another order).
void checkDecode(int64_t B, int64_t T, int64_t first, int64_t slots, int64_t H,
                 int64_t KV, int64_t D, uint32_t seed, int64_t window = 0) {
  SCOPED_TRACE("decode B=" + std::to_string(B) + " T=" + std::to_string(T) +
               " first=" + std::to_string(first) + " H=" + std::to_string(H) +
               " KV=" + std::to_string(KV) + " D=" + std::to_string(D) +
               " window=" + std::to_string(window));
  const DecodeInputs in(B, T, first, slots, H, KV, D, seed, window);
  std::vector<float> want = nanVector(in.q.size()), kWant = in.kCache,
                     vWant = in.vCache;
  lap_cpu_attention_decode(want.data(), kWant.data(), vWant.data(), in.q.data(),
                           in.k.data(), in.v.data(), in.coefficients.data(), B,
                           T, first, slots, H, KV, D, in.scale, in.window);
  std::vector<float> got = nanVector(in.q.size()), kGot = in.kCache,
                     vGot = in.vCache;
  decodeOnGpu(in, got, kGot, vGot);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i])))
        << "o at " << i;
  EXPECT_TRUE(kGot == kWant) << "the key cache differs";
  EXPECT_TRUE(vGot == vWant) << "the value cache differs";
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

// Sliding windows: one key, shorter than a tile, not a multiple of one,
// beyond the sequence; with GQA and learned coefficients.
TEST(CudaAttention, Windows) {
  REQUIRE_GPU();
  check({2, 130, 130, 3, 3, 64, true, true, 1}, 60);
  check({1, 130, 130, 4, 2, 64, true, true, 20}, 61);
  check({1, 200, 200, 3, 3, 40, true, false, 70}, 62);
  check({1, 37, 37, 3, 3, 64, true, true, 100}, 63);
}

// Documents packed into sequences (about 3 and 50 tokens long), alone and
// under a window.
TEST(CudaAttention, Documents) {
  REQUIRE_GPU();
  check({2, 130, 130, 4, 2, 64, true, true, 0, 3}, 64);
  check({1, 200, 200, 3, 3, 40, true, false, 0, 50}, 65);
  check({2, 130, 130, 3, 3, 64, true, true, 30, 50}, 66);
}

// Padded keys: sequences with every key, fewer and none; full and causal,
// under a window and in documents (queries past the padding then see no
// key), cross attention.
TEST(CudaAttention, PaddedKeys) {
  REQUIRE_GPU();
  check({3, 130, 130, 4, 2, 64, false, true, 0, 0, true}, 67);
  check({3, 70, 70, 3, 3, 40, true, true, 0, 0, true}, 68);
  check({3, 70, 70, 4, 2, 64, true, true, 20, 0, true}, 69);
  check({3, 70, 70, 4, 2, 64, true, false, 0, 30, true}, 70);
  check({3, 37, 150, 4, 2, 64, false, false, 0, 0, true}, 71);
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
  checkBf16({1, 70, 70, 3, 3, 40, true, true}, 33);
  checkBf16({2, 37, 130, 4, 2, 64, false, false}, 34);
  checkBf16({1, 70, 70, 3, 3, 160, true, true},
            35); // beyond the tensor cores
}

// Extended suite (tests named *AtScale): the same at sizes of several tiles.
TEST(CudaAttention, Bf16MatchesCpuAtScale) {
  REQUIRE_GPU();
  checkBf16({1, 130, 130, 4, 2, 64, true, true}, 31);
  checkBf16({2, 130, 130, 4, 1, 128, false, true}, 32);
}

// The tensor cores' forward and backward (bf16 heads up to 128 wide): both
// compiled widths, widths that pad (D = 36 also loads element by element,
// D = 100 pads to 128), several tiles with and without the mask, GQA, a
// single token, cross attention both ways round, and no keys.
void checkTensorCoreCases() {
  checkBf16({1, 130, 130, 4, 2, 36, true, true}, 43);
  checkBf16({1, 130, 130, 3, 3, 100, false, false}, 44);
  checkBf16({3, 1, 1, 3, 3, 64, true, true}, 46);
  // Causal with keys past the last query: key tiles no query tile meets.
  checkBf16({2, 65, 200, 4, 2, 64, true, true}, 51);
  checkBf16({2, 5, 0, 2, 1, 64, false, true}, 49);
  checkBf16({1, 37, 37, 3, 3, 1, true, true}, 50);
  // Sliding windows: key tiles before a query tile's window are skipped,
  // query tiles after a key tile's none meet.
  checkBf16({1, 200, 200, 4, 2, 64, true, true, 33}, 52);
  checkBf16({2, 130, 130, 3, 3, 128, true, true, 1}, 53);
  checkBf16({2, 200, 200, 4, 2, 64, true, true, 0, 40}, 54);
  checkBf16({1, 130, 130, 3, 3, 64, true, true, 25, 10}, 55);
  // Padded keys: tiles past a sequence's keys are skipped, a tile across
  // its end masked; a sequence without keys; queries past the padding and
  // the window see none.
  checkBf16({3, 70, 70, 4, 2, 64, false, true, 0, 0, true}, 56);
  checkBf16({3, 70, 70, 3, 3, 128, true, true, 20, 0, true}, 57);
}
/// The same at scale: many tiles, the widest heads, GQA of 8 heads on 2.
void checkTensorCoreCasesAtScale() {
  checkBf16({1, 300, 300, 3, 3, 64, true, false}, 40);
  checkBf16({1, 300, 300, 3, 3, 64, false, true}, 41);
  checkBf16({2, 200, 200, 3, 3, 128, true, true}, 42);
  checkBf16({2, 130, 130, 8, 2, 128, true, false}, 45);
  checkBf16({2, 65, 200, 4, 2, 128, false, true}, 47);
  checkBf16({2, 200, 65, 4, 4, 64, false, false}, 48);
}
TEST(CudaAttention, Bf16OnTensorCores) {
  REQUIRE_GPU();
  checkTensorCoreCases();
}
TEST(CudaAttention, Bf16OnTensorCoresAtScale) {
  REQUIRE_GPU();
  checkTensorCoreCasesAtScale();
}

// The same on a device of compute capability 9.0, whose attention is
// Hopper's (AttentionHopper.h: wgmma, 128 rows a block), and cases of
// several such blocks and tiles: on the emulator, made such a device; on a
// GPU, where it is one (elsewhere skipped), where the tests above meet
// the mma.sync kernels only in Bf16OnMmaSyncBesideHopper below.
class OnHopper {
public:
  OnHopper() {
#ifdef LAP_CUDA_EMULATOR
    lap::test::emulator::setHopper(true);
#endif
  }
  ~OnHopper() {
#ifdef LAP_CUDA_EMULATOR
    lap::test::emulator::setHopper(false);
#endif
  }
  /// Why this device runs no Hopper kernels; empty when it does.
  static std::string missing() {
#ifdef LAP_CUDA_EMULATOR
    return "";
#else
    return lap::cuda::hopperKernels()
               ? ""
               : "this GPU does not run Hopper's attention kernels "
                 "(compute capability 9.0 with sm_90a code)";
#endif
  }
};

TEST(CudaAttention, Bf16OnHopper) {
  REQUIRE_GPU();
  OnHopper hopper;
  if (std::string why = OnHopper::missing(); !why.empty())
    GTEST_SKIP() << why;
  checkTensorCoreCases();
  // More key tiles than the forward's three stages: each is reused.
  checkBf16({1, 130, 600, 2, 1, 64, false, true}, 54);
}

TEST(CudaAttention, Bf16OnHopperAtScale) {
  REQUIRE_GPU();
  OnHopper hopper;
  if (std::string why = OnHopper::missing(); !why.empty())
    GTEST_SKIP() << why;
  checkTensorCoreCasesAtScale();
  checkBf16({1, 260, 260, 2, 1, 128, true, true}, 52);
  checkBf16({1, 260, 300, 2, 2, 64, false, false}, 53);
  checkBf16({1, 520, 520, 1, 1, 128, true, false}, 55);
}

#ifndef LAP_CUDA_EMULATOR
// On a GPU that runs Hopper's kernels, the mma.sync ones too (the other
// GPUs' family), with Hopper's turned off for the process meanwhile.
TEST(CudaAttention, Bf16OnMmaSyncBesideHopper) {
  REQUIRE_GPU();
  if (!lap::cuda::hopperKernels())
    GTEST_SKIP() << "Bf16OnTensorCores ran the mma.sync kernels here";
  // hopperKernels() held above, so they were allowed.
  struct MmaSync {
    MmaSync() { lap::cuda::allowHopperKernels(false); }
    ~MmaSync() { lap::cuda::allowHopperKernels(true); }
  } mmaSync;
  EXPECT_FALSE(lap::cuda::hopperKernels());
  checkTensorCoreCases();
  checkTensorCoreCasesAtScale();
}
#endif

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

// Under a sliding window: of one key, shorter than the new tokens, and
// reaching back into the cache; in a cache of the whole context and in one
// of the window's size (wrapping around, overrun by the new tokens).
TEST(CudaDecodeAttention, Windows) {
  REQUIRE_GPU();
  for (int64_t window : {1, 2, 100}) {
    checkDecode(2, 3, 300, 320, 4, 2, 64, 28, window);
    checkDecode(2, 3, 300, window, 4, 2, 64, 29, window);
  }
  checkDecode(1, 7, 0, 5, 2, 1, 40, 30, 5);
}

/// Backward twice on the same inputs gives the same bits (no float
/// atomics), on E's kernels (for bf16: the tensor cores).
template <typename E> void expectDeterministicBackward() {
  SCOPED_TRACE((std::is_same_v<E, lap_bf16> ? "bf16" : "fp32"));
  const Case c{2, 130, 130, 4, 2, 64, true, true};
  const Inputs<E> in(c, 26);
  const size_t nq = in.q.size(), nk = in.k.size();
  DeviceBuffer<E> q(in.q), k(in.k), v(in.v), dout(in.dout), o(nq);
  DeviceBuffer<float> coefficients(in.coefficients),
      lse(size_t(c.B * c.H * c.T));
  cudaForward(o, lse, q, k, v, coefficients, nullptr, nullptr, c, in.scale);
  std::vector<std::vector<float>> runs[2];
  for (auto &run : runs) {
    DeviceBuffer<E> dq(nq), dk(nk), dv(nk);
    DeviceBuffer<float> dcoefficients(size_t(2 * c.H));
    cudaBackward(dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients,
                 nullptr, nullptr, c, in.scale);
    run = {floatsOf(dq.host()), floatsOf(dk.host()), floatsOf(dv.host()),
           dcoefficients.host()};
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(runs[0][i] == runs[1][i]) << "output " << i << " differs";
}

TEST(CudaAttention, BackwardIsDeterministic) {
  REQUIRE_GPU();
  expectDeterministicBackward<float>();
  expectDeterministicBackward<lap_bf16>();
}

// A shape the kernels cannot take is a recorded failure, not a launch.
TEST(CudaAttention, RejectsUnsupportedShapes) {
  REQUIRE_GPU();
  lap_cuda_attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, nullptr, 1, 4, 4, 3, 2, 64, 1.0f,
                             0, 0);
  EXPECT_NE(lap::cuda::takeFailure().find("multiple of KV"), std::string::npos);
  lap_cuda_attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr,
                              nullptr, nullptr, nullptr, nullptr, nullptr,
                              nullptr, nullptr, nullptr, 1, 4, 4, 2, 2, 300,
                              1.0f, 0, 0);
  EXPECT_NE(lap::cuda::takeFailure().find("head dim"), std::string::npos);
  lap_cuda_attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, nullptr, 1, 4, 4, 2, 2, 64, 1.0f,
                             0, 3);
  EXPECT_NE(lap::cuda::takeFailure().find("causal"), std::string::npos);
}

} // namespace
