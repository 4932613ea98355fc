//===- AttentionTensorCores.h - bf16 attention on tensor cores --*- CUDA -*-===//
//
// attention_forward_bf16 and attention_backward_bf16 for head widths up to
// 128: the semantics and outputs of AttentionCudaCores.h's kernels (O =
// alpha P V + beta V_t per head, the logsumexp saved in natural log; the
// backward deterministic, from the row terms D_i that those kernels compute
// first), with every product on the tensor cores (mma.sync m16n8k16: bf16
// operands, fp32 sums), in the form of FlashAttention-2:
//  - a block owns 64 rows of one head (queries; keys in the dk, dv kernel),
//    a warp 16 of them, while tiles of the other side pass through shared
//    memory;
//  - a warp's products (scores, dP) stay in its accumulator registers,
//    where the softmax and dS are computed, and are repacked in registers
//    as the A operand of the next product (P V, dS K, P^T dO, dS^T Q).
//    That repacking rounds P and dS to bf16, as FlashAttention does: the
//    one rounding beyond the fp32 kernels'; the softmax's sums stay fp32;
//  - the tiles a block meets in turn (keys and values; queries and dO in
//    the dk, dv kernel) are copied asynchronously (cp.async) into two
//    stages: the next one is in flight while the block works on this one
//    (TilePipeline).
// The widths are padded with zeros to DP = 64 or 128, which add nothing.
//
// The kernels are written in TensorCores.h's primitives, so that the
// emulator runs this source on the CPU too; Attention.h chooses them.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ATTENTIONTENSORCORES_H
#define LAP_RUNTIME_KERNELS_CUDA_ATTENTIONTENSORCORES_H

#include "runtime/kernels/cuda/AttentionShape.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/TensorCores.h"

#include <cstdint>
#include <initializer_list>

namespace lap::cuda::tensorcore {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

constexpr int kMaxD = 128; // heads are padded to DP = 64 or 128
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
// A warp owns 16 rows of its block's tile (queries, or keys in the dk/dv
// kernel), while tiles of the other side pass through shared memory.
constexpr int kRows = 16 * kWarps;
constexpr int kForwardKeys = 64;     // keys per tile of the forward
constexpr int kBackwardQueries = 32; // queries per tile of dk, dv
constexpr int kBackwardKeys = 32;    // keys per tile of dq
static_assert(kRows <= kForwardKeys, "Q is staged in the K tile");

// Tiles in shared memory hold DP-wide bf16 rows (the head width padded with
// zeros) with a stride of LD = DP + 8 elements: 4 banks past a multiple of
// 32, which puts the eight rows that a fragment load or an ldmatrix phase
// reads on distinct banks, and keeps rows 16-byte aligned.

/// dst [rows][LD] = the first n rows of src (row stride ld, D elements),
/// zero elsewhere. Eight elements per thread and step: one 16-byte move
/// where rows allow it (`vectors`: D % 8 == 0 and 16-byte aligned bases),
/// which with Async is an asynchronous copy (the caller commits and waits
/// for it: TensorCores.h); otherwise stores of what the thread read.
template <int DP, bool Async = false>
__device__ void loadTile(uint16_t *dst, const uint16_t *src, int64_t ld, int n,
                         int rows, int D, bool vectors) {
  constexpr int LD = DP + 8, chunks = DP / 8;
  for (int i = threadIdx.x; i < rows * chunks; i += kThreads) {
    const int row = i / chunks, d = i % chunks * 8;
    const bool inside = row < n && d < D;
    const uint16_t *from = inside ? src + row * ld + d : src;
    if (Async && vectors) {
      copyAsync16(dst + row * LD + d, from, inside);
      continue;
    }
    uint4 x = make_uint4(0, 0, 0, 0);
    if (inside) {
      if (vectors) {
        x = load16(from);
      } else {
        uint16_t e[8];
        for (int j = 0; j < 8; ++j)
          e[j] = d + j < D ? from[j] : 0;
        memcpy(&x, e, sizeof x);
      }
    }
    store16(dst + row * LD + d, x);
  }
}

/// The tiles a block meets in turn, through Stages stages of `stages`
/// (each StageElements bf16 elements): while the block works on tile i,
/// tile i + 1's copies are in flight, and with three stages tile i - 1
/// stays where it was. load(i, stage) starts tile i's copies into `stage`
/// (it may also store into it); the pipeline commits them. Constructing
/// the pipeline starts tile 0 into stage 0; until the first next(), the
/// block may use stage 1 for itself. landed() runs in each thread once its
/// copies of a tile have landed, before the barrier that hands the tile to
/// the block (Hopper's kernels fence there for wgmma).
struct NothingToDo {
  __device__ void operator()() const {}
};
template <int StageElements, typename Load, typename Landed = NothingToDo,
          int Stages = 2>
class TilePipeline {
public:
  __device__ TilePipeline(uint16_t *stages, int count, Load load,
                          Landed landed = {})
      : stages(stages), count(count), load(load), landed(landed) {
    if (count > 0)
      start(0, 0);
  }

  /// Tile i's stage (i % Stages), once every thread's copies of it have
  /// landed; tile i + 1's copies start first, once every thread is done
  /// with tile i + 1 - Stages. Tiles are taken in order: 0, 1, 2, ... (the
  /// stage is counted, not computed from i: ptxas then gives the forward
  /// kernel at head width 128 165 registers instead of 191, three blocks
  /// per SM on sm_90).
  __device__ const uint16_t *next(int i) {
    const int following = stage + 1 < Stages ? stage + 1 : 0;
    if (i + 1 < count) {
      __syncthreads(); // the following stage's last readers are done
      start(i + 1, following);
      waitCopies<1>();
    } else {
      waitCopies<0>();
    }
    landed();
    __syncthreads();
    const uint16_t *tile = stages + stage * StageElements;
    stage = following;
    return tile;
  }

private:
  __device__ void start(int i, int into) {
    load(i, stages + into * StageElements);
    commitCopies();
  }

  uint16_t *stages;
  int count;
  Load load;
  Landed landed;
  int stage = 0; // tile i's: i % Stages
};

/// The TilePipeline of `load` and `landed` (whose types are deduced).
template <int StageElements, int Stages = 2, typename Load,
          typename Landed = NothingToDo>
__device__ TilePipeline<StageElements, Load, Landed, Stages>
pipeline(uint16_t *stages, int count, Load load, Landed landed = {}) {
  return {stages, count, load, landed};
}

/// A stage of K and V tiles [Keys][LD] (keys, then values).
template <int DP, int Keys> struct KeyStage {
  static constexpr int tile = Keys * (DP + 8);
  static constexpr int elements = 2 * tile;
  static constexpr size_t pipelineBytes = 2 * elements * sizeof(uint16_t);
};

/// Starts copying keys and values s0 .. s0 + Keys - 1 of a kv head (k and v
/// at its key 0; zero past S) into a KeyStage.
template <int DP, int Keys>
__device__ void loadKeys(uint16_t *stage, const uint16_t *k, const uint16_t *v,
                         const Shape &s, int s0, bool vectors) {
  const int64_t ldk = int64_t(s.KV) * s.D;
  const int nk = min(Keys, s.S - s0);
  loadTile<DP, true>(stage, k + s0 * ldk, ldk, nk, Keys, s.D, vectors);
  loadTile<DP, true>(stage + KeyStage<DP, Keys>::tile, v + s0 * ldk, ldk, nk,
                     Keys, s.D, vectors);
}

/// The maximum and sum over the four lanes of a quad (4g .. 4g + 3), which
/// together hold a row of a C fragment; every lane gets the result.
__device__ inline float quadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/// A's fragment for k step j: rows 0..15 of `rows` (stride LD), columns
/// 16j .. 16j + 15.
template <int LD>
__device__ void loadA(uint32_t (&a)[4], const uint16_t *rows, int j, int g,
                      int c) {
  const uint16_t *at = rows + g * LD + 16 * j + 2 * c;
  a[0] = word(at);
  a[1] = word(at + 8 * LD);
  a[2] = word(at + 8);
  a[3] = word(at + 8 * LD + 8);
}

/// c += A B^T for the 8 rows of `rows` (stride LD) as B^T, at k step j: the
/// products of A's rows with rows kept as they lie (K, or any row tile).
template <int LD>
__device__ void mmaRows(float (&c4)[4], const uint32_t (&a)[4],
                        const uint16_t *rows, int j, int g, int c) {
  const uint16_t *at = rows + g * LD + 16 * j + 2 * c;
  mma(c4, a, word(at), word(at + 8));
}

/// acc += W M: W [16][16 KK] in C fragments (w[2kk], w[2kk + 1] span keys
/// 16kk .. 16kk + 15), rounded to bf16 as A; M [16 KK][8 NO] the rows of
/// `rows` (stride LD), read transposed by ldmatrix as B, matrix j of a
/// step holding rows +8 (j odd) and columns +8 (j >= 2).
template <int KK, int NO, int LD>
__device__ void accumulate(float (&acc)[NO][4], const float (&w)[2 * KK][4],
                           const uint16_t *rows, int lane) {
  const uint16_t *at =
      rows + (lane / 8 % 2 * 8 + lane % 8) * LD + lane / 16 * 8;
#pragma unroll
  for (int kk = 0; kk < KK; ++kk) {
    const uint32_t a[4] = {
        packBf16(w[2 * kk][0], w[2 * kk][1]),
        packBf16(w[2 * kk][2], w[2 * kk][3]),
        packBf16(w[2 * kk + 1][0], w[2 * kk + 1][1]),
        packBf16(w[2 * kk + 1][2], w[2 * kk + 1][3]),
    };
#pragma unroll
    for (int j = 0; j < NO / 2; ++j) {
      uint32_t b[4];
      loadTransposed(b, at + 16 * kk * LD + 16 * j);
      mma(acc[2 * j], a, b[0], b[1]);
      mma(acc[2 * j + 1], a, b[2], b[3]);
    }
  }
}

template <int N> __device__ void zero(float (&x)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    x[i][0] = x[i][1] = x[i][2] = x[i][3] = 0.0f;
}

/// Stores row r (0: g, 1: g + 8) of acc's C fragments, times a, into `row`
/// (D elements).
template <int NO>
__device__ void storeRow(uint16_t *row, const float (&acc)[NO][4], int r,
                         float a, int c, int D) {
#pragma unroll
  for (int j = 0; j < NO; ++j)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int d = 8 * j + 2 * c + i;
      if (d < D)
        store(row[d], a * acc[j][2 * r + i]);
    }
}

/// A key tile's step of the online softmax for a lane's rows of C
/// fragments: x[n][2r + i] is row r's (query tq + 8r) score of key s0 + 8n
/// + 2c + i, replaced by its unnormalised P (base 2). m holds each row's
/// running maximum, l the lane's part of its sum; corr[r], what row r's
/// P V so far is to be scaled by for the new maximum. Masked: some query
/// of the warp does not see some key of the tile (Shape::allVisible).
template <bool Masked, int NS>
__device__ inline void
softmaxScores(float (&x)[NS][4], float (&m)[2], float (&l)[2], float (&corr)[2],
              const Shape &s, int b, int tq, int s0, int c) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int t = tq + 8 * r;
    float mx = m[r];
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float &e = x[n][2 * r + i];
        e = !Masked || s.visible(b, t, s0 + 8 * n + 2 * c + i) ? s.c2 * e
                                                               : -INFINITY;
        mx = fmaxf(mx, e);
      }
    mx = quadMax(mx);
    // A row that has seen no key yet keeps -inf and gets P = 0.
    const float ref = mx == -INFINITY ? 0.0f : mx;
    corr[r] = exp2f(m[r] - ref);
    m[r] = mx;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float &e = x[n][2 * r + i];
        e = exp2f(e - ref);
        sum += e;
      }
    l[r] = l[r] * corr[r] + sum;
  }
}

/// Scales rows g and g + 8 of C fragments by corr[0] and corr[1].
template <int NO>
__device__ inline void rescale(float (&acc)[NO][4], const float (&corr)[2]) {
#pragma unroll
  for (int j = 0; j < NO; ++j) {
    acc[j][0] *= corr[0];
    acc[j][1] *= corr[0];
    acc[j][2] *= corr[1];
    acc[j][3] *= corr[1];
  }
}

/// The forward's epilogue for a lane's rows (queries tq, tq + 8) of head h:
/// O = alpha P V / l + beta V_t, V_t at the query's own position, from
/// acc's unnormalised P V; the logsumexp in natural log.
template <int NO>
__device__ inline void
storeForward(uint16_t *o, float *lse, const float (&acc)[NO][4],
             const float (&m)[2], const float (&l)[2], const uint16_t *v,
             const float *coefficients, const Shape &s, int b, int h, int kv,
             int tq, int c) {
  const float alpha = coefficients[h], beta = coefficients[s.H + h];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float sum = quadSum(l[r]);
    const int t = tq + 8 * r;
    if (t >= s.T)
      continue;
    const float a = sum > 0.0f ? alpha / sum : 0.0f;
    uint16_t *out = o + s.qRow(b, t, h);
    if (beta != 0.0f && t < s.S) {
      const uint16_t *vt = v + s.kRow(b, t, kv);
#pragma unroll
      for (int j = 0; j < NO; ++j)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int d = 8 * j + 2 * c + i;
          if (d < s.D)
            store(out[d], a * acc[j][2 * r + i] + beta * load(vt[d]));
        }
    } else {
      storeRow(out, acc, r, a, c, s.D);
    }
    if (c == 0)
      lse[s.row(b, h, t)] = sum > 0.0f ? (m[r] + log2f(sum)) * kLn2 : -INFINITY;
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

// o [B, T, H, D], lse [B, H, T]; a block per (b, h, kRows queries), the
// tiles of a head adjacent (its K and V stay in L2), costliest first.
template <int DP>
__global__ void __launch_bounds__(kThreads)
    forwardKernel(uint16_t *__restrict__ o, float *__restrict__ lse,
                  const uint16_t *__restrict__ q,
                  const uint16_t *__restrict__ k,
                  const uint16_t *__restrict__ v,
                  const float *__restrict__ coefficients, Shape s, int tiles,
                  bool vectors) {
  constexpr int LD = DP + 8, KS = DP / 16, NO = DP / 8;
  constexpr int NS = kForwardKeys / 8; // 8-key column tiles of the scores
  using Stage = KeyStage<DP, kForwardKeys>;
  LAP_DYNAMIC_SHARED(uint4, shared); // two Stages
  uint16_t *stages = reinterpret_cast<uint16_t *>(shared);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;

  const auto [b, h, kv, t0, nq] = s.queryTile(tiles, kRows);
  const int tq = t0 + 16 * warp + g; // the query of row g; of g + 8: tq + 8
  const int64_t ldq = int64_t(s.H) * s.D;

  // Per row of the lane (g, g + 8): the running max (base 2) and the
  // lane's part of the row sum; the unnormalised P V of its columns.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float acc[NO][4];
  zero(acc);

  // Causal: keys past the tile's last query are masked for all of it, and
  // under a window those before its first query's window.
  const int keyEnd = s.keyEnd(b, t0, nq);
  // keyEnd itself when the padding leaves the tile no key: no key tile.
  const int first = min(s.firstKeyTile(b, t0, kForwardKeys), keyEnd);
  const int64_t head = s.kRow(b, 0, kv); // key 0 of the kv head
  auto keys = pipeline<Stage::elements>(
      stages, (keyEnd - first + kForwardKeys - 1) / kForwardKeys,
      [&](int i, uint16_t *stage) {
        loadKeys<DP, kForwardKeys>(stage, k + head, v + head, s,
                                   first + i * kForwardKeys, vectors);
      });

  // Meanwhile Q passes through stage 1's K tile into the warp's A
  // fragments.
  uint16_t *Qs = stages + Stage::elements;
  loadTile<DP>(Qs, q + s.qRow(b, t0, h), ldq, nq, kRows, s.D, vectors);
  __syncthreads();
  uint32_t qf[KS][4];
#pragma unroll
  for (int j = 0; j < KS; ++j)
    loadA<LD>(qf[j], Qs + 16 * warp * LD, j, g, c);

  for (int s0 = first; s0 < keyEnd; s0 += kForwardKeys) {
    const uint16_t *Ks = keys.next((s0 - first) / kForwardKeys),
                   *Vs = Ks + Stage::tile;
    float x[NS][4];
    zero(x);
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int j = 0; j < KS; ++j)
        mmaRows<LD>(x[n], qf[j], Ks + 8 * n * LD, j, g, c);

    // Masked on every tile: an unmasked copy of the step would take 165
    // registers to 186, three blocks per SM to two.
    float corr[2];
    softmaxScores<true>(x, m, l, corr, s, b, tq, s0, c);
    rescale(acc, corr);
    accumulate<NS / 2, NO, LD>(acc, x, Vs, lane); // acc += P V
  }

  storeForward(o, lse, acc, m, l, v, coefficients, s, b, h, kv, tq, c);
}

//===----------------------------------------------------------------------===//
// Backward (the row terms D_i and the coefficients' sums: AttentionCudaCores.h)
//===----------------------------------------------------------------------===//

/// The dk, dv kernels' terms on a lane's C fragments of S^T and dP^T:
/// x[n][e] is key sk + 8 (e / 2) and query t0 + j, j = 8n + 2c + e % 2,
/// whose lse (base 2) is Ls[j] and row term Ds[j]. x becomes alpha P^T,
/// dp becomes dS^T; pdp gathers P dP. Masked as in softmaxScores.
template <bool Masked, int NS>
__device__ inline void
keyGradientTerms(float (&x)[NS][4], float (&dp)[NS][4], float &pdp, float alpha,
                 const float *Ls, const float *Ds, const Shape &s, int b,
                 int t0, int sk, int c) {
#pragma unroll
  for (int n = 0; n < NS; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = 8 * n + 2 * c + e % 2;
      const bool seen = !Masked || s.visible(b, t0 + j, sk + 8 * (e / 2));
      const float p = seen ? exp2f(s.c2 * x[n][e] - Ls[j]) : 0.0f;
      const float d = seen ? dp[n][e] : 0.0f;
      pdp += p * d;
      x[n][e] = alpha * p;
      dp[n][e] = s.scale * p * (alpha * d - Ds[j]);
    }
}

/// dk and dv for a lane's rows (keys sk, sk + 8) of the C fragments dK,
/// dV; dv with its beta terms.
template <int NO>
__device__ inline void
storeKeyGradients(uint16_t *dk, uint16_t *dv, const float (&dK)[NO][4],
                  const float (&dV)[NO][4], const uint16_t *dout,
                  const float *coefficients, const Shape &s, int b, int kv,
                  int sk, int c) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = sk + 8 * r;
    if (key >= s.S)
      continue;
    storeRow(dk + s.kRow(b, key, kv), dK, r, 1.0f, c, s.D);
    uint16_t *out = dv + s.kRow(b, key, kv);
#pragma unroll
    for (int j = 0; j < NO; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int d = 8 * j + 2 * c + i;
        if (d >= s.D)
          continue;
        float y = dV[j][2 * r + i];
        if (key < s.T)
          y += s.betaTerms(coefficients, dout, b, key, kv, d);
        store(out[d], y);
      }
  }
}

/// The lse (base 2) and row term of a lane's rows (queries tq, tq + 8) of
/// head h; zero past T.
__device__ inline void rowStatistics(float (&lse2)[2], float (&rowD)[2],
                                     const float *lse, const float *terms,
                                     const Shape &s, int b, int h, int tq) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const bool real = tq + 8 * r < s.T;
    lse2[r] = real ? lse[s.row(b, h, tq + 8 * r)] * kLog2e : 0.0f;
    rowD[r] = real ? terms[s.row(b, h, tq + 8 * r)] : 0.0f;
  }
}

/// The dq kernels' terms on a lane's C fragments of S and dP: x[n][e] is
/// query tq + 8 (e / 2) and key s0 + 8n + 2c + e % 2; it becomes dS.
/// Masked as in softmaxScores.
template <bool Masked, int NS>
__device__ inline void
queryGradientTerms(float (&x)[NS][4], const float (&dp)[NS][4],
                   const float (&lse2)[2], const float (&rowD)[2], float alpha,
                   const Shape &s, int b, int tq, int s0, int c) {
#pragma unroll
  for (int n = 0; n < NS; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e / 2;
      const bool seen =
          !Masked || s.visible(b, tq + 8 * r, s0 + 8 * n + 2 * c + e % 2);
      const float p = seen ? exp2f(s.c2 * x[n][e] - lse2[r]) : 0.0f;
      const float d = seen ? dp[n][e] : 0.0f;
      x[n][e] = s.scale * p * (alpha * d - rowD[r]);
    }
}

/// dq for a lane's rows (queries tq, tq + 8) of head h.
template <int NO>
__device__ inline void
storeQueryGradients(uint16_t *dq, const float (&dQ)[NO][4], const Shape &s,
                    int b, int h, int tq, int c) {
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (tq + 8 * r < s.T)
      storeRow(dq + s.qRow(b, tq + 8 * r, h), dQ, r, 1.0f, c, s.D);
}

/// The query tiles of Rows queries a dk, dv block of nk keys from s0
/// meets: those of each head of its kv head's group in turn, from tStart
/// (causal: the tile that holds s0; queries before it see none of its
/// keys) to the query end (under a window or in documents: queries after
/// it see none),
/// perHead a head. Tile i is head kv G + i / perHead's tile i % perHead;
/// a head's tile j starts at query t0(j).
template <int Rows> struct GroupQueryTiles {
  __device__ GroupQueryTiles(const Shape &s, int b, int s0, int nk)
      : tStart(s.causal ? s0 / Rows * Rows : 0),
        perHead(s.queryEnd(b, s0, nk) > tStart
                    ? (s.queryEnd(b, s0, nk) - tStart + Rows - 1) / Rows
                    : 0) {}
  __device__ int t0(int j) const { return tStart + j * Rows; }
  int tStart, perHead;
};

/// Ls[j] = the lse (base 2) and Ls[Rows + j] = the row term D_i of query
/// t0 + j of head h, for j < Rows, zero past the nq real ones; every thread
/// of a block of Threads calls it.
template <int Rows, int Threads>
__device__ inline void loadRowStatistics(float *Ls, const float *lse,
                                         const float *terms, const Shape &s,
                                         int b, int h, int t0, int nq) {
  float *Ds = Ls + Rows;
  for (int j = threadIdx.x; j < Rows; j += Threads) {
    Ls[j] = j < nq ? lse[s.row(b, h, t0 + j)] * kLog2e : 0.0f;
    Ds[j] = j < nq ? terms[s.row(b, h, t0 + j)] : 0.0f;
  }
}

/// A stage of the dk, dv kernel's query tiles: Q and dO [kBackwardQueries]
/// [LD] (bf16), then lse * log2 e and D_i [kBackwardQueries] (fp32).
template <int DP> struct QueryStage {
  static constexpr int tile = kBackwardQueries * (DP + 8);
  static constexpr int elements = 2 * tile + 2 * kBackwardQueries * 2;
  /// The dk, dv kernel's shared memory: K, V [kRows][LD], then two stages.
  static constexpr size_t kernelBytes =
      (2 * kRows * (DP + 8) + 2 * elements) * sizeof(uint16_t);
};

// dk, dv [B, S, KV, D]; a block per (b, kv head, kRows keys), meeting the
// query tiles of the G heads of its kv head in turn. The products are
// transposed (keys by queries), so that a warp's 16 keys are the rows of
// its fragments: S^T = K Q^T, dP^T = V dO^T, dV += (alpha P)^T dO, dK +=
// dS^T Q. With alphaPartials [B, H, tiles]: each head's sum of P dP over
// the block.
template <int DP>
__global__ void __launch_bounds__(kThreads) keyGradientsKernel(
    uint16_t *__restrict__ dk, uint16_t *__restrict__ dv,
    float *__restrict__ alphaPartials, const uint16_t *__restrict__ dout,
    const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
    const uint16_t *__restrict__ v, const float *__restrict__ lse,
    const float *__restrict__ terms, const float *__restrict__ coefficients,
    Shape s, int tiles, bool vectors) {
  constexpr int LD = DP + 8, KS = DP / 16, NO = DP / 8;
  constexpr int NS = kBackwardQueries / 8; // 8-query column tiles
  using Stage = QueryStage<DP>;
  __shared__ float warpSums[kWarps];
  LAP_DYNAMIC_SHARED(uint4, shared); // Stage::kernelBytes
  uint16_t *Ks = reinterpret_cast<uint16_t *>(shared);
  uint16_t *Vs = Ks + kRows * LD;
  uint16_t *stages = Vs + kRows * LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;

  // Under a causal mask the first key tiles meet the most queries: they
  // come first.
  const int bg = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const int s0 = tile * kRows;
  const int b = bg / s.KV, kv = bg % s.KV;
  const int nk = min(kRows, s.S - s0);
  const int sk = s0 + 16 * warp + g; // the key of row g; of g + 8: sk + 8
  const int64_t ldq = int64_t(s.H) * s.D, ldk = int64_t(s.KV) * s.D;
  const uint16_t *Kw = Ks + 16 * warp * LD, *Vw = Vs + 16 * warp * LD;

  const GroupQueryTiles<kBackwardQueries> tiled(s, b, s0, nk);
  const int perHead = tiled.perHead;
  auto queries = pipeline<Stage::elements>(
      stages, s.G * perHead, [&](int i, uint16_t *stage) {
        const int h = kv * s.G + i / perHead, t0 = tiled.t0(i % perHead);
        const int nq = min(kBackwardQueries, s.T - t0);
        loadTile<DP, true>(stage, q + s.qRow(b, t0, h), ldq, nq,
                           kBackwardQueries, s.D, vectors);
        loadTile<DP, true>(stage + Stage::tile, dout + s.qRow(b, t0, h), ldq,
                           nq, kBackwardQueries, s.D, vectors);
        loadRowStatistics<kBackwardQueries, kThreads>(
            reinterpret_cast<float *>(stage + 2 * Stage::tile), lse, terms, s,
            b, h, t0, nq);
      });
  loadTile<DP>(Ks, k + s.kRow(b, s0, kv), ldk, nk, kRows, s.D, vectors);
  loadTile<DP>(Vs, v + s.kRow(b, s0, kv), ldk, nk, kRows, s.D, vectors);
  float dK[NO][4], dV[NO][4];
  zero(dK);
  zero(dV);

  for (int hg = 0; hg < s.G; ++hg) {
    const int h = kv * s.G + hg;
    const float alpha = coefficients[h];
    float pdp = 0.0f; // sum of P dP over the lane's entries
    for (int j = 0; j < perHead; ++j) {
      const int t0 = tiled.t0(j);
      const uint16_t *Qs = queries.next(hg * perHead + j);
      const uint16_t *dOs = Qs + Stage::tile;
      const float *Ls = reinterpret_cast<const float *>(Qs + 2 * Stage::tile);
      const float *Ds = Ls + kBackwardQueries;
      float x[NS][4], dp[NS][4];
      zero(x);
      zero(dp);
#pragma unroll
      for (int j = 0; j < KS; ++j) {
        uint32_t a[4];
        loadA<LD>(a, Kw, j, g, c);
#pragma unroll
        for (int n = 0; n < NS; ++n)
          mmaRows<LD>(x[n], a, Qs + 8 * n * LD, j, g, c);
        loadA<LD>(a, Vw, j, g, c);
#pragma unroll
        for (int n = 0; n < NS; ++n)
          mmaRows<LD>(dp[n], a, dOs + 8 * n * LD, j, g, c);
      }
      if (s.allVisible(b, t0, kBackwardQueries, sk - g, 16))
        keyGradientTerms<false>(x, dp, pdp, alpha, Ls, Ds, s, b, t0, sk, c);
      else
        keyGradientTerms<true>(x, dp, pdp, alpha, Ls, Ds, s, b, t0, sk, c);
      accumulate<NS / 2, NO, LD>(dV, x, dOs, lane);
      accumulate<NS / 2, NO, LD>(dK, dp, Qs, lane);
    }
    if (alphaPartials)
      blockSum<kWarps>(alphaPartials[(int64_t(b) * s.H + h) * tiles + tile],
                       pdp, warpSums);
  }

  storeKeyGradients(dk, dv, dK, dV, dout, coefficients, s, b, kv, sk, c);
}

// dq [B, T, H, D]; a block per (b, h, kRows queries), meeting the key
// tiles: S = Q K^T, dP = dO V^T, dQ += dS K.
template <int DP>
__global__ void __launch_bounds__(kThreads) queryGradientsKernel(
    uint16_t *__restrict__ dq, const uint16_t *__restrict__ dout,
    const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
    const uint16_t *__restrict__ v, const float *__restrict__ lse,
    const float *__restrict__ terms, const float *__restrict__ coefficients,
    Shape s, int tiles, bool vectors) {
  constexpr int LD = DP + 8, KS = DP / 16, NO = DP / 8;
  constexpr int NS = kBackwardKeys / 8; // 8-key column tiles
  static_assert(2 * kBackwardKeys == kRows,
                "Q and dO pass through a stage's K and V");
  using Stage = KeyStage<DP, kBackwardKeys>;
  LAP_DYNAMIC_SHARED(uint4, shared); // two Stages
  uint16_t *stages = reinterpret_cast<uint16_t *>(shared);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;

  const auto [b, h, kv, t0, nq] = s.queryTile(tiles, kRows);
  const int tq = t0 + 16 * warp + g; // the query of row g; of g + 8: tq + 8
  const int64_t ldq = int64_t(s.H) * s.D;

  const int keyEnd = s.keyEnd(b, t0, nq);
  // keyEnd itself when the padding leaves the tile no key: no key tile.
  const int first = min(s.firstKeyTile(b, t0, kBackwardKeys), keyEnd);
  const int64_t head = s.kRow(b, 0, kv); // key 0 of the kv head
  auto keys = pipeline<Stage::elements>(
      stages, (keyEnd - first + kBackwardKeys - 1) / kBackwardKeys,
      [&](int i, uint16_t *stage) {
        loadKeys<DP, kBackwardKeys>(stage, k + head, v + head, s,
                                    first + i * kBackwardKeys, vectors);
      });

  // Meanwhile Q and dO pass through stage 1's K and V tiles into A
  // fragments.
  uint16_t *staging = stages + Stage::elements;
  uint32_t qf[KS][4], of[KS][4];
  loadTile<DP>(staging, q + s.qRow(b, t0, h), ldq, nq, kRows, s.D, vectors);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < KS; ++j)
    loadA<LD>(qf[j], staging + 16 * warp * LD, j, g, c);
  __syncthreads();
  loadTile<DP>(staging, dout + s.qRow(b, t0, h), ldq, nq, kRows, s.D, vectors);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < KS; ++j)
    loadA<LD>(of[j], staging + 16 * warp * LD, j, g, c);

  float lse2[2], rowD[2];
  rowStatistics(lse2, rowD, lse, terms, s, b, h, tq);
  const float alpha = coefficients[h];
  float dQ[NO][4];
  zero(dQ);

  for (int s0 = first; s0 < keyEnd; s0 += kBackwardKeys) {
    const uint16_t *Ks = keys.next((s0 - first) / kBackwardKeys),
                   *Vs = Ks + Stage::tile;
    float x[NS][4], dp[NS][4];
    zero(x);
    zero(dp);
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int j = 0; j < KS; ++j) {
        mmaRows<LD>(x[n], qf[j], Ks + 8 * n * LD, j, g, c);
        mmaRows<LD>(dp[n], of[j], Vs + 8 * n * LD, j, g, c);
      }
    if (s.allVisible(b, tq - g, 16, s0, kBackwardKeys))
      queryGradientTerms<false>(x, dp, lse2, rowD, alpha, s, b, tq, s0, c);
    else
      queryGradientTerms<true>(x, dp, lse2, rowD, alpha, s, b, tq, s0, c);
    accumulate<NS / 2, NO, LD>(dQ, x, Ks, lane); // dQ += dS K
  }

  storeQueryGradients(dq, dQ, s, b, h, tq, c);
}

//===----------------------------------------------------------------------===//
// Launch plans
//===----------------------------------------------------------------------===//

inline int64_t tilesOf(int64_t n, int64_t tile) {
  return (n + tile - 1) / tile;
}

/// Whether every row of these tensors can be read 16 bytes at a time.
inline bool vectorRows(const Shape &s,
                       std::initializer_list<const void *> bases) {
  if (s.D % 8 != 0)
    return false;
  for (const void *p : bases)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return false;
  return true;
}

// What a call launches, through device.launch(kernel, blocks, threads,
// sharedBytes, what, args...) (Launcher.h).

template <typename Launcher>
void launchForward(const Launcher &device, uint16_t *o, float *lse,
                   const uint16_t *q, const uint16_t *k, const uint16_t *v,
                   const float *coefficients, const Shape &s) {
  const int64_t tiles = tilesOf(s.T, kRows);
  const bool narrow = s.D <= 64;
  device.launch(narrow ? forwardKernel<64> : forwardKernel<128>,
                int64_t(s.B) * s.H * tiles, kThreads,
                narrow ? KeyStage<64, kForwardKeys>::pipelineBytes
                       : KeyStage<128, kForwardKeys>::pipelineBytes,
                "attention_forward (tensor cores)", o, lse, q, k, v,
                coefficients, s, int(tiles), vectorRows(s, {q, k, v}));
}

template <typename Launcher>
void launchGradients(const Launcher &device, uint16_t *dq, uint16_t *dk,
                     uint16_t *dv, float *alphaPartials, const uint16_t *dout,
                     const uint16_t *q, const uint16_t *k, const uint16_t *v,
                     const float *lse, const float *terms,
                     const float *coefficients, const Shape &s) {
  const int64_t keyTiles = tilesOf(s.S, kRows);
  const int64_t queryTiles = tilesOf(s.T, kRows);
  const bool vectors = vectorRows(s, {dout, q, k, v});
  const bool narrow = s.D <= 64;
  device.launch(
      narrow ? keyGradientsKernel<64> : keyGradientsKernel<128>,
      int64_t(s.B) * s.KV * keyTiles, kThreads,
      narrow ? QueryStage<64>::kernelBytes : QueryStage<128>::kernelBytes,
      "attention_backward (dk, dv on tensor cores)", dk, dv, alphaPartials,
      dout, q, k, v, lse, terms, coefficients, s, int(keyTiles), vectors);
  device.launch(narrow ? queryGradientsKernel<64> : queryGradientsKernel<128>,
                int64_t(s.B) * s.H * queryTiles, kThreads,
                narrow ? KeyStage<64, kBackwardKeys>::pipelineBytes
                       : KeyStage<128, kBackwardKeys>::pipelineBytes,
                "attention_backward (dq on tensor cores)", dq, dout, q, k, v,
                lse, terms, coefficients, s, int(queryTiles), vectors);
}

} // namespace
} // namespace lap::cuda::tensorcore

#endif // LAP_RUNTIME_KERNELS_CUDA_ATTENTIONTENSORCORES_H
