//===- EmbeddingTest.cpp - embeddings, positions, document starts --------===//
//
// Naive double references; table gradients against central differences of
// L = sum(y * G) for a random G. Resampled position grids against a dense
// double-precision resampling matrix built from the definition of PyTorch's
// bicubic interpolation.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace lap::test;

/// y[i] = table[idx[i]], zero rows for indices outside [0, vocab).
std::vector<double> referenceEmbedding(const std::vector<double> &table,
                                       const std::vector<int32_t> &idx,
                                       int64_t vocab, int64_t c) {
  std::vector<double> y(idx.size() * c, 0.0);
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i] >= 0 && idx[i] < vocab)
      for (int64_t j = 0; j < c; ++j)
        y[i * c + j] = table[idx[i] * c + j];
  return y;
}

/// y[b, t] = x[b, t] + table[t - offset] for t >= offset.
std::vector<double> referencePositions(const std::vector<double> &x,
                                       const std::vector<double> &table,
                                       int64_t B, int64_t T, int64_t c,
                                       int64_t offset) {
  std::vector<double> y(x);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = offset; t < T; ++t)
      for (int64_t j = 0; j < c; ++j)
        y[(b * T + t) * c + j] += table[(t - offset) * c + j];
  return y;
}

TEST(Embedding, ForwardMatchesReference) {
  std::mt19937 rng(1);
  int64_t vocab = 7, c = 5;
  auto table = randomVector(rng, vocab * c);
  std::vector<int32_t> idx = {3, 0, 6, 3, -1, 7, 2};
  auto y = nanVector(idx.size() * c);
  lap_cpu_embedding_forward(y.data(), table.data(), idx.data(), idx.size(),
                            vocab, c);
  auto want = referenceEmbedding({table.begin(), table.end()}, idx, vocab, c);
  expectNear(y, want, 0.0); // copies: exact
}

TEST(Embedding, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(2);
  int64_t vocab = 6, c = 4;
  auto table = randomVector(rng, vocab * c);
  // Repeats (3 three times), an unused row (4), and out-of-range indices.
  std::vector<int32_t> idx = {3, 1, 3, 0, 5, 3, -1, 6, 1};
  auto g = randomVector(rng, idx.size() * c);
  auto dtable = nanVector(table.size());
  lap_cpu_embedding_backward(dtable.data(), g.data(), idx.data(), idx.size(),
                             vocab, c);
  auto tableD = toDouble(table);
  auto want = centralDifferences(tableD, [&](const std::vector<double> &t) {
    return weightedSum(referenceEmbedding(t, idx, vocab, c), g);
  });
  // L is linear in the table: differences exact to ~1e-10; fp32 sums of
  // three terms of size <= 1 are within 1e-6.
  expectNear(dtable, want, 1e-5);
  for (int64_t j = 0; j < c; ++j)
    EXPECT_EQ(dtable[4 * c + j], 0.0f); // unused row: exactly zero
}

TEST(Embedding, BackwardLargeIsDeterministic) {
  // Many repeats across threads: same result every run, close to a double sum.
  std::mt19937 rng(3);
  int64_t vocab = 50, c = 64, n = 20000;
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> idx(n);
  for (auto &i : idx)
    i = pick(rng);
  auto g = randomVector(rng, n * c);
  auto first = nanVector(vocab * c), second = nanVector(vocab * c);
  lap_cpu_embedding_backward(first.data(), g.data(), idx.data(), n, vocab, c);
  lap_cpu_embedding_backward(second.data(), g.data(), idx.data(), n, vocab, c);
  EXPECT_EQ(first, second);
  std::vector<double> want(vocab * c, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      want[idx[i] * c + j] += g[i * c + j];
  // ~400 fp32 additions of terms <= 1 per element.
  expectNear(first, want, 1e-3);
}

// A bf16 model's: the gather copies the bf16 rows; the gradient is the
// fp32 kernel's on the bf16 values (rows summed in position order),
// rounded, bit for bit; unused and out-of-range indices as there.
TEST(Embedding, Bf16KernelsAreTheFp32OnesRounded) {
  std::mt19937 rng(41);
  const int64_t vocab = 37, c = 70, n = 300;
  std::uniform_int_distribution<int32_t> pick(-1, 30);
  std::vector<int32_t> idx(n);
  for (int32_t &v : idx)
    v = pick(rng);
  auto table = bf16Vector(randomVector(rng, vocab * c)),
       dy = bf16Vector(randomVector(rng, n * c));
  std::vector<lap_bf16> y(n * c, 0xffff), dtable(vocab * c, 0xffff);
  auto want = nanVector(n * c), wantTable = nanVector(vocab * c);
  lap_cpu_embedding_forward_bf16(y.data(), table.data(), idx.data(), n, vocab,
                                 c);
  lap_cpu_embedding_forward(want.data(), valuesOf(table).data(), idx.data(), n,
                            vocab, c);
  EXPECT_EQ(y, bf16Vector(want));
  lap_cpu_embedding_backward_bf16(dtable.data(), dy.data(), idx.data(), n,
                                  vocab, c);
  lap_cpu_embedding_backward(wantTable.data(), valuesOf(dy).data(), idx.data(),
                             n, vocab, c);
  EXPECT_EQ(dtable, bf16Vector(wantTable));
}

TEST(AddPositions, ForwardMatchesReference) {
  std::mt19937 rng(4);
  int64_t B = 3, T = 6, c = 5, offset = 2, P = 5;
  auto x = randomVector(rng, B * T * c), table = randomVector(rng, P * c);
  auto y = nanVector(x.size());
  lap_cpu_add_positions_forward(y.data(), x.data(), table.data(), B, T, c,
                                offset, 0);
  // One fp32 addition: within 1 ulp of the double sum.
  expectNear(y,
             referencePositions({x.begin(), x.end()},
                                {table.begin(), table.end()}, B, T, c, offset),
             1e-6);
}

// A bf16 model's: the fp32 kernels on the bf16 values, rounded, bit for
// bit; with an offset and a decoding start.
TEST(AddPositions, Bf16KernelsAreTheFp32OnesRounded) {
  std::mt19937 rng(42);
  const int64_t B = 3, T = 9, c = 40, P = 10, offset = 1;
  auto x = bf16Vector(randomVector(rng, B * T * c)),
       table = bf16Vector(randomVector(rng, P * c)),
       dy = bf16Vector(randomVector(rng, B * T * c));
  std::vector<lap_bf16> y(x.size(), 0xffff), dtable(table.size(), 0xffff);
  auto want = nanVector(x.size()), wantTable = nanVector(table.size());
  lap_cpu_add_positions_forward_bf16(y.data(), x.data(), table.data(), B, T, c,
                                     offset, 0);
  lap_cpu_add_positions_forward(want.data(), valuesOf(x).data(),
                                valuesOf(table).data(), B, T, c, offset, 0);
  EXPECT_EQ(y, bf16Vector(want));
  lap_cpu_add_positions_forward_bf16(y.data(), x.data(), table.data(), B, 1, c,
                                     offset, 4);
  lap_cpu_add_positions_forward(want.data(), valuesOf(x).data(),
                                valuesOf(table).data(), B, 1, c, offset, 4);
  EXPECT_EQ(std::vector<lap_bf16>(y.begin(), y.begin() + B * c),
            bf16Vector(std::vector<float>(want.begin(), want.begin() + B * c)))
      << "decoding";
  lap_cpu_add_positions_backward_bf16(dtable.data(), dy.data(), B, T, c, offset,
                                      P);
  lap_cpu_add_positions_backward(wantTable.data(), valuesOf(dy).data(), B, T, c,
                                 offset, P);
  EXPECT_EQ(dtable, bf16Vector(wantTable));
}

TEST(AddPositions, FirstPositionShiftsTheTable) {
  // Tokens t of a decoding step sit at positions first + t.
  std::mt19937 rng(7);
  int64_t B = 2, T = 3, c = 4, offset = 1, P = 8, first = 4;
  auto x = randomVector(rng, B * T * c), table = randomVector(rng, P * c);
  auto y = nanVector(x.size());
  lap_cpu_add_positions_forward(y.data(), x.data(), table.data(), B, T, c,
                                offset, first);
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t j = 0; j < c; ++j)
      EXPECT_EQ(y[r * c + j],
                x[r * c + j] + table[(first + r % T - offset) * c + j]);
}

TEST(AddPositions, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(5);
  // P > T - offset: the last table row is beyond the sequence, gradient 0.
  int64_t B = 3, T = 6, c = 4, offset = 2, P = 5;
  auto x = randomVector(rng, B * T * c), table = randomVector(rng, P * c),
       g = randomVector(rng, B * T * c);
  auto dtable = nanVector(table.size());
  lap_cpu_add_positions_backward(dtable.data(), g.data(), B, T, c, offset, P);
  std::vector<double> xd(x.begin(), x.end());
  auto tableD = toDouble(table);
  auto want = centralDifferences(tableD, [&](const std::vector<double> &t) {
    return weightedSum(referencePositions(xd, t, B, T, c, offset), g);
  });
  // Linear in the table; fp32 sums of three terms.
  expectNear(dtable, want, 1e-5);
  for (int64_t j = 0; j < c; ++j)
    EXPECT_EQ(dtable[(P - 1) * c + j], 0.0f);
}

TEST(AddPositions, NoOffset) {
  std::mt19937 rng(6);
  int64_t B = 2, T = 4, c = 3, P = 4;
  auto x = randomVector(rng, B * T * c), table = randomVector(rng, P * c);
  auto y = nanVector(x.size());
  lap_cpu_add_positions_forward(y.data(), x.data(), table.data(), B, T, c, 0,
                                0);
  expectNear(y,
             referencePositions({x.begin(), x.end()},
                                {table.begin(), table.end()}, B, T, c, 0),
             1e-6);
}

//--- Resampled position grids
//--------------------------------------------------------------

/// PyTorch's cubic convolution kernel (A = -0.75) at distance d.
double cubicKernel(double d) {
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1)
    return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2)
    return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

/// Where output i of `to` reads the `from` source axis: bicubic with
/// align_corners = False and scale factor (to + 0.1) / from.
double sourceCoordinate(int64_t i, int64_t from, int64_t to) {
  return (double(i) + 0.5) * double(from) / (double(to) + 0.1) - 0.5;
}

/// The dense [to, from] matrix of one axis: output i takes the four source
/// taps floor(s) - 1 .. floor(s) + 2 around s = sourceCoordinate(i), each
/// weighted by the kernel at its distance from s, and taps beyond the grid
/// read its border (their weights add up there).
std::vector<double> cubicMatrix(int64_t from, int64_t to) {
  std::vector<double> m(to * from, 0.0);
  for (int64_t i = 0; i < to; ++i) {
    double s = sourceCoordinate(i, from, to);
    int64_t base = int64_t(std::floor(s));
    for (int64_t n = base - 1; n <= base + 2; ++n)
      m[i * from + std::clamp<int64_t>(n, 0, from - 1)] +=
          cubicKernel(s - double(n));
  }
  return m;
}

/// y [keep + to^2, c] from x [keep + from^2, c]: the first keep rows
/// copied, then y[oy, ox] = sum over (iy, ix) of M[oy, iy] M[ox, ix]
/// x[iy, ix] (separable in y and x).
std::vector<double> referenceInterpolate(const std::vector<double> &x,
                                         int64_t keep, int64_t from, int64_t to,
                                         int64_t c) {
  std::vector<double> y((keep + to * to) * c, 0.0);
  std::copy(x.begin(), x.begin() + keep * c, y.begin());
  auto m = cubicMatrix(from, to);
  for (int64_t oy = 0; oy < to; ++oy)
    for (int64_t ox = 0; ox < to; ++ox)
      for (int64_t iy = 0; iy < from; ++iy)
        for (int64_t ix = 0; ix < from; ++ix) {
          double w = m[oy * from + iy] * m[ox * from + ix];
          if (w == 0)
            continue;
          for (int64_t j = 0; j < c; ++j)
            y[(keep + oy * to + ox) * c + j] +=
                w * x[(keep + iy * from + ix) * c + j];
        }
  return y;
}

double largestMagnitude(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

struct Grids {
  int64_t keep, from, to, c;
};

// Downsampling with a CLS row, upsampling without, a grid resampled to a
// single patch, and wide rows (c = 64) over many output rows (threads).
const Grids kGrids[] = {
    {1, 7, 3, 5}, {0, 4, 6, 5}, {1, 2, 1, 3}, {1, 14, 16, 64}, {0, 5, 2, 64}};

TEST(InterpolatePositions, ForwardMatchesReference) {
  std::mt19937 rng(8);
  for (Grids g : kGrids) {
    auto x = randomVector(rng, (g.keep + g.from * g.from) * g.c);
    auto y = nanVector((g.keep + g.to * g.to) * g.c);
    lap_cpu_interpolate_positions_forward(y.data(), x.data(), g.keep, g.from,
                                          g.to, g.c);
    auto want = referenceInterpolate(toDouble(x), g.keep, g.from, g.to, g.c);
    // 16 fp32 products with weights of magnitude <= ~1.1 per element: within
    // a few ulp of the largest value, so 1e-5 of it.
    expectNear(y, want, 1e-5 * largestMagnitude(want));
    for (int64_t j = 0; j < g.keep * g.c; ++j)
      EXPECT_EQ(y[j], x[j]) << "kept row at " << j; // a copy: exact
  }
}

TEST(InterpolatePositions, ConstantGridStaysConstant) {
  // The kernel's weights sum to 1 along each axis (with the border taps
  // folded in), so a constant grid resamples to the same constant.
  for (Grids g : kGrids) {
    std::vector<float> x((g.keep + g.from * g.from) * g.c, 0.75f);
    for (int64_t j = 0; j < g.keep * g.c; ++j)
      x[j] = -2.0f;
    auto y = nanVector((g.keep + g.to * g.to) * g.c);
    lap_cpu_interpolate_positions_forward(y.data(), x.data(), g.keep, g.from,
                                          g.to, g.c);
    for (int64_t r = 0; r < g.keep + g.to * g.to; ++r)
      for (int64_t j = 0; j < g.c; ++j)
        // 16 fp32 products summing to 0.75: a few ulp.
        EXPECT_NEAR(y[r * g.c + j], r < g.keep ? -2.0f : 0.75f, 1e-6)
            << "row " << r << " channel " << j;
  }
}

TEST(InterpolatePositions, RampAlongXKnownValues) {
  // x[iy, ix] = ix: the y weights sum to 1, so every output row of the grid
  // is the same, and away from the border output ox is sum_k k W(s - k)
  // over the four taps, s its source coordinate. A = -0.75 reproduces
  // linear functions only up to a cubic in t = s - floor(s):
  // s - 2 (A + 0.5) t (1 - t) (1 - 2 t) = s + t (1 - t) (1 - 2 t) / 2.
  const int64_t from = 12, to = 9, c = 3;
  std::vector<float> x(from * from * c);
  for (int64_t iy = 0; iy < from; ++iy)
    for (int64_t ix = 0; ix < from; ++ix)
      for (int64_t j = 0; j < c; ++j)
        x[(iy * from + ix) * c + j] = float(ix);
  auto y = nanVector(to * to * c);
  lap_cpu_interpolate_positions_forward(y.data(), x.data(), 0, from, to, c);
  int64_t interior = 0;
  for (int64_t ox = 0; ox < to; ++ox) {
    double s = sourceCoordinate(ox, from, to), t = s - std::floor(s);
    bool clamped = std::floor(s) - 1 < 0 || std::floor(s) + 2 > from - 1;
    for (int64_t oy = 0; oy < to; ++oy)
      for (int64_t j = 0; j < c; ++j) {
        // Values up to 11: fp32 sums of 16 products within ~1e-5.
        EXPECT_NEAR(y[(oy * to + ox) * c + j], y[ox * c + j], 1e-5)
            << "output (" << oy << ", " << ox << ")";
        if (!clamped)
          EXPECT_NEAR(y[(oy * to + ox) * c + j],
                      s + t * (1 - t) * (1 - 2 * t) / 2, 2e-5)
              << "output (" << oy << ", " << ox << ") at s = " << s;
      }
    interior += !clamped;
  }
  EXPECT_GE(interior, 5); // most outputs have all four taps inside
}

TEST(InterpolatePositions, BackwardMatchesFiniteDifferences) {
  // L = sum(y * w) for a random w: dL/dx from the kernel given dy = w
  // against central differences of the double reference. L is linear in x,
  // so the differences are exact up to rounding (~1e-10); the kernel sums
  // up to ~16 (to / from)^2 fp32 products per element.
  std::mt19937 rng(9);
  const Grids small[] = {
      {1, 7, 3, 5}, {0, 4, 6, 5}, {1, 2, 1, 3}, {1, 3, 5, 64}};
  for (Grids g : small) {
    auto x = randomVector(rng, (g.keep + g.from * g.from) * g.c);
    auto w = randomVector(rng, (g.keep + g.to * g.to) * g.c);
    auto dx = randomVector(rng, x.size(), 1e3f, 1e4f); // overwritten
    lap_cpu_interpolate_positions_backward(dx.data(), w.data(), g.keep, g.from,
                                           g.to, g.c);
    auto xd = toDouble(x);
    auto want = centralDifferences(xd, [&](const std::vector<double> &p) {
      return weightedSum(referenceInterpolate(p, g.keep, g.from, g.to, g.c), w);
    });
    expectNear(dx, want, 1e-5);
    for (int64_t j = 0; j < g.keep * g.c; ++j)
      EXPECT_EQ(dx[j], w[j]) << "kept row at " << j; // a copy: exact
  }
}

TEST(InterpolatePositions, BackwardIsTheTranspose) {
  // Larger grids, where differences would be slow: dx = (M x M)^T dy with
  // the reference matrices, summed in double. Sources take up to
  // ~16 (to / from)^2 products of size <= ~1; fp32 within 1e-5.
  std::mt19937 rng(10);
  for (Grids g : kGrids) {
    auto dy = randomVector(rng, (g.keep + g.to * g.to) * g.c);
    auto dx = nanVector((g.keep + g.from * g.from) * g.c);
    lap_cpu_interpolate_positions_backward(dx.data(), dy.data(), g.keep, g.from,
                                           g.to, g.c);
    std::vector<double> want(dx.size(), 0.0);
    std::copy(dy.begin(), dy.begin() + g.keep * g.c, want.begin());
    auto m = cubicMatrix(g.from, g.to);
    for (int64_t oy = 0; oy < g.to; ++oy)
      for (int64_t ox = 0; ox < g.to; ++ox)
        for (int64_t iy = 0; iy < g.from; ++iy)
          for (int64_t ix = 0; ix < g.from; ++ix) {
            double w = m[oy * g.from + iy] * m[ox * g.from + ix];
            for (int64_t j = 0; w != 0 && j < g.c; ++j)
              want[(g.keep + iy * g.from + ix) * g.c + j] +=
                  w * dy[(g.keep + oy * g.to + ox) * g.c + j];
          }
    expectNear(dx, want, 1e-5 * std::max(1.0, largestMagnitude(want)));
  }
}

// Document starts by hand: no bos (all 0), bos first, bos last, adjacent
// bos tokens, and another row of the batch that starts afresh.
TEST(DocumentStarts, LastBosAtOrBeforeEachToken) {
  const int32_t bos = 9;
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, //
                                       9, 1, 9, 9, 2, 3, 9};
  const std::vector<int32_t> want = {0, 0, 0, 0, 0, 0, 0, //
                                     0, 0, 2, 3, 3, 3, 6};
  std::vector<int32_t> starts(tokens.size(), -7);
  lap_cpu_document_starts(starts.data(), tokens.data(), 2, 7, bos);
  EXPECT_EQ(starts, want);
}

} // namespace
