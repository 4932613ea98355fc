//===- AttentionHopper.h - bf16 attention on Hopper's wgmma ------*- CUDA -*-===//
//
// attention_forward_bf16 and attention_backward_bf16 for head widths up to
// 128 on compute capability 9.0: AttentionTensorCores.h's kernels (the same
// outputs; P and dS rounded to bf16 as A operands, the sums in fp32), with
// their products on warpgroup MMAs (WarpGroupMma.h) instead of mma.sync:
//  - a block of two warpgroups owns 128 rows (queries; keys in the dk, dv
//    kernel), a warpgroup 64 of them, a warp 16: the rows of its
//    accumulator fragments, laid out as mma.sync's, so that the online
//    softmax, the gradients' terms and the epilogues are the mma.sync
//    kernels' own. The forward's block has a third, producer warpgroup
//    that copies the tiles, with stage barriers (WarpSpecialization.h)
//    in place of block-wide ones, and its two consumers take turns to
//    issue their products, as in FlashAttention-3;
//  - products of two tiles read both from shared memory; a product by P or
//    dS takes it from the registers that held S or dP;
//  - the block's own rows, and the tiles of the other side (128 keys and
//    their values in the forward, 64 in dq; 64 queries with their dO, lse
//    and D_i in dk, dv), are copied asynchronously (cp.async; TilePipeline
//    in the gradients) into the 128-byte swizzle that wgmma reads, 64
//    columns per block of rows;
//  - a tile's softmax or gradient terms run while the previous tile's
//    product by P or dS does, as FlashAttention-3 overlaps them within a
//    warpgroup (in dK/dV at head width 64 only: at 128 the registers it
//    takes would spill).
// Attention.h launches them where Launcher::hopper() holds; the emulator runs
// this source on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ATTENTIONHOPPER_H
#define LAP_RUNTIME_KERNELS_CUDA_ATTENTIONHOPPER_H

#include "runtime/kernels/cuda/AttentionShape.h"
#include "runtime/kernels/cuda/AttentionTensorCores.h"
#include "runtime/kernels/cuda/TensorCores.h"
#include "runtime/kernels/cuda/WarpGroupMma.h"
#include "runtime/kernels/cuda/WarpSpecialization.h"

#include <cstdint>

namespace lap::cuda::hopper {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

constexpr int kGroups = 2; // warpgroups per block
constexpr int kThreads = 128 * kGroups;
constexpr int kRows = 64 * kGroups; // queries per block
constexpr int kKeys = 128;          // keys per tile

/// A tile of Rows rows of DP bf16 (DP a multiple of 64) in shared memory as
/// wgmma reads it: DP / 64 blocks [Rows][64], each in the 128-byte swizzle.
template <int Rows, int DP> struct SwizzledTile {
  static constexpr int rows = Rows, elements = Rows * DP;
  /// The element offset of (row, col).
  __device__ static int at(int row, int col) {
    return col / 64 * Rows * 64 + int(swizzled(row, col % 64) / 2);
  }
  /// Starts copying the first n rows of src (row stride ld, D elements)
  /// into `tile`, zeros elsewhere: 16 bytes a thread and step (`thread` of
  /// `threads` copying), as cp.async where rows allow it (`vectors`,
  /// TensorCores.h), else as stores of what the thread read. The caller
  /// commits the copies.
  __device__ static void load(uint16_t *tile, const uint16_t *src, int64_t ld,
                              int n, int D, bool vectors,
                              int thread = threadIdx.x,
                              int threads = kThreads) {
    constexpr int chunks = DP / 8;
    for (int i = thread; i < Rows * chunks; i += threads) {
      const int row = i / chunks, d = i % chunks * 8;
      const bool inside = row < n && d < D;
      const uint16_t *from = inside ? src + row * ld + d : src;
      uint16_t *to = tile + at(row, d);
      if (vectors) {
        copyAsync16(to, from, inside);
        continue;
      }
      uint16_t e[8] = {};
      for (int j = 0; inside && j < 8; ++j)
        e[j] = d + j < D ? from[j] : 0;
      uint4 x;
      memcpy(&x, e, sizeof x);
      store16(to, x);
    }
  }
};

/// Starts copying key tile i (Tile::rows keys from i Tile::rows; zero
/// past S) of a kv head (k and v at its key 0, rows ldk apart) into
/// `stage`: K, then V (SwizzledTile::load, `thread` of `threads`).
template <typename Tile>
__device__ void loadKeyTile(uint16_t *stage, int i, const uint16_t *k,
                            const uint16_t *v, int64_t ldk, int S, int D,
                            bool vectors, int thread = threadIdx.x,
                            int threads = kThreads) {
  const int s0 = i * Tile::rows, n = min(Tile::rows, S - s0);
  Tile::load(stage, k + s0 * ldk, ldk, n, D, vectors, thread, threads);
  Tile::load(stage + Tile::elements, v + s0 * ldk, ldk, n, D, vectors, thread,
             threads);
}

/// The pipeline (three stages) of the tiles of Tile::rows keys of kv head
/// `kv` of sequence b from key `first` up to keyEnd (loadKeyTile).
template <typename Tile>
__device__ auto keyTiles(uint16_t *stages, int first, int keyEnd,
                         const uint16_t *k, const uint16_t *v, int b, int kv,
                         const Shape &s, bool vectors) {
  const int64_t head = s.kRow(b, first, kv), ldk = int64_t(s.KV) * s.D;
  const int S = s.S - first, D = s.D;
  return tensorcore::pipeline<2 * Tile::elements, 3>(
      stages, (keyEnd - first + Tile::rows - 1) / Tile::rows,
      [=](int i, uint16_t *stage) {
        loadKeyTile<Tile>(stage, i, k + head, v + head, ldk, S, D, vectors);
      },
      [] { fenceSharedForMma(); });
}

/// The forward kernel's shared memory: Q, then three stages of a key tile
/// and its values, from the first 1024-aligned byte (the swizzle is of
/// addresses), then the barriers: Q's, each stage's "landed" and "vacant".
/// 225 KiB at head width 128, of the 227 KiB a block may have.
template <int DP> struct ForwardLayout {
  using Queries = SwizzledTile<kRows, DP>;
  using Keys = SwizzledTile<kKeys, DP>;
  static constexpr int stages = 3;
  static constexpr int stageElements = 2 * Keys::elements;
  static constexpr int tileElements =
      Queries::elements + stages * stageElements;
  static constexpr size_t bytes = 1024 + tileElements * sizeof(uint16_t) +
                                  (1 + 2 * stages) * sizeof(uint64_t);
  static_assert(bytes <= 227 * 1024);
};

// The forward's warpgroups: a producer, which copies Q and the key tiles,
// then two consumers, 64 queries each.
constexpr int kForwardThreads = 128 + kThreads;

/// The producer thread's arrival at `barrier` once what it wrote to a tile
/// has landed: when its copies complete (SwizzledTile::load copies rows
/// whole where `vectors`), else at once, after its stores, which
/// mbarrier.arrive releases.
__device__ inline void landedAll(uint64_t *barrier, bool vectors) {
  fenceSharedForMma();
  if (vectors)
    arriveWhenCopied(barrier);
  else
    arrive(barrier);
}

/// P [64][16 N] in C fragments (x[2kk], x[2kk + 1] span its columns 16kk ..
/// 16kk + 15) as the A fragments of N k steps, rounded to bf16.
template <int N>
__device__ inline void packA(uint32_t (&a)[N][4], const float (&x)[2 * N][4]) {
#pragma unroll
  for (int kk = 0; kk < N; ++kk) {
    a[kk][0] = packBf16(x[2 * kk][0], x[2 * kk][1]);
    a[kk][1] = packBf16(x[2 * kk][2], x[2 * kk][3]);
    a[kk][2] = packBf16(x[2 * kk + 1][0], x[2 * kk + 1][1]);
    a[kk][3] = packBf16(x[2 * kk + 1][2], x[2 * kk + 1][3]);
  }
}

/// The operand at step j (16 columns) of a SwizzledTile of Rows rows as
/// wgmma's K-major A or B, from its row `row` (a multiple of 8): k steps
/// 0..3 in the first 64-column block, 4..7 in the second, 32 bytes apart.
template <int Rows>
__device__ inline SharedMatrix kMajor(const uint16_t *tile, int row, int j) {
  return sharedMatrix(tile + j / 4 * Rows * 64 + row * 64 + j % 4 * 16, 1024);
}

/// The operand at step kk (16 rows) of a SwizzledTile of Rows rows as
/// wgmma's MN-major B: 8 rows to an atom (1024 bytes), 64-column blocks
/// Rows * 128 bytes apart.
template <int Rows>
__device__ inline SharedMatrix mnMajor(const uint16_t *tile, int kk) {
  return sharedMatrix(tile + kk * 16 * 64, 1024, Rows * 128);
}

/// Issues acc += A B, A in registers (N k steps), B the first 16 N rows of
/// `tile` (Rows rows) as MN-major: not committed, not waited for.
template <int Rows, int N, int NO>
__device__ inline void issueProducts(float (&acc)[NO][4],
                                     const uint32_t (&a)[N][4],
                                     const uint16_t *tile) {
#pragma unroll
  for (int kk = 0; kk < N; ++kk)
    mmaRegisters(acc, a[kk], mnMajor<Rows>(tile, kk));
}

/// The same, fenced before and waited for.
template <int Rows, int N, int NO>
__device__ inline void applyProducts(float (&acc)[NO][4], uint32_t (&a)[N][4],
                                     const uint16_t *tile) {
  fenceOperands(acc);
  fenceOperands(a);
  fence();
  issueProducts<Rows>(acc, a, tile);
  commit();
  wait<0>();
  fenceOperands(acc);
}

// o [B, T, H, D], lse [B, H, T]; a block per (b, h, kRows queries), the
// tiles of a head adjacent (its K and V stay in L2), costliest first. The
// producer warpgroup copies Q, then each key tile (K and V) into a free
// stage; each consumer waits for a tile to land and frees it when its last
// product by it is done. The consumers take turns to issue their products
// (named barriers 1 and 2), so that one's softmax runs while the other's
// products do, as in FlashAttention-3.
template <int DP>
__global__ void __launch_bounds__(kForwardThreads, 1)
    forwardKernel(uint16_t *__restrict__ o, float *__restrict__ lse,
                  const uint16_t *__restrict__ q,
                  const uint16_t *__restrict__ k,
                  const uint16_t *__restrict__ v,
                  const float *__restrict__ coefficients, Shape s, int tiles,
                  bool vectors) {
  using Layout = ForwardLayout<DP>;
  using Keys = typename Layout::Keys;
  constexpr int KS = DP / 16, NO = DP / 8, NS = kKeys / 8;
  constexpr int Stages = Layout::stages;
  LAP_DYNAMIC_SHARED(uint4, shared); // Layout::bytes
  uint16_t *Qs = aligned1024(shared);
  uint16_t *stages = Qs + Layout::Queries::elements;
  uint64_t *queriesLanded =
      reinterpret_cast<uint64_t *>(Qs + Layout::tileElements);
  uint64_t *landed = queriesLanded + 1, *vacant = landed + Stages;

  const auto [b, h, kv, t0, nq] = s.queryTile(tiles, kRows);
  // Causal: keys past the tile's last query are masked for all of it, and
  // under a window those before its first query's window.
  const int keyEnd = s.keyEnd(b, t0, nq);
  // keyEnd itself when the padding leaves the tile no key: no key tile.
  const int first = min(s.firstKeyTile(b, t0, kKeys), keyEnd);
  const int count = (keyEnd - first + kKeys - 1) / kKeys;
  if (threadIdx.x == 0) {
    initBarrier(queriesLanded, 128);
    for (int i = 0; i < Stages; ++i) {
      initBarrier(&landed[i], 128);
      initBarrier(&vacant[i], kThreads);
    }
  }
  __syncthreads();

  if (threadIdx.x < 128) { // the producer
    shrinkRegisters<24>();
    const int thread = threadIdx.x;
    Layout::Queries::load(Qs, q + s.qRow(b, t0, h), int64_t(s.H) * s.D, nq, s.D,
                          vectors, thread, 128);
    landedAll(queriesLanded, vectors);
    const int64_t head = s.kRow(b, first, kv), ldk = int64_t(s.KV) * s.D;
    for (int i = 0; i < count; ++i) {
      const int stage = i % Stages;
      waitBarrier(&vacant[stage], (i / Stages & 1) ^ 1);
      loadKeyTile<Keys>(stages + stage * Layout::stageElements, i, k + head,
                        v + head, ldk, s.S - first, s.D, vectors, thread, 128);
      landedAll(&landed[stage], vectors);
    }
    commitCopies(); // and waits for them, before the threads end
    waitCopies<0>();
    return;
  }

  growRegisters<240>();
  const int consumer = threadIdx.x / 128 - 1, warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int row = 64 * consumer; // the consumer's first query of the tile
  // The query of the lane's row g; of row g + 8: tq + 8.
  const int tq = t0 + row + 16 * warp + g;

  // Per row of the lane: the running max (base 2) and the lane's part of
  // the row sum; the unnormalised P V of its columns.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float acc[NO][4];
  tensorcore::zero(acc);
  waitBarrier(queriesLanded, 0);
  fenceSharedForMma();
  if (consumer == 1 && count > 0)
    arriveNamed(1, kThreads); // consumer 0 issues first

  // Tile i's P V is issued with tile i + 1's scores and runs while the
  // warpgroup computes their softmax; tile i's stage is freed after it.
  // Tile 0 comes with a P V of P = 0 (on its own V, which is finite), not
  // a branch, after which ptxas would fence.
  uint32_t p[NS / 2][4] = {}; // the last tile's P as A fragments (bf16)
  const uint16_t *lastV = nullptr;
  for (int i = 0; i < count; ++i) {
    const int stage = i % Stages, s0 = first + i * kKeys;
    waitBarrier(&landed[stage], i / Stages & 1);
    fenceSharedForMma(); // the producer's writes, for wgmma
    const uint16_t *Ks = stages + stage * Layout::stageElements;
    const uint16_t *Vs = Ks + Keys::elements;
    if (i == 0)
      lastV = Vs;
    float x[NS][4];
    syncNamed(1 + consumer, kThreads); // this consumer's turn
    fenceOperands(acc);
    fenceOperands(p);
    fence();
#pragma unroll
    for (int j = 0; j < KS; ++j)
      mmaShared(x, kMajor<kRows>(Qs, row, j), kMajor<kKeys>(Ks, 0, j), j > 0);
    commit();
    issueProducts<kKeys>(acc, p, lastV);
    commit();
    if (consumer == 0 || i + 1 < count)
      arriveNamed(2 - consumer, kThreads); // the other's turn
    wait<1>();                             // the scores; P V may still run
    fenceOperands(x);

    float corr[2];
    if (s.allVisible(b, tq - g, 16, s0, kKeys)) // the warp's rows
      tensorcore::softmaxScores<false>(x, m, l, corr, s, b, tq, s0, c);
    else
      tensorcore::softmaxScores<true>(x, m, l, corr, s, b, tq, s0, c);

    wait<0>();
    fenceOperands(acc);
    fenceOperands(p);
    if (i > 0)
      arrive(&vacant[(i - 1) % Stages]); // tile i - 1 is done with
    tensorcore::rescale(acc, corr);
    packA(p, x);
    lastV = Vs;
  }
  if (lastV)
    applyProducts<kKeys>(acc, p, lastV);

  tensorcore::storeForward(o, lse, acc, m, l, v, coefficients, s, b, h, kv, tq,
                           c);
}

//===----------------------------------------------------------------------===//
// Backward (the row terms D_i and the coefficients' sums: AttentionCudaCores.h)
//===----------------------------------------------------------------------===//

constexpr int kGradientQueries = 64; // queries per tile of dk, dv
constexpr int kGradientKeys = 64;    // keys per tile of dq

/// The dk, dv kernel's shared memory: the block's K and V, then three
/// stages of a query tile: Q, dO, then lse * log2 e and D_i (fp32) in 1024
/// bytes, which keeps the next stage 1024-aligned.
template <int DP> struct KeyGradientLayout {
  using Own = SwizzledTile<kRows, DP>;
  using Tile = SwizzledTile<kGradientQueries, DP>;
  static_assert(2 * kGradientQueries * sizeof(float) <= 1024);
  static constexpr int stageElements = 2 * Tile::elements + 512;
  static constexpr size_t bytes =
      1024 + (2 * Own::elements + 3 * stageElements) * sizeof(uint16_t);
  static_assert(bytes <= 227 * 1024);
};

// dk, dv [B, S, KV, D]; a block per (b, kv head, kRows keys), meeting the
// query tiles of the G heads of its kv head in turn; a warpgroup owns 64
// of the keys. The products are transposed (keys by queries), so that the
// keys are the rows of the accumulators: S^T = K Q^T, dP^T = V dO^T, dV +=
// (alpha P)^T dO, dK += dS^T Q. With alphaPartials [B, H, tiles]: each
// head's sum of P dP over the block.
template <int DP>
__global__ void __launch_bounds__(kThreads, 1) keyGradientsKernel(
    uint16_t *__restrict__ dk, uint16_t *__restrict__ dv,
    float *__restrict__ alphaPartials, const uint16_t *__restrict__ dout,
    const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
    const uint16_t *__restrict__ v, const float *__restrict__ lse,
    const float *__restrict__ terms, const float *__restrict__ coefficients,
    Shape s, int tiles, bool vectors) {
  using Layout = KeyGradientLayout<DP>;
  using Own = typename Layout::Own;
  using Tile = typename Layout::Tile;
  constexpr int KS = DP / 16, NO = DP / 8, NS = kGradientQueries / 8;
  __shared__ float warpSums[kThreads / 32];
  LAP_DYNAMIC_SHARED(uint4, shared); // Layout::bytes
  uint16_t *Ks = aligned1024(shared), *Vs = Ks + Own::elements;
  uint16_t *stages = Vs + Own::elements;
  const int group = threadIdx.x / 128, warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;

  // Under a causal mask the first key tiles meet the most queries: they
  // come first.
  const int bg = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const int s0 = tile * kRows;
  const int b = bg / s.KV, kv = bg % s.KV;
  const int nk = min(kRows, s.S - s0);
  const int row = 64 * group;              // the warpgroup's first key
  const int sk = s0 + row + 16 * warp + g; // the lane's keys: sk, sk + 8
  const int64_t ldq = int64_t(s.H) * s.D, ldk = int64_t(s.KV) * s.D;

  // K's and V's copies are the oldest group: the wait for the first query
  // tile covers them.
  Own::load(Ks, k + s.kRow(b, s0, kv), ldk, nk, s.D, vectors);
  Own::load(Vs, v + s.kRow(b, s0, kv), ldk, nk, s.D, vectors);
  commitCopies();
  const tensorcore::GroupQueryTiles<kGradientQueries> tiled(s, b, s0, nk);
  const int perHead = tiled.perHead;
  auto queries = tensorcore::pipeline<Layout::stageElements, 3>(
      stages, s.G * perHead,
      [&](int i, uint16_t *stage) {
        const int h = kv * s.G + i / perHead, t0 = tiled.t0(i % perHead);
        const int nq = min(kGradientQueries, s.T - t0);
        Tile::load(stage, q + s.qRow(b, t0, h), ldq, nq, s.D, vectors);
        Tile::load(stage + Tile::elements, dout + s.qRow(b, t0, h), ldq, nq,
                   s.D, vectors);
        tensorcore::loadRowStatistics<kGradientQueries, kThreads>(
            reinterpret_cast<float *>(stage + 2 * Tile::elements), lse, terms,
            s, b, h, t0, nq);
      },
      [] { fenceSharedForMma(); });
  float dK[NO][4], dV[NO][4];
  tensorcore::zero(dK);
  tensorcore::zero(dV);

  // At head width 64 a query tile's dV and dK products are issued with the
  // next tile's S^T and dP^T and run while the warpgroup computes their
  // terms, as in the forward (the first tile's with P = dS = 0 on its own
  // Q and dO). At 128 the registers that takes would spill: the products
  // follow the terms.
  constexpr bool overlap = DP <= 64;
  uint32_t pa[NS / 2][4] = {}, sa[NS / 2][4] = {}; // alpha P^T, dS^T (bf16)
  const uint16_t *lastQ = nullptr;                 // their tile's Q, then dO
  // dV += (alpha P)^T dO, dK += dS^T Q, 16 queries a step.
  auto issueGradients = [&] {
    issueProducts<kGradientQueries>(dV, pa, lastQ + Tile::elements);
    issueProducts<kGradientQueries>(dK, sa, lastQ);
    commit();
  };
  auto fenceGradients = [&] {
    fenceOperands(dV);
    fenceOperands(dK);
    fenceOperands(pa);
    fenceOperands(sa);
  };
  auto applyGradients = [&] {
    fenceGradients();
    fence();
    issueGradients();
    wait<0>();
    fenceOperands(dV);
    fenceOperands(dK);
  };
  for (int hg = 0; hg < s.G; ++hg) {
    const int h = kv * s.G + hg;
    const float alpha = coefficients[h];
    float pdp = 0.0f; // sum of P dP over the lane's entries
    for (int j = 0; j < perHead; ++j) {
      const int t0 = tiled.t0(j);
      const uint16_t *Qs = queries.next(hg * perHead + j);
      const uint16_t *dOs = Qs + Tile::elements;
      const float *Ls =
          reinterpret_cast<const float *>(Qs + 2 * Tile::elements);
      const float *Ds = Ls + kGradientQueries;
      if (!lastQ)
        lastQ = Qs;
      float x[NS][4], dp[NS][4];
      fenceGradients();
      fence();
#pragma unroll
      for (int i = 0; i < KS; ++i)
        mmaShared(x, kMajor<kRows>(Ks, row, i),
                  kMajor<kGradientQueries>(Qs, 0, i), i > 0);
#pragma unroll
      for (int i = 0; i < KS; ++i)
        mmaShared(dp, kMajor<kRows>(Vs, row, i),
                  kMajor<kGradientQueries>(dOs, 0, i), i > 0);
      commit();
      if constexpr (overlap) {
        issueGradients();
        wait<1>(); // S^T and dP^T; dV's and dK's products may still run
      } else {
        wait<0>();
      }
      fenceOperands(x);
      fenceOperands(dp);

      if (s.allVisible(b, t0, kGradientQueries, sk - g, 16))
        tensorcore::keyGradientTerms<false>(x, dp, pdp, alpha, Ls, Ds, s, b, t0,
                                            sk, c);
      else
        tensorcore::keyGradientTerms<true>(x, dp, pdp, alpha, Ls, Ds, s, b, t0,
                                           sk, c);

      if constexpr (overlap)
        wait<0>();
      fenceGradients();
      packA(pa, x);
      packA(sa, dp);
      lastQ = Qs;
      if constexpr (!overlap)
        applyGradients();
    }
    if (alphaPartials)
      blockSum<kThreads / 32>(
          alphaPartials[(int64_t(b) * s.H + h) * tiles + tile], pdp, warpSums);
  }
  if (overlap && lastQ)
    applyGradients();
  waitCopies<0>(); // K's and V's, where no query tile was loaded

  tensorcore::storeKeyGradients(dk, dv, dK, dV, dout, coefficients, s, b, kv,
                                sk, c);
}

/// The dq kernel's shared memory: the block's Q and dO, then three stages
/// of a key tile and its values.
template <int DP> struct QueryGradientLayout {
  using Own = SwizzledTile<kRows, DP>;
  using Tile = SwizzledTile<kGradientKeys, DP>;
  static constexpr int stageElements = 2 * Tile::elements;
  static constexpr size_t bytes =
      1024 + (2 * Own::elements + 3 * stageElements) * sizeof(uint16_t);
  static_assert(bytes <= 227 * 1024);
};

// dq [B, T, H, D]; a block per (b, h, kRows queries), a warpgroup owning 64
// of them, meeting the key tiles: S = Q K^T, dP = dO V^T, dQ += dS K.
template <int DP>
__global__ void __launch_bounds__(kThreads, 1) queryGradientsKernel(
    uint16_t *__restrict__ dq, const uint16_t *__restrict__ dout,
    const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
    const uint16_t *__restrict__ v, const float *__restrict__ lse,
    const float *__restrict__ terms, const float *__restrict__ coefficients,
    Shape s, int tiles, bool vectors) {
  using Layout = QueryGradientLayout<DP>;
  using Own = typename Layout::Own;
  using Tile = typename Layout::Tile;
  constexpr int KS = DP / 16, NO = DP / 8, NS = kGradientKeys / 8;
  LAP_DYNAMIC_SHARED(uint4, shared); // Layout::bytes
  uint16_t *Qs = aligned1024(shared), *dOs = Qs + Own::elements;
  uint16_t *stages = dOs + Own::elements;
  const int group = threadIdx.x / 128, warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;

  const auto [b, h, kv, t0, nq] = s.queryTile(tiles, kRows);
  const int row = 64 * group;              // the warpgroup's first query
  const int tq = t0 + row + 16 * warp + g; // the lane's queries: tq, tq + 8
  const int64_t ldq = int64_t(s.H) * s.D;

  // Q's and dO's copies are the oldest group: the wait for the first key
  // tile covers them.
  Own::load(Qs, q + s.qRow(b, t0, h), ldq, nq, s.D, vectors);
  Own::load(dOs, dout + s.qRow(b, t0, h), ldq, nq, s.D, vectors);
  commitCopies();
  const int keyEnd = s.keyEnd(b, t0, nq);
  // keyEnd itself when the padding leaves the tile no key: no key tile.
  const int first = min(s.firstKeyTile(b, t0, kGradientKeys), keyEnd);
  auto keys = keyTiles<Tile>(stages, first, keyEnd, k, v, b, kv, s, vectors);

  float lse2[2], rowD[2];
  tensorcore::rowStatistics(lse2, rowD, lse, terms, s, b, h, tq);
  const float alpha = coefficients[h];
  float dQ[NO][4];
  tensorcore::zero(dQ);

  // Tile i's dQ += dS K is issued with tile i + 1's products and runs
  // while the warpgroup computes their terms, as in the forward (tile 0's
  // with dS = 0 on its own K).
  uint32_t a[NS / 2][4] = {}; // the last tile's dS as A fragments (bf16)
  const uint16_t *lastK = nullptr;
  for (int s0 = first, i = 0; s0 < keyEnd; s0 += kGradientKeys, ++i) {
    const uint16_t *Ks = keys.next(i), *Vs = Ks + Tile::elements;
    if (i == 0)
      lastK = Ks;
    float x[NS][4], dp[NS][4];
    fenceOperands(dQ);
    fenceOperands(a);
    fence();
#pragma unroll
    for (int j = 0; j < KS; ++j)
      mmaShared(x, kMajor<kRows>(Qs, row, j), kMajor<kGradientKeys>(Ks, 0, j),
                j > 0);
#pragma unroll
    for (int j = 0; j < KS; ++j)
      mmaShared(dp, kMajor<kRows>(dOs, row, j), kMajor<kGradientKeys>(Vs, 0, j),
                j > 0);
    commit();
    issueProducts<kGradientKeys>(dQ, a, lastK);
    commit();
    wait<1>(); // S and dP; dQ's product may still run
    fenceOperands(x);
    fenceOperands(dp);

    if (s.allVisible(b, tq - g, 16, s0, kGradientKeys))
      tensorcore::queryGradientTerms<false>(x, dp, lse2, rowD, alpha, s, b, tq,
                                            s0, c);
    else
      tensorcore::queryGradientTerms<true>(x, dp, lse2, rowD, alpha, s, b, tq,
                                           s0, c);

    wait<0>();
    fenceOperands(dQ);
    fenceOperands(a);
    packA(a, x);
    lastK = Ks;
  }
  if (lastK) // dQ += dS K
    applyProducts<kGradientKeys>(dQ, a, lastK);
  waitCopies<0>(); // Q's and dO's, where no key tile was loaded

  tensorcore::storeQueryGradients(dq, dQ, s, b, h, tq, c);
}

//===----------------------------------------------------------------------===//
// Launch plans
//===----------------------------------------------------------------------===//

// What a call launches, through device.launch(kernel, blocks, threads,
// sharedBytes, what, args...) (Launcher.h).

template <typename Launcher>
void launchForward(const Launcher &device, uint16_t *o, float *lse,
                   const uint16_t *q, const uint16_t *k, const uint16_t *v,
                   const float *coefficients, const Shape &s) {
  const int64_t tiles = tensorcore::tilesOf(s.T, kRows);
  const bool narrow = s.D <= 64;
  device.launch(narrow ? forwardKernel<64> : forwardKernel<128>,
                int64_t(s.B) * s.H * tiles, kForwardThreads,
                narrow ? ForwardLayout<64>::bytes : ForwardLayout<128>::bytes,
                "attention_forward (wgmma)", o, lse, q, k, v, coefficients, s,
                int(tiles), tensorcore::vectorRows(s, {q, k, v}));
}

template <typename Launcher>
void launchGradients(const Launcher &device, uint16_t *dq, uint16_t *dk,
                     uint16_t *dv, float *alphaPartials, const uint16_t *dout,
                     const uint16_t *q, const uint16_t *k, const uint16_t *v,
                     const float *lse, const float *terms,
                     const float *coefficients, const Shape &s) {
  const int64_t keyTiles = tensorcore::tilesOf(s.S, kRows);
  const int64_t queryTiles = tensorcore::tilesOf(s.T, kRows);
  const bool vectors = tensorcore::vectorRows(s, {dout, q, k, v});
  const bool narrow = s.D <= 64;
  device.launch(
      narrow ? keyGradientsKernel<64> : keyGradientsKernel<128>,
      int64_t(s.B) * s.KV * keyTiles, kThreads,
      narrow ? KeyGradientLayout<64>::bytes : KeyGradientLayout<128>::bytes,
      "attention_backward (dk, dv on wgmma)", dk, dv, alphaPartials, dout, q, k,
      v, lse, terms, coefficients, s, int(keyTiles), vectors);
  device.launch(narrow ? queryGradientsKernel<64> : queryGradientsKernel<128>,
                int64_t(s.B) * s.H * queryTiles, kThreads,
                narrow ? QueryGradientLayout<64>::bytes
                       : QueryGradientLayout<128>::bytes,
                "attention_backward (dq on wgmma)", dq, dout, q, k, v, lse,
                terms, coefficients, s, int(queryTiles), vectors);
}

} // namespace
} // namespace lap::cuda::hopper

#endif // LAP_RUNTIME_KERNELS_CUDA_ATTENTIONHOPPER_H
