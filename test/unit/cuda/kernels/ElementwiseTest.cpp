//===- ElementwiseTest.cpp - CUDA data movement and positions -------------===//
//
// Each CUDA kernel of Copy, Dropout, Embedding, Rope and Tokens against its
// CPU twin on the same seeded inputs. Outputs
// start as NaN on both sides, so a skipped or accumulated element fails.
// Tolerances:
//  - exact where the GPU does the CPU's arithmetic: copies, gathers, masks,
//    and sums the GPU adds in the CPU's order (embedding, positions, tokens);
//  - 1e-6 relative for rope and bicubic resampling (FMA contraction may
//    differ: a few ulps).
// Relative errors are |got - want| / max(1, |want|): values that cancel to
// near zero are held to the absolute tolerance.
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
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace lap::test;

using Floats = std::vector<float>;

/// got == want elementwise (first few mismatches reported).
void expectEqual(const Floats &got, const Floats &want) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && ++bad <= 5)
      ADD_FAILURE() << "at " << i << ": " << got[i] << " != " << want[i];
  EXPECT_EQ(bad, 0) << "mismatches of " << got.size();
}

/// |got - want| <= tol * max(1, |want|) elementwise.
void expectClose(const Floats &got, const Floats &want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double limit = tol * std::max(1.0, std::fabs(double(want[i])));
    if (!(std::fabs(double(got[i]) - double(want[i])) <= limit) && ++bad <= 5)
      ADD_FAILURE() << "at " << i << ": " << got[i] << " vs " << want[i];
  }
  EXPECT_EQ(bad, 0) << "mismatches of " << got.size();
}

std::vector<int32_t> randomIndices(std::mt19937 &rng, size_t n, int32_t lo,
                                   int32_t hi) {
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t &x : v)
    x = dist(rng);
  return v;
}

//--- Copy and dropout ---------------------------------------------------------

TEST(CudaCopy, MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(1);
  const int64_t n = 1001;
  Floats x = randomVector(rng, n), want = nanVector(n);
  lap_cpu_copy(want.data(), x.data(), n);
  DeviceBuffer<float> dx(x), dy(nanVector(n));
  lap_cuda_copy(dy, dx, n);
  lap_cuda_copy(dy, dx, 0); // nothing to do
  expectEqual(dy.host(), want);
}

TEST(CudaDropout, MasksMatchCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(2);
  const int64_t n = 100003; // several blocks and a partial one
  Floats x = randomVector(rng, n);
  DeviceBuffer<float> dx(x);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The kernels read the seed where they run: the GPU's from device memory.
  const uint64_t seed = 0x0123456789ABCDEFull;
  DeviceBuffer<uint64_t> deviceSeed(std::vector<uint64_t>{seed});
  for (float rate : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f, nan}) {
    Floats want = nanVector(n);
    lap_cpu_dropout(want.data(), x.data(), n, rate, &seed, -3);
    DeviceBuffer<float> dy(nanVector(n));
    lap_cuda_dropout(dy, dx, n, rate, deviceSeed, -3);
    expectEqual(dy.host(), want); // same hash, threshold and scale: exact
  }
}

// A bf16 model's: the same masks, one product rounded on both sides.
TEST(CudaDropout, Bf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(15);
  const int64_t B = 4, perSample = 3000, n = B * perSample;
  auto x = bf16Vector(randomVector(rng, n));
  const uint64_t seed = 21;
  DeviceBuffer<uint64_t> deviceSeed(std::vector<uint64_t>{seed});
  std::vector<lap_bf16> want(n), wantPath(n);
  lap_cpu_dropout_bf16(want.data(), x.data(), n, 0.3f, &seed, 4);
  lap_cpu_drop_path_bf16(wantPath.data(), x.data(), B, perSample, 0.5f, &seed,
                         5);
  DeviceBuffer<lap_bf16> dX(x), dy(std::vector<lap_bf16>(n, 0xffff)),
      dPath(std::vector<lap_bf16>(n, 0xffff));
  lap_cuda_dropout_bf16(dy, dX, n, 0.3f, deviceSeed, 4);
  lap_cuda_drop_path_bf16(dPath, dX, B, perSample, 0.5f, deviceSeed, 5);
  EXPECT_EQ(dy.host(), want);
  EXPECT_EQ(dPath.host(), wantPath);
}

TEST(CudaDropout, InPlaceMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(3);
  const int64_t n = 4099;
  Floats x = randomVector(rng, n), want = x;
  const uint64_t seed = 7;
  DeviceBuffer<uint64_t> deviceSeed(std::vector<uint64_t>{seed});
  lap_cpu_dropout(want.data(), want.data(), n, 0.3f, &seed, 11);
  DeviceBuffer<float> dx(x);
  lap_cuda_dropout(dx, dx, n, 0.3f, deviceSeed, 11);
  expectEqual(dx.host(), want);
}

TEST(CudaDropPath, MasksMatchCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(4);
  const int64_t B = 37, perSample = 301; // samples straddle blocks
  Floats x = randomVector(rng, B * perSample);
  DeviceBuffer<float> dx(x);
  const uint64_t seed = 5, other = 6;
  DeviceBuffer<uint64_t> deviceSeed(std::vector<uint64_t>{seed}),
      deviceOther(std::vector<uint64_t>{other});
  for (float rate : {0.0f, 0.4f, 1.0f}) {
    Floats want = nanVector(x.size());
    lap_cpu_drop_path(want.data(), x.data(), B, perSample, rate, &seed, 9);
    DeviceBuffer<float> dy(nanVector(x.size()));
    lap_cuda_drop_path(dy, dx, B, perSample, rate, deviceSeed, 9);
    expectEqual(dy.host(), want);
  }
  Floats want = x;
  lap_cpu_drop_path(want.data(), want.data(), B, perSample, 0.5f, &other, -1);
  lap_cuda_drop_path(dx, dx, B, perSample, 0.5f, deviceOther, -1); // in place
  expectEqual(dx.host(), want);
}

//--- Embeddings ---------------------------------------------------------------

TEST(CudaEmbedding, ForwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(5);
  const int64_t vocab = 11, c = 37, n = 50;
  Floats table = randomVector(rng, vocab * c);
  auto idx = randomIndices(rng, n, -2, vocab + 1); // some out of range
  Floats want = nanVector(n * c);
  lap_cpu_embedding_forward(want.data(), table.data(), idx.data(), n, vocab, c);
  DeviceBuffer<float> dtable(table), dy(nanVector(n * c));
  DeviceBuffer<int32_t> didx(idx);
  lap_cuda_embedding_forward(dy, dtable, didx, n, vocab, c);
  expectEqual(dy.host(), want); // gather: exact
}

/// embedding_backward on both sides; rows are summed in position order on
/// both, the first copied, so the results are equal.
void checkEmbeddingBackward(const std::vector<int32_t> &idx, int64_t vocab,
                            int64_t c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n = int64_t(idx.size());
  Floats dy = randomVector(rng, n * c), want = nanVector(vocab * c);
  lap_cpu_embedding_backward(want.data(), dy.data(), idx.data(), n, vocab, c);
  DeviceBuffer<float> ddy(dy), dtable(nanVector(vocab * c));
  DeviceBuffer<int32_t> didx(idx);
  lap_cuda_embedding_backward(dtable, ddy, didx, n, vocab, c);
  expectEqual(dtable.host(), want);
}

TEST(CudaEmbedding, BackwardRepeatsUnusedRowsAndOutOfRange) {
  REQUIRE_GPU();
  // 3 three times, 1 twice, rows 2 and 4 unused, -1 and 6 dropped.
  checkEmbeddingBackward({3, 1, 3, 0, 5, 3, -1, 6, 1}, 6, 5, 6);
}

TEST(CudaEmbedding, BackwardLargeSkewed) {
  REQUIRE_GPU();
  std::mt19937 rng(7);
  // Half the positions hold token 7 (one long segment); the rest are spread
  // over [0, 200) plus a few out of range, so rows 200 .. 299 are unused.
  // c = 700 spans two column tiles of the segment sum.
  auto idx = randomIndices(rng, 5000, -1, 200);
  for (size_t i = 0; i < idx.size(); i += 2)
    idx[i] = 7;
  checkEmbeddingBackward(idx, 300, 700, 8);
}

TEST(CudaEmbedding, BackwardManyTokens) {
  REQUIRE_GPU();
  std::mt19937 rng(9);
  // A 65,536 vocabulary sorts on 17 key bits; 70,000 > 65,535 positions.
  checkEmbeddingBackward(randomIndices(rng, 70000, 0, 65535), 65536, 3, 10);
}

TEST(CudaEmbedding, BackwardWithoutRowsIsZero) {
  REQUIRE_GPU();
  checkEmbeddingBackward({}, 4, 3, 11);
}

// A bf16 model's: both sides sum in fp32 in position order and round once,
// so they are equal; the gather copies bf16 as it is.
TEST(CudaEmbedding, Bf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(12);
  const int64_t vocab = 300, c = 700;
  auto idx = randomIndices(rng, 5000, -1, 200);
  const int64_t n = int64_t(idx.size());
  auto table = bf16Vector(randomVector(rng, vocab * c)),
       dy = bf16Vector(randomVector(rng, n * c));
  std::vector<lap_bf16> y(n * c), dtable(vocab * c);
  lap_cpu_embedding_forward_bf16(y.data(), table.data(), idx.data(), n, vocab,
                                 c);
  lap_cpu_embedding_backward_bf16(dtable.data(), dy.data(), idx.data(), n,
                                  vocab, c);
  DeviceBuffer<lap_bf16> dTable(table), dDy(dy),
      gy(std::vector<lap_bf16>(y.size(), 0xffff)),
      gTable(std::vector<lap_bf16>(dtable.size(), 0xffff));
  DeviceBuffer<int32_t> dIdx(idx);
  lap_cuda_embedding_forward_bf16(gy, dTable, dIdx, n, vocab, c);
  lap_cuda_embedding_backward_bf16(gTable, dDy, dIdx, n, vocab, c);
  EXPECT_EQ(gy.host(), y);
  EXPECT_EQ(gTable.host(), dtable);
}

//--- Learned positions --------------------------------------------------------

TEST(CudaPositions, ForwardOffsetAndFirst) {
  REQUIRE_GPU();
  std::mt19937 rng(12);
  const int64_t B = 3, T = 6, c = 33, P = 9;
  Floats x = randomVector(rng, B * T * c), table = randomVector(rng, P * c);
  DeviceBuffer<float> dx(x), dtable(table);
  // offset 1, first 0: token 0 has no row; offset 2, first 3: decoding
  // after a cached prefix reads rows first + t - offset.
  using Shift = std::pair<int64_t, int64_t>; // (offset, first)
  for (auto [offset, first] : {Shift{1, 0}, Shift{2, 3}}) {
    Floats want = nanVector(x.size());
    lap_cpu_add_positions_forward(want.data(), x.data(), table.data(), B, T, c,
                                  offset, first);
    DeviceBuffer<float> dy(nanVector(x.size()));
    lap_cuda_add_positions_forward(dy, dx, dtable, B, T, c, offset, first);
    expectEqual(dy.host(), want); // one add per element: exact
  }
}

TEST(CudaPositions, BackwardOffsetAndUnusedRows) {
  REQUIRE_GPU();
  std::mt19937 rng(13);
  const int64_t B = 3, T = 6, c = 33, P = 8, offset = 1; // rows 5 .. 7 zero
  Floats dy = randomVector(rng, B * T * c), want = nanVector(P * c);
  lap_cpu_add_positions_backward(want.data(), dy.data(), B, T, c, offset, P);
  DeviceBuffer<float> ddy(dy), dtable(nanVector(P * c));
  lap_cuda_add_positions_backward(dtable, ddy, B, T, c, offset, P);
  expectEqual(dtable.host(), want); // sums over b in the CPU's order
}

// A bf16 model's: an fp32 sum of two bf16 values rounded once on both
// sides, and the backward's sums over b in the CPU's order: equal.
TEST(CudaPositions, Bf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(14);
  const int64_t B = 3, T = 6, c = 33, P = 8, offset = 1;
  auto x = bf16Vector(randomVector(rng, B * T * c)),
       table = bf16Vector(randomVector(rng, P * c)),
       dy = bf16Vector(randomVector(rng, B * T * c));
  std::vector<lap_bf16> y(x.size()), dtable(table.size());
  lap_cpu_add_positions_forward_bf16(y.data(), x.data(), table.data(), B, T, c,
                                     offset, 0);
  lap_cpu_add_positions_backward_bf16(dtable.data(), dy.data(), B, T, c, offset,
                                      P);
  DeviceBuffer<lap_bf16> dX(x), dTable(table), dDy(dy),
      gy(std::vector<lap_bf16>(y.size(), 0xffff)),
      gTable(std::vector<lap_bf16>(dtable.size(), 0xffff));
  lap_cuda_add_positions_forward_bf16(gy, dX, dTable, B, T, c, offset, 0);
  lap_cuda_add_positions_backward_bf16(gTable, dDy, B, T, c, offset, P);
  EXPECT_EQ(gy.host(), y);
  EXPECT_EQ(gTable.host(), dtable);
}

/// interpolate_positions both ways, upsampling and downsampling.
void checkInterpolation(int64_t keep, int64_t from, int64_t to, int64_t c,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t small = (keep + from * from) * c, large = (keep + to * to) * c;
  Floats x = randomVector(rng, small), want = nanVector(large);
  lap_cpu_interpolate_positions_forward(want.data(), x.data(), keep, from, to,
                                        c);
  DeviceBuffer<float> dx(x), dy(nanVector(large));
  lap_cuda_interpolate_positions_forward(dy, dx, keep, from, to, c);
  expectClose(dy.host(), want, 1e-6);

  Floats g = randomVector(rng, large), wantGrad = nanVector(small);
  lap_cpu_interpolate_positions_backward(wantGrad.data(), g.data(), keep, from,
                                         to, c);
  DeviceBuffer<float> dg(g), dgrad(nanVector(small));
  lap_cuda_interpolate_positions_backward(dgrad, dg, keep, from, to, c);
  expectClose(dgrad.host(), wantGrad, 1e-6);
}

TEST(CudaPositions, InterpolateUp) {
  REQUIRE_GPU();
  checkInterpolation(1, 5, 7, 13, 14);
}

TEST(CudaPositions, InterpolateDown) {
  REQUIRE_GPU();
  checkInterpolation(2, 7, 4, 13, 15);
}

TEST(CudaPositions, InterpolateDinoGrid) {
  REQUIRE_GPU();
  checkInterpolation(1, 16, 37, 300, 16); // 224 -> 518 pixels at patch 14
}

//--- Rotary positions ---------------------------------------------------------

/// rope both ways at a decoding offset, out of place and in place.
void checkRope(int64_t B, int64_t T, int64_t H, int64_t D, int64_t first,
               uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n = B * T * H * D;
  Floats x = randomVector(rng, n);
  for (bool backward : {false, true}) {
    auto cpu = backward ? lap_cpu_rope_backward : lap_cpu_rope_forward;
    auto gpu = backward ? lap_cuda_rope_backward : lap_cuda_rope_forward;
    Floats want = nanVector(n);
    cpu(want.data(), x.data(), B, T, H, D, 10000.0f, first);
    DeviceBuffer<float> dx(x), dy(nanVector(n));
    gpu(dy, dx, B, T, H, D, 10000.0f, first);
    expectClose(dy.host(), want, 1e-6);
    gpu(dx, dx, B, T, H, D, 10000.0f, first); // y == x
    expectClose(dx.host(), want, 1e-6);
  }
}

TEST(CudaRope, OddHeadDimension) {
  REQUIRE_GPU();
  checkRope(2, 5, 3, 7, 0, 17);
}

TEST(CudaRope, DecodingFarPositions) {
  REQUIRE_GPU();
  checkRope(2, 3, 4, 64, 10000, 18); // angles ~1e4 rad: double on both
}

TEST(CudaRope, ManyHeads) {
  REQUIRE_GPU();
  checkRope(1, 4, 20, 128, 3, 19); // H D / 2 > one block of threads
}

// A bf16 model's: against the CPU's bf16 kernel, within one bf16 step of
// the scale (a result next to a rounding tie may round the other way).
TEST(CudaRope, Bf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(20);
  const int64_t B = 2, T = 5, H = 3, D = 64, n = B * T * H * D;
  auto x = bf16Vector(randomVector(rng, n));
  for (bool backward : {false, true}) {
    auto cpu =
        backward ? lap_cpu_rope_backward_bf16 : lap_cpu_rope_forward_bf16;
    auto gpu =
        backward ? lap_cuda_rope_backward_bf16 : lap_cuda_rope_forward_bf16;
    std::vector<lap_bf16> want(n);
    cpu(want.data(), x.data(), B, T, H, D, 10000.0f, 3);
    DeviceBuffer<lap_bf16> dx(x), dy(std::vector<lap_bf16>(n, 0xffff));
    gpu(dy, dx, B, T, H, D, 10000.0f, 3);
    expectWithinScale(valuesOf(dy.host()), valuesOf(want), 0x1p-8,
                      backward ? "dx" : "y");
  }
}

//--- Image tokens and pooling -------------------------------------------------

TEST(CudaPatchify, MatchesCpuWithUncoveredPixels) {
  REQUIRE_GPU();
  std::mt19937 rng(20);
  // 7 x 9 images at p = 2: the last row and column are in no patch.
  const int64_t B = 2, C = 3, Hi = 7, Wi = 9, p = 2;
  const int64_t pixels = B * C * Hi * Wi, tokens = B * (Hi / p) * (Wi / p);
  Floats images = randomVector(rng, pixels),
         want = nanVector(tokens * C * p * p);
  lap_cpu_patchify_forward(want.data(), images.data(), B, C, Hi, Wi, p);
  DeviceBuffer<float> dimages(images), dy(nanVector(want.size()));
  lap_cuda_patchify_forward(dy, dimages, B, C, Hi, Wi, p);
  expectEqual(dy.host(), want);

  Floats g = randomVector(rng, want.size()), wantGrad = nanVector(pixels);
  lap_cpu_patchify_backward(wantGrad.data(), g.data(), B, C, Hi, Wi, p);
  DeviceBuffer<float> dg(g), dgrad(nanVector(pixels));
  lap_cuda_patchify_backward(dgrad, dg, B, C, Hi, Wi, p);
  expectEqual(dgrad.host(), wantGrad);
}

TEST(CudaPrependTokens, ForwardMatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(21);
  const int64_t B = 3, N = 5, k = 2, c = 37;
  Floats x = randomVector(rng, B * N * c), tokens = randomVector(rng, k * c);
  Floats want = nanVector(B * (k + N) * c);
  lap_cpu_prepend_tokens_forward(want.data(), x.data(), tokens.data(), B, N, k,
                                 c);
  DeviceBuffer<float> dx(x), dtokens(tokens), dy(nanVector(want.size()));
  lap_cuda_prepend_tokens_forward(dy, dx, dtokens, B, N, k, c);
  expectEqual(dy.host(), want);
}

TEST(CudaPrependTokens, BackwardWithNullableOutputs) {
  REQUIRE_GPU();
  std::mt19937 rng(22);
  const int64_t B = 3, N = 5, k = 2, c = 300;
  Floats dy = randomVector(rng, B * (k + N) * c);
  Floats wantX = nanVector(B * N * c), wantTokens = nanVector(k * c);
  lap_cpu_prepend_tokens_backward(wantX.data(), wantTokens.data(), dy.data(), B,
                                  N, k, c);
  DeviceBuffer<float> ddy(dy);
  {
    DeviceBuffer<float> dx(nanVector(wantX.size())),
        dtokens(nanVector(wantTokens.size()));
    lap_cuda_prepend_tokens_backward(dx, dtokens, ddy, B, N, k, c);
    expectEqual(dx.host(), wantX);
    expectEqual(dtokens.host(), wantTokens); // sum over b in order: exact
  }
  {
    DeviceBuffer<float> dx(nanVector(wantX.size()));
    lap_cuda_prepend_tokens_backward(dx, nullptr, ddy, B, N, k, c);
    expectEqual(dx.host(), wantX);
  }
  {
    DeviceBuffer<float> dtokens(nanVector(wantTokens.size()));
    lap_cuda_prepend_tokens_backward(nullptr, dtokens, ddy, B, N, k, c);
    expectEqual(dtokens.host(), wantTokens);
  }
}

TEST(CudaTakeToken, MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(23);
  const int64_t B = 3, T = 5, c = 37, index = 2;
  Floats x = randomVector(rng, B * T * c), want = nanVector(B * c);
  lap_cpu_take_token_forward(want.data(), x.data(), B, T, c, index);
  DeviceBuffer<float> dx(x), dy(nanVector(want.size()));
  lap_cuda_take_token_forward(dy, dx, B, T, c, index);
  expectEqual(dy.host(), want);

  Floats g = randomVector(rng, B * c), wantGrad = nanVector(x.size());
  lap_cpu_take_token_backward(wantGrad.data(), g.data(), B, T, c, index);
  DeviceBuffer<float> dg(g), dgrad(nanVector(x.size()));
  lap_cuda_take_token_backward(dgrad, dg, B, T, c, index);
  expectEqual(dgrad.host(), wantGrad);
}

TEST(CudaMeanTokens, MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(24);
  const int64_t B = 3, T = 6, c = 600;
  Floats x = randomVector(rng, B * T * c), g = randomVector(rng, B * c);
  DeviceBuffer<float> dx(x), dg(g);
  for (int64_t skip : {0, 1, 6}) { // skip = T: no tokens, zero outputs
    Floats want = nanVector(B * c);
    lap_cpu_mean_tokens_forward(want.data(), x.data(), B, T, c, skip);
    DeviceBuffer<float> dy(nanVector(want.size()));
    lap_cuda_mean_tokens_forward(dy, dx, B, T, c, skip);
    expectEqual(dy.host(), want); // token-order sum, then one scale: exact

    Floats wantGrad = nanVector(x.size());
    lap_cpu_mean_tokens_backward(wantGrad.data(), g.data(), B, T, c, skip);
    DeviceBuffer<float> dgrad(nanVector(x.size()));
    lap_cuda_mean_tokens_backward(dgrad, dg, B, T, c, skip);
    expectEqual(dgrad.host(), wantGrad);
  }
}

// A bf16 model's token kernels: copies, and fp32 sums in the CPU's order
// rounded once on both sides: equal.
TEST(CudaTokens, Bf16MatchesCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(25);
  const int64_t B = 3, N = 5, k = 2, c = 600, T = k + N;
  auto x = bf16Vector(randomVector(rng, B * N * c)),
       tokens = bf16Vector(randomVector(rng, k * c)),
       dy = bf16Vector(randomVector(rng, B * T * c)),
       dpooled = bf16Vector(randomVector(rng, B * c));
  DeviceBuffer<lap_bf16> gx(x), gTokens(tokens), gDy(dy), gDpooled(dpooled);
  auto filled = [](int64_t n) { return std::vector<lap_bf16>(n, 0xffff); };

  std::vector<lap_bf16> y = filled(B * T * c);
  lap_cpu_prepend_tokens_forward_bf16(y.data(), x.data(), tokens.data(), B, N,
                                      k, c);
  DeviceBuffer<lap_bf16> gy(filled(B * T * c));
  lap_cuda_prepend_tokens_forward_bf16(gy, gx, gTokens, B, N, k, c);
  EXPECT_EQ(gy.host(), y);

  std::vector<lap_bf16> dx = filled(B * N * c), dtokens = filled(k * c);
  lap_cpu_prepend_tokens_backward_bf16(dx.data(), dtokens.data(), dy.data(), B,
                                       N, k, c);
  DeviceBuffer<lap_bf16> gdx(filled(B * N * c)), gdtokens(filled(k * c));
  lap_cuda_prepend_tokens_backward_bf16(gdx, gdtokens, gDy, B, N, k, c);
  EXPECT_EQ(gdx.host(), dx);
  EXPECT_EQ(gdtokens.host(), dtokens);

  for (int64_t at : {int64_t(0), int64_t(4)}) { // take's index, mean's skip
    std::vector<lap_bf16> pooled = filled(B * c), grad = filled(B * T * c);
    DeviceBuffer<lap_bf16> gPooled(filled(B * c)), gGrad(filled(B * T * c));
    lap_cpu_take_token_forward_bf16(pooled.data(), dy.data(), B, T, c, at);
    lap_cuda_take_token_forward_bf16(gPooled, gDy, B, T, c, at);
    EXPECT_EQ(gPooled.host(), pooled);
    lap_cpu_take_token_backward_bf16(grad.data(), dpooled.data(), B, T, c, at);
    lap_cuda_take_token_backward_bf16(gGrad, gDpooled, B, T, c, at);
    EXPECT_EQ(gGrad.host(), grad);

    lap_cpu_mean_tokens_forward_bf16(pooled.data(), dy.data(), B, T, c, at);
    lap_cuda_mean_tokens_forward_bf16(gPooled, gDy, B, T, c, at);
    EXPECT_EQ(gPooled.host(), pooled);
    lap_cpu_mean_tokens_backward_bf16(grad.data(), dpooled.data(), B, T, c, at);
    lap_cuda_mean_tokens_backward_bf16(gGrad, gDpooled, B, T, c, at);
    EXPECT_EQ(gGrad.host(), grad);
  }
}

} // namespace
