//===- EmbeddingTest.cpp - embeddings and learned positions ---------------===//
//
// Naive double references; table gradients against central differences of
// L = sum(y * G) for a random G.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

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

} // namespace
