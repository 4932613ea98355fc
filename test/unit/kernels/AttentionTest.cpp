//===- AttentionTest.cpp - fused attention against a naive reference ------===//
//
// The references here are written independently of the kernel: double
// precision, the full score matrix materialised, plain loops. Gradients are
// checked against central finite differences of the reference forward and,
// on larger shapes, against an analytic reference backward.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" {
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}

namespace {

using Vec = std::vector<double>;

struct Shape {
  int64_t B, T, S, H, KV, D;
  bool causal;
  double scale;
  int64_t window = 0; ///< causal: keys t - window < j <= t (0: all)
  /// causal: [B, T], query t of sequence b sees keys j >= starts[b T + t]
  /// (documents packed into a sequence); empty: none.
  std::vector<int32_t> starts;
  /// [B]: sequence b's keys j < lengths[b], the rest padding; empty: none.
  std::vector<int32_t> lengths;
  int64_t size(int64_t rows, int64_t heads) const {
    return B * rows * heads * D;
  }
  std::string str() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) +
           " S=" + std::to_string(S) + " H=" + std::to_string(H) +
           " KV=" + std::to_string(KV) + " D=" + std::to_string(D) +
           (causal ? " causal" : "") +
           (window ? " window=" + std::to_string(window) : "") +
           (starts.empty() ? "" : " documents") +
           (lengths.empty() ? "" : " padded") +
           " scale=" + std::to_string(scale);
  }
};

/// Inputs of one attention call, as the kernel takes them (floats; the
/// references convert them to double exactly).
struct Problem {
  Shape s;
  std::vector<float> q, k, v, alpha, beta, g; // g: the upstream gradient dO
  /// The kernels' [2, H] coefficients: alpha, then beta.
  std::vector<float> coefficients() const {
    std::vector<float> c(alpha);
    c.insert(c.end(), beta.begin(), beta.end());
    return c;
  }
};

/// Head kinds cycle through attn (1, 0), laplacian (-1, 1) and an arbitrary
/// pair; with S != T (cross attention) only alpha is allowed.
Problem makeProblem(const Shape &s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Problem p{s, {}, {}, {}, {}, {}, {}};
  auto fill = [&](std::vector<float> &x, int64_t n) {
    x.resize(n);
    for (float &e : x)
      e = normal(rng);
  };
  fill(p.q, s.size(s.T, s.H));
  fill(p.k, s.size(s.S, s.KV));
  fill(p.v, s.size(s.S, s.KV));
  fill(p.g, s.size(s.T, s.H));
  const float kinds[3][2] = {{1.0f, 0.0f}, {-1.0f, 1.0f}, {0.5f, 0.25f}};
  for (int64_t h = 0; h < s.H; ++h) {
    p.alpha.push_back(kinds[h % 3][0]);
    p.beta.push_back(kinds[h % 3][1]);
    if (s.S != s.T) { // cross attention: alpha only
      p.alpha.back() = h % 2 ? -0.75f : 1.5f;
      p.beta.back() = 0.0f;
    }
  }
  return p;
}

Vec toDouble(const std::vector<float> &x) { return Vec(x.begin(), x.end()); }

//===----------------------------------------------------------------------===//
// Double-precision references
//===----------------------------------------------------------------------===//

int64_t qIdx(const Shape &s, int64_t b, int64_t t, int64_t h) {
  return ((b * s.T + t) * s.H + h) * s.D;
}
int64_t kIdx(const Shape &s, int64_t b, int64_t j, int64_t g) {
  return ((b * s.S + j) * s.KV + g) * s.D;
}
/// The kernels' starts argument: null without documents.
const int32_t *startsOf(const Shape &s) {
  return s.starts.empty() ? nullptr : s.starts.data();
}

/// The kernels' lengths argument: null without padding.
const int32_t *lengthsOf(const Shape &s) {
  return s.lengths.empty() ? nullptr : s.lengths.data();
}

bool visible(const Shape &s, int64_t b, int64_t t, int64_t j) {
  return (!s.causal || j <= t) && (s.window == 0 || t - j < s.window) &&
         (s.starts.empty() || j >= s.starts[size_t(b * s.T + t)]) &&
         (s.lengths.empty() || j < s.lengths[size_t(b)]);
}

/// P [B, H, T, S] (zero where masked), O and lse (-inf for a query that
/// sees no key: its P is 0).
void referenceForward(const Shape &s, const Vec &q, const Vec &k, const Vec &v,
                      const Vec &alpha, const Vec &beta, Vec &o, Vec &lse,
                      Vec *probs = nullptr) {
  o.assign(s.size(s.T, s.H), 0.0);
  lse.assign(s.B * s.H * s.T, 0.0);
  if (probs)
    probs->assign(s.B * s.H * s.T * s.S, 0.0);
  Vec score(s.S);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h / (s.H / s.KV);
      for (int64_t t = 0; t < s.T; ++t) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s.S; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < s.D; ++d)
            dot += q[qIdx(s, b, t, h) + d] * k[kIdx(s, b, j, g) + d];
          score[j] = s.scale * dot;
          if (visible(s, b, t, j))
            mx = std::max(mx, score[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < s.S; ++j)
          sum += visible(s, b, t, j) ? std::exp(score[j] - mx) : 0.0;
        lse[(b * s.H + h) * s.T + t] = mx + std::log(sum);
        double *out = &o[qIdx(s, b, t, h)];
        for (int64_t j = 0; j < s.S; ++j) {
          if (!visible(s, b, t, j))
            continue;
          double p = std::exp(score[j] - mx) / sum;
          if (probs)
            (*probs)[((b * s.H + h) * s.T + t) * s.S + j] = p;
          for (int64_t d = 0; d < s.D; ++d)
            out[d] += alpha[h] * p * v[kIdx(s, b, j, g) + d];
        }
        if (beta[h] != 0.0)
          for (int64_t d = 0; d < s.D; ++d)
            out[d] += beta[h] * v[kIdx(s, b, t, g) + d];
      }
    }
}

/// Analytic gradients of L = sum(O * g), by the chain rule through the
/// materialised P (not the flash recurrences); dcoefficients [2, H]: d alpha
/// = sum g * P V, d beta = sum g * V.
void referenceBackward(const Problem &p, Vec &dq, Vec &dk, Vec &dv,
                       Vec *dcoefficients = nullptr) {
  const Shape &s = p.s;
  Vec q = toDouble(p.q), k = toDouble(p.k), v = toDouble(p.v);
  Vec g = toDouble(p.g), o, lse, P;
  referenceForward(s, q, k, v, toDouble(p.alpha), toDouble(p.beta), o, lse, &P);
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  Vec dc(2 * s.H, 0.0);
  Vec dP(s.S);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t kv = h / (s.H / s.KV);
      for (int64_t t = 0; t < s.T; ++t) {
        const double *prow = &P[((b * s.H + h) * s.T + t) * s.S];
        const double *go = &g[qIdx(s, b, t, h)];
        double rowDot = 0.0;
        for (int64_t j = 0; j < s.S; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < s.D; ++d) {
            dot += go[d] * v[kIdx(s, b, j, kv) + d];
            dv[kIdx(s, b, j, kv) + d] += p.alpha[h] * prow[j] * go[d];
          }
          dP[j] = p.alpha[h] * dot;
          rowDot += prow[j] * dP[j];
          dc[h] += prow[j] * dot;
        }
        if (s.S == s.T) // beta != 0 only then
          for (int64_t d = 0; d < s.D; ++d) {
            dv[kIdx(s, b, t, kv) + d] += p.beta[h] * go[d];
            dc[s.H + h] += go[d] * v[kIdx(s, b, t, kv) + d];
          }
        for (int64_t j = 0; j < s.S; ++j) {
          double dS = prow[j] * (dP[j] - rowDot) * s.scale;
          for (int64_t d = 0; d < s.D; ++d) {
            dq[qIdx(s, b, t, h) + d] += dS * k[kIdx(s, b, j, kv) + d];
            dk[kIdx(s, b, j, kv) + d] += dS * q[qIdx(s, b, t, h) + d];
          }
        }
      }
    }
  if (dcoefficients)
    *dcoefficients = dc;
}

/// Central differences of L = sum(O * g) of the reference forward, for q,
/// k, v and the [2, H] coefficients.
void finiteDifferences(const Problem &p, Vec &dq, Vec &dk, Vec &dv,
                       Vec &dcoefficients) {
  const Shape &s = p.s;
  Vec q = toDouble(p.q), k = toDouble(p.k), v = toDouble(p.v);
  Vec g = toDouble(p.g), alpha = toDouble(p.alpha), beta = toDouble(p.beta);
  auto loss = [&]() {
    Vec o, lse;
    referenceForward(s, q, k, v, alpha, beta, o, lse);
    double sum = 0.0;
    for (size_t i = 0; i < o.size(); ++i)
      sum += o[i] * g[i];
    return sum;
  };
  const double step = 1e-5;
  auto grad = [&](Vec &x, Vec &dx) {
    dx.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      double saved = x[i];
      x[i] = saved + step;
      double up = loss();
      x[i] = saved - step;
      double down = loss();
      x[i] = saved;
      dx[i] = (up - down) / (2 * step);
    }
  };
  grad(q, dq);
  grad(k, dk);
  grad(v, dv);
  Vec dAlpha, dBeta;
  grad(alpha, dAlpha);
  grad(beta, dBeta);
  dcoefficients = dAlpha;
  dcoefficients.insert(dcoefficients.end(), dBeta.begin(), dBeta.end());
}

//===----------------------------------------------------------------------===//
// Kernel calls and comparison
//===----------------------------------------------------------------------===//

struct Forward {
  std::vector<float> o, lse;
};
struct Backward {
  std::vector<float> dq, dk, dv, dcoefficients; ///< the last when asked
};

Forward runForward(const Problem &p) {
  const Shape &s = p.s;
  // Garbage in the outputs: the kernel must overwrite, not accumulate.
  Forward f{std::vector<float>(s.size(s.T, s.H), 7.0f),
            std::vector<float>(s.B * s.H * s.T, 7.0f)};
  lap_cpu_attention_forward(f.o.data(), f.lse.data(), p.q.data(), p.k.data(),
                            p.v.data(), p.coefficients().data(), startsOf(s),
                            lengthsOf(s), s.B, s.T, s.S, s.H, s.KV, s.D,
                            float(s.scale), s.causal, s.window);
  return f;
}

/// With `learned`, the coefficients' gradients too (learnable kinds).
Backward runBackward(const Problem &p, const Forward &f, bool learned = false) {
  const Shape &s = p.s;
  Backward g{std::vector<float>(p.q.size(), 7.0f),
             std::vector<float>(p.k.size(), 7.0f),
             std::vector<float>(p.v.size(), 7.0f),
             std::vector<float>(learned ? 2 * s.H : 0, 7.0f)};
  lap_cpu_attention_backward(g.dq.data(), g.dk.data(), g.dv.data(),
                             learned ? g.dcoefficients.data() : nullptr,
                             p.g.data(), p.q.data(), p.k.data(), p.v.data(),
                             f.o.data(), f.lse.data(), p.coefficients().data(),
                             startsOf(s), lengthsOf(s), s.B, s.T, s.S, s.H,
                             s.KV, s.D, float(s.scale), s.causal, s.window);
  return g;
}

/// max |got - want| <= tol * max(max |want|, 1): relative to the largest
/// finite magnitude, the natural yardstick for float accumulations, but not
/// below the scale of the inputs (O(1)), so gradients that vanish (T = 1:
/// P = 1) are held to the rounding of their terms. An infinite want (the
/// lse of a query without keys) must be met exactly.
template <typename T>
void expectClose(const std::vector<T> &got, const Vec &want, double tol,
                 const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double maxWant = 1.0, maxErr = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::isfinite(want[i]))
      maxWant = std::max(maxWant, std::abs(want[i]));
  for (size_t i = 0; i < want.size(); ++i) {
    double err =
        double(got[i]) == want[i] ? 0.0 : std::abs(double(got[i]) - want[i]);
    if (!(err <= maxErr)) { // NaN counts as worst
      maxErr = err;
      worst = i;
    }
  }
  EXPECT_LE(maxErr, tol * maxWant)
      << what << ": worst at " << worst << " got " << got[worst] << " want "
      << want[worst] << " (max |want| " << maxWant << ")";
}

void checkForward(const Problem &p, double tol) {
  SCOPED_TRACE(p.s.str());
  Vec o, lse;
  referenceForward(p.s, toDouble(p.q), toDouble(p.k), toDouble(p.v),
                   toDouble(p.alpha), toDouble(p.beta), o, lse);
  Forward f = runForward(p);
  expectClose(f.o, o, tol, "O");
  expectClose(f.lse, lse, tol, "lse");
}

/// The coefficients' gradients are checked on self-attention (what
/// learnable kinds allow), the others everywhere.
void checkBackward(const Problem &p, double tol) {
  SCOPED_TRACE(p.s.str());
  Vec dq, dk, dv, dc;
  referenceBackward(p, dq, dk, dv, &dc);
  const bool learned = p.s.S == p.s.T;
  Backward g = runBackward(p, runForward(p), learned);
  expectClose(g.dq, dq, tol, "dq");
  expectClose(g.dk, dk, tol, "dk");
  expectClose(g.dv, dv, tol, "dv");
  if (learned)
    expectClose(g.dcoefficients, dc, tol, "dcoefficients");
}

Shape selfShape(int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D,
                bool causal) {
  return Shape{B, T, T, H, KV, D, causal, 1.0 / std::sqrt(double(D))};
}

Shape windowed(Shape s, int64_t window) {
  s.window = window;
  return s;
}

/// `s` with sequence b's keys its first lengths[b], the rest padding.
Shape padded(Shape s, std::vector<int32_t> lengths) {
  s.lengths = std::move(lengths);
  return s;
}

/// Key counts for B sequences of S keys: all of them, fewer (an odd
/// count), none, and so on round.
std::vector<int32_t> someLengths(int64_t B, int64_t S) {
  std::vector<int32_t> lengths;
  for (int64_t b = 0; b < B; ++b)
    lengths.push_back(int32_t(b % 3 == 0 ? S : b % 3 == 1 ? S / 2 + 1 : 0));
  return lengths;
}

/// `s` with its sequences packed from documents of random lengths (1 to
/// 2 * mean tokens; the first may have begun before the sequence).
Shape packed(Shape s, int64_t mean, uint32_t seed) {
  std::mt19937 rng(seed);
  s.starts = lap::test::packedDocumentStarts(rng, s.B, s.T, mean);
  return s;
}

// Float kernels against double references, relative to the largest
// magnitude: the worst errors observed on these tests are 4e-6 (O with
// peaked scores), 4e-7 (lse) and 4e-6 (gradients), a few float ulps grown by
// the reduction lengths; 5e-5 leaves a margin of more than 10x.
constexpr double kForwardTol = 5e-5;
constexpr double kBackwardTol = 5e-5;

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

TEST(AttentionForward, MatchesReferenceMixedKindsAndGqa) {
  uint32_t seed = 1;
  for (int64_t T : {1, 7, 33, 65, 130, 257})
    for (bool causal : {false, true})
      for (int64_t KV : {4, 2, 1})
        checkForward(makeProblem(selfShape(2, T, 4, KV, 64, causal), seed++),
                     kForwardTol);
}

// Head widths that are not a multiple of the vector width (padded tiles),
// other compile-time widths, and one above them (the runtime-width path).
TEST(AttentionForward, MatchesReferenceOtherHeadWidths) {
  uint32_t seed = 100;
  for (int64_t D : {8, 24, 16, 128, 160, 200})
    for (int64_t T : {7, 65, 130})
      for (bool causal : {false, true})
        checkForward(makeProblem(selfShape(2, T, 4, 2, D, causal), seed++),
                     kForwardTol);
}

// Spread-out scores (std ~ 16): the online softmax rescales often and the
// rows are nearly one-hot.
TEST(AttentionForward, MatchesReferenceWithPeakedScores) {
  uint32_t seed = 200;
  for (bool causal : {false, true}) {
    Shape s = selfShape(2, 200, 4, 2, 64, causal);
    s.scale = 2.0;
    checkForward(makeProblem(s, seed++), kForwardTol);
  }
}

// Cross attention: S != T, not causal, alpha only.
TEST(AttentionForward, MatchesReferenceCrossAttention) {
  uint32_t seed = 300;
  for (auto [T, S] : {std::pair<int64_t, int64_t>{33, 70}, {65, 7}, {1, 129}})
    for (int64_t KV : {4, 1}) {
      Shape s{2, T, S, 4, KV, 64, false, 0.125};
      checkForward(makeProblem(s, seed++), kForwardTol);
    }
}

// Sliding windows: of one key (P = 1 on the query's own), shorter and
// longer than a block, not a multiple of one, at least the sequence (all
// keys); partial blocks, GQA, every kind.
TEST(AttentionForward, MatchesReferenceWithWindows) {
  uint32_t seed = 320;
  for (int64_t T : {7, 130, 257})
    for (int64_t window : {1, 5, 64, 100, 300})
      for (int64_t KV : {4, 1})
        checkForward(
            makeProblem(windowed(selfShape(2, T, 4, KV, 32, true), window),
                        seed++),
            kForwardTol);
}

// Documents packed into sequences: short and long ones (some within a
// block, some across several), alone and under a window, GQA.
TEST(AttentionForward, MatchesReferenceWithDocuments) {
  uint32_t seed = 340;
  for (int64_t T : {7, 130, 257})
    for (int64_t mean : {3, 40, 150})
      for (int64_t window : {0, 50}) {
        Shape s = packed(windowed(selfShape(2, T, 4, 2, 32, true), window),
                         mean, seed);
        checkForward(makeProblem(s, seed++), kForwardTol);
      }
}

// Padded keys: full and causal attention, alone, under a window and in
// documents (where queries past the padding may see no key at all), cross
// attention; sequences with every key, some and none.
std::vector<Shape> paddedShapes(std::vector<int64_t> lengths) {
  std::vector<Shape> shapes;
  for (int64_t T : lengths) {
    for (bool causal : {false, true})
      shapes.push_back(
          padded(selfShape(3, T, 4, 2, 32, causal), someLengths(3, T)));
    shapes.push_back(padded(windowed(selfShape(3, T, 4, 2, 32, true), 5),
                            someLengths(3, T)));
    shapes.push_back(padded(packed(selfShape(3, T, 4, 1, 32, true), 9, 360),
                            someLengths(3, T)));
    Shape cross{3, T, T + 40, 4, 2, 32, false, 0.2};
    shapes.push_back(padded(cross, someLengths(3, T + 40)));
  }
  return shapes;
}

TEST(AttentionForward, MatchesReferenceWithPaddedKeys) {
  uint32_t seed = 350;
  for (const Shape &s : paddedShapes({7, 130, 257}))
    checkForward(makeProblem(s, seed++), kForwardTol);
}

// A query that sees no key: P V = 0, so O = beta V at its own position and
// lse = -inf; no gradient reaches q or k through P, and v gets beta dO.
TEST(Attention, QueriesWithoutKeysOutputBetaV) {
  Problem p =
      makeProblem(padded(selfShape(2, 37, 3, 3, 24, false), {0, 0}), 370);
  const Shape &s = p.s;
  Forward f = runForward(p);
  Backward g = runBackward(p, f, /*learned=*/true);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t h = 0; h < s.H; ++h) {
        EXPECT_EQ(f.lse[(b * s.H + h) * s.T + t], -INFINITY);
        for (int64_t d = 0; d < s.D; ++d) {
          const float v = p.v[kIdx(s, b, t, h) + d],
                      dout = p.g[qIdx(s, b, t, h) + d];
          ASSERT_EQ(f.o[qIdx(s, b, t, h) + d], p.beta[h] * v);
          ASSERT_EQ(g.dq[qIdx(s, b, t, h) + d], 0.0f);
          ASSERT_EQ(g.dk[kIdx(s, b, t, h) + d], 0.0f);
          ASSERT_EQ(g.dv[kIdx(s, b, t, h) + d], p.beta[h] * dout);
        }
      }
  for (int64_t h = 0; h < s.H; ++h)
    EXPECT_EQ(g.dcoefficients[h], 0.0f) << "d alpha of head " << h;
}

// All-laplacian heads on identical tokens: P is uniform over the visible
// keys, which all carry the same value, so P V = V and O = V - P V = 0.
TEST(AttentionForward, LaplacianOfIdenticalTokensIsZero) {
  for (bool causal : {false, true})
    for (int64_t KV : {4, 2}) {
      Shape s = selfShape(3, 97, 4, KV, 64, causal);
      SCOPED_TRACE(s.str());
      Problem p = makeProblem(s, 400);
      for (int64_t b = 0; b < s.B; ++b)
        for (int64_t t = 1; t < s.T; ++t) {
          std::copy_n(&p.q[qIdx(s, b, 0, 0)], s.H * s.D,
                      &p.q[qIdx(s, b, t, 0)]);
          std::copy_n(&p.k[kIdx(s, b, 0, 0)], s.KV * s.D,
                      &p.k[kIdx(s, b, t, 0)]);
          std::copy_n(&p.v[kIdx(s, b, 0, 0)], s.KV * s.D,
                      &p.v[kIdx(s, b, t, 0)]);
        }
      std::fill(p.alpha.begin(), p.alpha.end(), -1.0f);
      std::fill(p.beta.begin(), p.beta.end(), 1.0f);
      Forward f = runForward(p);
      double maxV = 0.0;
      for (float x : p.v)
        maxV = std::max(maxV, double(std::abs(x)));
      // P V is a convex combination of equal rows: float rounding only.
      double maxO = 0.0;
      for (float x : f.o)
        maxO = std::max(maxO, double(std::abs(x)));
      EXPECT_LE(maxO, 1e-5 * maxV);
    }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

// Small shapes against finite differences of the double reference forward
// (step 1e-5: truncation and rounding errors near 1e-10). The analytic
// reference must agree to 1e-7, the float kernel to kBackwardTol.
TEST(AttentionBackward, MatchesFiniteDifferences) {
  uint32_t seed = 500;
  std::vector<Shape> shapes;
  for (int64_t T : {5, 9})
    for (bool causal : {false, true})
      shapes.push_back(selfShape(2, T, 4, 2, 8, causal));
  shapes.push_back(windowed(selfShape(2, 9, 4, 2, 8, true), 3));
  shapes.push_back(packed(selfShape(2, 9, 4, 2, 8, true), 3, 510));
  shapes.push_back(padded(selfShape(3, 9, 4, 2, 8, false), {9, 4, 0}));
  // Queries 7 and 8 of the first sequence and 4 on of the second see no
  // key.
  shapes.push_back(padded(windowed(selfShape(2, 9, 4, 2, 8, true), 3), {5, 2}));
  shapes.push_back(padded(Shape{2, 5, 9, 4, 2, 8, false, 0.4}, {6, 1}));
  shapes.push_back(Shape{2, 5, 9, 4, 2, 8, false, 0.4}); // cross
  shapes.push_back(Shape{2, 9, 4, 4, 1, 8, false, 0.4}); // cross, MQA
  for (const Shape &s : shapes) {
    SCOPED_TRACE(s.str());
    Problem p = makeProblem(s, seed++);
    Vec fdq, fdk, fdv, fdc, dq, dk, dv, dc;
    finiteDifferences(p, fdq, fdk, fdv, fdc);
    referenceBackward(p, dq, dk, dv, &dc);
    expectClose(dq, fdq, 1e-7, "reference dq");
    expectClose(dk, fdk, 1e-7, "reference dk");
    expectClose(dv, fdv, 1e-7, "reference dv");
    const bool learned = s.S == s.T; // d beta needs square self-attention
    if (learned)
      expectClose(dc, fdc, 1e-7, "reference dcoefficients");
    Backward g = runBackward(p, runForward(p), learned);
    expectClose(g.dq, fdq, kBackwardTol, "dq");
    expectClose(g.dk, fdk, kBackwardTol, "dk");
    expectClose(g.dv, fdv, kBackwardTol, "dv");
    if (learned)
      expectClose(g.dcoefficients, fdc, kBackwardTol, "dcoefficients");
  }
}

// Larger shapes (several key and query blocks, partial blocks, GQA) against
// the analytic reference.
TEST(AttentionBackward, MatchesReferenceWithDocuments) {
  uint32_t seed = 680;
  for (int64_t T : {33, 130, 257})
    for (int64_t mean : {5, 60})
      for (int64_t window : {0, 40}) {
        Shape s = packed(windowed(selfShape(2, T, 4, 2, 32, true), window),
                         mean, seed);
        checkBackward(makeProblem(s, seed++), kBackwardTol);
      }
}

TEST(AttentionBackward, MatchesReferenceWithPaddedKeys) {
  uint32_t seed = 690;
  for (const Shape &s : paddedShapes({33, 130, 257}))
    checkBackward(makeProblem(s, seed++), kBackwardTol);
}

TEST(AttentionBackward, MatchesReferenceWithWindows) {
  uint32_t seed = 650;
  for (int64_t T : {33, 130, 257})
    for (int64_t window : {1, 17, 64, 100})
      for (int64_t KV : {4, 1})
        checkBackward(
            makeProblem(windowed(selfShape(2, T, 4, KV, 32, true), window),
                        seed++),
            kBackwardTol);
}

TEST(AttentionBackward, MatchesReferenceMixedKindsAndGqa) {
  uint32_t seed = 600;
  for (int64_t T : {1, 33, 65, 130, 257})
    for (bool causal : {false, true})
      for (int64_t KV : {4, 2, 1})
        checkBackward(makeProblem(selfShape(2, T, 4, KV, 64, causal), seed++),
                      kBackwardTol);
}

TEST(AttentionBackward, MatchesReferenceOtherHeadWidths) {
  uint32_t seed = 700;
  for (int64_t D : {8, 24, 128, 160, 200})
    for (int64_t T : {7, 130})
      for (bool causal : {false, true})
        checkBackward(makeProblem(selfShape(2, T, 4, 2, D, causal), seed++),
                      kBackwardTol);
}

// Many (batch, kv head) groups: one task per group, no dq partials.
TEST(AttentionBackward, MatchesReferenceManyGroups) {
  uint32_t seed = 800;
  for (bool causal : {false, true})
    checkBackward(makeProblem(selfShape(5, 130, 4, 4, 32, causal), seed++),
                  kBackwardTol);
}

TEST(AttentionBackward, MatchesReferenceCrossAttention) {
  uint32_t seed = 900;
  for (auto [T, S] : {std::pair<int64_t, int64_t>{33, 150}, {130, 20}}) {
    Shape s{2, T, S, 4, 2, 64, false, 0.125};
    checkBackward(makeProblem(s, seed++), kBackwardTol);
  }
}

TEST(AttentionBackward, MatchesReferenceWithPeakedScores) {
  Shape s = selfShape(2, 150, 4, 2, 32, true);
  s.scale = 1.5;
  checkBackward(makeProblem(s, 950), kBackwardTol);
}

// The work split depends on the shape only: any thread count gives the same
// bits, with the key blocks of a (batch, kv head) split between tasks (few
// such groups) or not (many).
// Decoding a causal sequence chunk by chunk (a prompt, single tokens, a
// chunk of three) against a cache gives the rows of the whole-sequence
// reference, for every kind and with grouped queries; a window's cache of
// `window` slots, which chunks longer than it overrun, too.
TEST(AttentionDecode, MatchesWholeSequenceReference) {
  for (int64_t KV : {4, 2, 1})
    for (int64_t window : {0, 1, 4}) {
      Problem p = makeProblem(
          windowed(selfShape(2, 12, 4, KV, 24, /*causal=*/true), window),
          600 + KV);
      const Shape &s = p.s;
      SCOPED_TRACE(s.str());
      Vec want, lse;
      referenceForward(s, toDouble(p.q), toDouble(p.k), toDouble(p.v),
                       toDouble(p.alpha), toDouble(p.beta), want, lse);
      const int64_t slots = window > 0 ? window : 16, qRow = s.H * s.D,
                    kvRow = s.KV * s.D;
      std::vector<float> kCache(s.B * slots * kvRow, NAN), vCache(kCache),
          got(want.size());
      int64_t first = 0;
      for (int64_t chunk : {5, 1, 1, 3, 2}) {
        // The chunk's rows of q, k, v as [B, chunk, ...] tensors.
        auto rows = [&](const std::vector<float> &x, int64_t width) {
          std::vector<float> out;
          for (int64_t b = 0; b < s.B; ++b)
            out.insert(out.end(), x.begin() + (b * s.T + first) * width,
                       x.begin() + (b * s.T + first + chunk) * width);
          return out;
        };
        std::vector<float> o(s.B * chunk * qRow, NAN);
        lap_cpu_attention_decode(
            o.data(), kCache.data(), vCache.data(), rows(p.q, qRow).data(),
            rows(p.k, kvRow).data(), rows(p.v, kvRow).data(),
            p.coefficients().data(), s.B, chunk, first, slots, s.H, s.KV, s.D,
            float(s.scale), s.window);
        for (int64_t b = 0; b < s.B; ++b)
          std::copy(o.begin() + b * chunk * qRow,
                    o.begin() + (b + 1) * chunk * qRow,
                    got.begin() + (b * s.T + first) * qRow);
        first += chunk;
      }
      ASSERT_EQ(first, s.T);
      expectClose(got, want, kForwardTol, "O");
    }
}

TEST(Attention, ResultsDoNotDependOnThreadCount) {
  const int saved = omp_get_max_threads();
  for (auto [B, KV] : {std::pair<int64_t, int64_t>{1, 1}, {3, 1}, {4, 4}}) {
    // Causal (key blocks dealt round-robin), under a window and in
    // documents (in runs of consecutive blocks).
    for (Shape shape :
         {selfShape(B, 130, 4, KV, 64, true),
          windowed(selfShape(B, 130, 4, KV, 64, true), 40),
          packed(selfShape(B, 130, 4, KV, 64, true), 30, 1010),
          padded(selfShape(B, 130, 4, KV, 64, false), someLengths(B, 130))}) {
      Problem p = makeProblem(shape, 1000 + B);
      SCOPED_TRACE(p.s.str());
      omp_set_num_threads(1);
      Forward f1 = runForward(p);
      Backward g1 = runBackward(p, f1, /*learned=*/true);
      omp_set_num_threads(3);
      Forward f3 = runForward(p);
      Backward g3 = runBackward(p, f3, /*learned=*/true);
      EXPECT_EQ(f1.o, f3.o);
      EXPECT_EQ(f1.lse, f3.lse);
      EXPECT_EQ(g1.dq, g3.dq);
      EXPECT_EQ(g1.dk, g3.dk);
      EXPECT_EQ(g1.dv, g3.dv);
      EXPECT_EQ(g1.dcoefficients, g3.dcoefficients);
    }
  }
  omp_set_num_threads(saved);
}

//===----------------------------------------------------------------------===//
// bf16
//===----------------------------------------------------------------------===//

/// The bf16 kernels compute what the fp32 ones compute on the same bf16
/// values (the fp32 backward reading the bf16 O's values), in the same
/// order, and round each output once: bit for bit the fp32 results
/// rounded. Covers GQA, causal and not, partial blocks, padded head widths,
/// the dq partials of few groups (B = 1, KV = 1), cross attention, and the
/// coefficients' gradients, which stay fp32.
TEST(AttentionBf16, KernelsAreTheFp32OnesRounded) {
  using lap::test::bf16Vector;
  using lap::test::valuesOf;
  uint32_t seed = 1200;
  std::vector<Shape> shapes;
  for (int64_t T : {7, 130})
    for (bool causal : {false, true}) {
      shapes.push_back(selfShape(2, T, 4, 2, 64, causal));
      shapes.push_back(selfShape(1, T, 4, 1, 20, causal));
    }
  shapes.push_back(selfShape(1, 257, 2, 1, 32, true));
  shapes.push_back(windowed(selfShape(1, 200, 4, 2, 32, true), 45));
  shapes.push_back(packed(selfShape(2, 130, 4, 2, 64, true), 30, 1250));
  shapes.push_back(Shape{2, 9, 70, 4, 2, 64, false, 0.125}); // cross
  for (const Shape &s : shapes) {
    SCOPED_TRACE(s.str());
    Problem p = makeProblem(s, seed++);
    const std::vector<lap_bf16> q = bf16Vector(p.q), k = bf16Vector(p.k),
                                v = bf16Vector(p.v), dout = bf16Vector(p.g);
    p.q = valuesOf(q), p.k = valuesOf(k), p.v = valuesOf(v);
    p.g = valuesOf(dout);
    const std::vector<float> coefficients = p.coefficients();

    Forward f = runForward(p);
    std::vector<lap_bf16> o(f.o.size(), 0x7fc0);
    std::vector<float> lse(f.lse.size(), 7.0f);
    lap_cpu_attention_forward_bf16(o.data(), lse.data(), q.data(), k.data(),
                                   v.data(), coefficients.data(), startsOf(s),
                                   lengthsOf(s), s.B, s.T, s.S, s.H, s.KV, s.D,
                                   float(s.scale), s.causal, s.window);
    EXPECT_EQ(o, bf16Vector(f.o));
    EXPECT_EQ(lse, f.lse);

    // Backward from the bf16 output, as a bf16 model's gradient reads it.
    const bool learned = s.S == s.T;
    f.o = valuesOf(o);
    Backward g = runBackward(p, f, learned);
    std::vector<lap_bf16> dq(q.size(), 0x7fc0), dk(k.size(), 0x7fc0),
        dv(v.size(), 0x7fc0);
    std::vector<float> dc(learned ? 2 * s.H : 0, 7.0f);
    lap_cpu_attention_backward_bf16(
        dq.data(), dk.data(), dv.data(), learned ? dc.data() : nullptr,
        dout.data(), q.data(), k.data(), v.data(), o.data(), lse.data(),
        coefficients.data(), startsOf(s), lengthsOf(s), s.B, s.T, s.S, s.H,
        s.KV, s.D, float(s.scale), s.causal, s.window);
    EXPECT_EQ(dq, bf16Vector(g.dq));
    EXPECT_EQ(dk, bf16Vector(g.dk));
    EXPECT_EQ(dv, bf16Vector(g.dv));
    EXPECT_EQ(dc, g.dcoefficients);
  }
}

// No queries or no keys: nothing to attend to, and nothing may be read.
TEST(Attention, EmptySequences) {
  Problem none = makeProblem(Shape{2, 0, 0, 4, 2, 64, true, 0.125}, 1100);
  Backward g0 = runBackward(none, runForward(none), /*learned=*/true);
  EXPECT_TRUE(g0.dq.empty() && g0.dk.empty() && g0.dv.empty());
  for (float x : g0.dcoefficients) // written, and zero
    EXPECT_EQ(x, 0.0f);

  // Cross attention with S = 0: O = 0, lse = -inf, dq = 0.
  Problem noKeys = makeProblem(Shape{2, 5, 0, 4, 2, 64, false, 0.125}, 1101);
  Forward f = runForward(noKeys);
  for (float x : f.o)
    EXPECT_EQ(x, 0.0f);
  for (float x : f.lse)
    EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
  Backward g = runBackward(noKeys, f);
  for (float x : g.dq)
    EXPECT_EQ(x, 0.0f);

  // T = 0 with keys: no gradient reaches them.
  Problem noQueries = makeProblem(Shape{2, 0, 5, 4, 2, 64, false, 0.125}, 1102);
  Backward gk = runBackward(noQueries, runForward(noQueries));
  for (float x : gk.dk)
    EXPECT_EQ(x, 0.0f);
  for (float x : gk.dv)
    EXPECT_EQ(x, 0.0f);
}

} // namespace
