//===- AttentionCudaCores.h - flash attention on fp32 FMAs -----*- CUDA -*-===//
//
// The CUDA twin of runtime/kernels/cpu/Attention.cpp, whose semantics it
// follows: one launch serves every head of a call, each with its own
// epilogue O = alpha P V + beta V (docs/architecture.md, Head kinds). Flash: a
// block keeps a tile of queries (or keys) in shared memory while tiles of
// the other side stream past, with the softmax kept online, so no T x S
// matrix is stored; backward recomputes P from the saved logsumexp. Scores
// are kept in base 2 (scale * log2 e folded in), as on the CPU. A bf16
// model's tensors (the `_bf16` entry points) are widened as the tiles are
// loaded and each output element rounded once as it is stored; the
// logsumexp, the row terms and the coefficients stay fp32. The products of
// a bf16 model's heads up to 128 wide run on the tensor cores instead
// (AttentionTensorCores.h); the row terms and the coefficients' sums here
// serve both. Attention.h chooses; DeviceCode.h lets the emulator run this
// source too.
//
// Every product is one of two warp-level primitives on shared-memory tiles
// whose rows hold DP floats (the head width D rounded up to a compiled
// width, zero-filled) with a stride of DP + 4, which puts the rows a warp
// reads at once on distinct banks. A warp owns 4R rows of its block's tile;
// lane = 8r + c owns rows r + 4i (i < R):
//  - rowDots: x[i][j] = A_row(r + 4i) . B_row(c + 8j), a 4R x 8C tile of
//    scores as R x C registers per lane;
//  - accumulate: out[i] += W_row(r + 4i) M, each lane owning the columns
//    32m + 4c .. 32m + 4c + 3 of its rows (float4 reads of M).
// Rows a lane-group shares are read as broadcasts. The tiles of P (or dS)
// between the two go through a warp-private shared-memory tile.
//
// Backward is deterministic, without float atomics: the row terms D_i are
// computed first, into scratch; a kernel per key tile accumulates dK and dV
// while the query tiles of every head of its kv group pass; a kernel per
// query tile accumulates dQ while the key tiles pass. The coefficients'
// gradients are per-block partials summed in a fixed order.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ATTENTIONCUDACORES_H
#define LAP_RUNTIME_KERNELS_CUDA_ATTENTIONCUDACORES_H

#include "runtime/kernels/cuda/AttentionShape.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"

#include <cstdint>

namespace lap::cuda::cudacores {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

constexpr int kWarps = 4; // per block of the tiled kernels
constexpr int kThreads = 32 * kWarps;
// The register budget of the tiled kernels: two blocks per SM, up to 255
// registers a thread (without the hint ptxas stops at 128 and spills).
constexpr int kBlocksPerSM = 2;
constexpr int kMaxD = 256;

__device__ inline float4 load4(const float *p) {
  return *reinterpret_cast<const float4 *>(p);
}
__device__ inline float lane4(const float4 &v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}
__device__ inline void fma4(float4 &acc, float a, const float4 &x) {
  acc.x = fmaf(a, x.x, acc.x);
  acc.y = fmaf(a, x.y, acc.y);
  acc.z = fmaf(a, x.z, acc.z);
  acc.w = fmaf(a, x.w, acc.w);
}
__device__ inline void scale4(float4 &v, float a) {
  v.x *= a;
  v.y *= a;
  v.z *= a;
  v.w *= a;
}

/// Reductions over the eight lanes of a row group (8r .. 8r + 7). A
/// butterfly: every lane of the group gets the same value.
__device__ inline float groupMax(float x) {
  for (int o = 1; o < 8; o *= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ inline float groupSum(float x) {
  for (int o = 1; o < 8; o *= 2)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

/// dst [rows][DP + 4] = the first n rows of src (row stride ld, D elements
/// each) as fp32, zero elsewhere: padding adds nothing to the products. A
/// warp reads a row at a time, contiguous in memory.
template <int DP, typename E>
__device__ void loadTile(float *dst, const E *src, int64_t ld, int n, int rows,
                         int D) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = warp; i < rows; i += kWarps)
    for (int d = lane; d < DP; d += 32)
      dst[i * (DP + 4) + d] = i < n && d < D ? load(src[i * ld + d]) : 0.0f;
}

/// x[i][j] = A_row(r + 4i) . B_row(c + 8j) over DP, rows of stride DP + 4.
/// Per step the 4 rows of A read (stride = 4 mod 32 banks) and the 8 of B
/// lie on distinct banks.
template <int DP, int R, int C>
__device__ void rowDots(float (&x)[R][C], const float *A, const float *B, int r,
                        int c) {
  constexpr int LD = DP + 4;
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j)
      x[i][j] = 0.0f;
#pragma unroll 2
  for (int d = 0; d < DP; d += 4) {
    float4 a[R], b[C];
#pragma unroll
    for (int i = 0; i < R; ++i)
      a[i] = load4(A + (r + 4 * i) * LD + d);
#pragma unroll
    for (int j = 0; j < C; ++j)
      b[j] = load4(B + (c + 8 * j) * LD + d);
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int j = 0; j < C; ++j) {
        float s = fmaf(a[i].x, b[j].x, x[i][j]);
        s = fmaf(a[i].y, b[j].y, s);
        s = fmaf(a[i].z, b[j].z, s);
        x[i][j] = fmaf(a[i].w, b[j].w, s);
      }
  }
}

/// out[i][m] += sum over n < N of W[r + 4i][n] M[n][32m + 4c .. + 3]: a
/// warp's 4R rows of W (stride N + 4) times M [N][DP] (stride DP + 4). The
/// eight lanes c read 32 consecutive floats of M, the four groups r the
/// same ones.
template <int DP, int R, int N>
__device__ void accumulate(float4 (&out)[R][DP / 32], const float *W,
                           const float *M, int r, int c) {
#pragma unroll 2
  for (int n = 0; n < N; n += 4) {
    float4 w[R];
#pragma unroll
    for (int i = 0; i < R; ++i)
      w[i] = load4(W + (r + 4 * i) * (N + 4) + n);
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int m = 0; m < DP / 32; ++m) {
        const float4 x = load4(M + (n + q) * (DP + 4) + 32 * m + 4 * c);
#pragma unroll
        for (int i = 0; i < R; ++i)
          fma4(out[i][m], lane4(w[i], q), x);
      }
  }
}

/// Writes a lane's columns of row `row` (D elements) from acc.
template <int DP, typename E>
__device__ void storeRow(E *row, const float4 (&acc)[DP / 32], int c, int D) {
#pragma unroll
  for (int m = 0; m < DP / 32; ++m)
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int d = 32 * m + 4 * c + q;
      if (d < D)
        store(row[d], lane4(acc[m], q));
    }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <int DP> struct ForwardTiles {
  static constexpr int R = DP <= 128 ? 4 : 2; // query rows per lane
  static constexpr int BQ = 4 * R * kWarps;   // queries per block
  static constexpr int BK = DP <= 64 ? 64 : 32;
  static constexpr int LD = DP + 4, LP = BK + 4;
  // Q [BQ][LD], K and V [BK][LD], P [BQ][LP].
  static constexpr size_t bytes =
      sizeof(float) * ((BQ + 2 * BK) * LD + BQ * LP);
};

// o [B, T, H, D], lse [B, H, T]; a block per (b, h, query tile), the
// tiles of a head adjacent (its K and V stay in L2).
template <int DP, typename E>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    forwardKernel(E *__restrict__ o, float *__restrict__ lse,
                  const E *__restrict__ q, const E *__restrict__ k,
                  const E *__restrict__ v,
                  const float *__restrict__ coefficients, Shape s, int tiles) {
  using F = ForwardTiles<DP>;
  constexpr int R = F::R, C = F::BK / 8, M = DP / 32;
  LAP_DYNAMIC_SHARED(float4, shared);
  float *Qs = reinterpret_cast<float *>(shared);
  float *Ks = Qs + F::BQ * F::LD;
  float *Vs = Ks + F::BK * F::LD;
  float *Ps = Vs + F::BK * F::LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 8, c = lane % 8;
  const float *Qw = Qs + warp * 4 * R * F::LD;
  float *Pw = Ps + warp * 4 * R * F::LP;

  const auto [b, h, g, t0, nq] = s.queryTile(tiles, F::BQ);
  const int tq = t0 + warp * 4 * R + r; // query of row i: tq + 4i
  const int64_t ldq = int64_t(s.H) * s.D, ldk = int64_t(s.KV) * s.D;

  loadTile<DP>(Qs, q + s.qRow(b, t0, h), ldq, nq, F::BQ, s.D);
  float m[R], l[R]; // running max (base 2) and sum of each row
  float4 acc[R][M]; // unnormalised P V
#pragma unroll
  for (int i = 0; i < R; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < M; ++j)
      acc[i][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  // Causal: keys past the tile's last query are masked for all of it, and
  // under a window those before its first query's window.
  const int keyEnd = s.keyEnd(b, t0, nq);
  for (int s0 = s.firstKeyTile(b, t0, F::BK); s0 < keyEnd; s0 += F::BK) {
    const int nk = min(F::BK, s.S - s0);
    __syncthreads(); // the previous tile is read
    loadTile<DP>(Ks, k + s.kRow(b, s0, g), ldk, nk, F::BK, s.D);
    loadTile<DP>(Vs, v + s.kRow(b, s0, g), ldk, nk, F::BK, s.D);
    __syncthreads();
    float x[R][C];
    rowDots<DP, R, C>(x, Qw, Ks, r, c);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      float mx = m[i];
#pragma unroll
      for (int j = 0; j < C; ++j) {
        x[i][j] = s.visible(b, tq + 4 * i, s0 + c + 8 * j) ? s.c2 * x[i][j]
                                                           : -INFINITY;
        mx = fmaxf(mx, x[i][j]);
      }
      mx = groupMax(mx);
      // A row that has seen no key yet keeps -inf and gets P = 0.
      const float ref = mx == -INFINITY ? 0.0f : mx;
      const float corr = exp2f(m[i] - ref);
      m[i] = mx;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const float p = exp2f(x[i][j] - ref);
        Pw[(r + 4 * i) * F::LP + c + 8 * j] = p;
        sum += p;
      }
      l[i] = l[i] * corr + groupSum(sum);
#pragma unroll
      for (int j = 0; j < M; ++j)
        scale4(acc[i][j], corr);
    }
    __syncwarp();
    accumulate<DP, R, F::BK>(acc, Pw, Vs, r, c);
  }

  // Epilogue: O = alpha P V + beta V_t, V_t at the query's own position.
  const float alpha = coefficients[h], beta = coefficients[s.H + h];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int t = tq + 4 * i;
    if (t >= s.T)
      continue;
    const float a = l[i] > 0.0f ? alpha / l[i] : 0.0f;
    const E *vt = beta != 0.0f && t < s.S ? v + s.kRow(b, t, g) : nullptr;
    E *out = o + s.qRow(b, t, h);
#pragma unroll
    for (int j = 0; j < M; ++j)
#pragma unroll
      for (int q4 = 0; q4 < 4; ++q4) {
        const int d = 32 * j + 4 * c + q4;
        if (d < s.D)
          store(out[d], vt ? a * lane4(acc[i][j], q4) + beta * load(vt[d])
                           : a * lane4(acc[i][j], q4));
      }
    if (c == 0)
      lse[s.row(b, h, t)] =
          l[i] > 0.0f ? (m[i] + log2f(l[i])) * kLn2 : -INFINITY;
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

constexpr int kRowWarps = 8; // rows per block of the row-term kernel

// terms [B, H, T] = D_i = rowsum(dO_i * (O_i - beta V_i)) (= rowsum(alpha
// dO_i * (P V)_i)); with own (learned coefficients) also own [B, H, T] =
// rowsum(dO_i * V_i), the terms of d beta (0 where t >= S). A warp per row
// of dout, in memory order.
template <typename E>
__global__ void
rowTermsKernel(float *__restrict__ terms, float *__restrict__ own,
               const E *__restrict__ dout, const E *__restrict__ o,
               const E *__restrict__ v, const float *__restrict__ coefficients,
               Shape s, int64_t rows) {
  const int64_t n = int64_t(blockIdx.x) * kRowWarps + threadIdx.x / 32;
  if (n >= rows)
    return;
  const int lane = threadIdx.x % 32;
  const int h = int(n % s.H), t = int(n / s.H % s.T), b = int(n / s.H / s.T);
  const E *d = dout + n * s.D, *y = o + n * s.D;
  const float beta = coefficients[s.H + h];
  float sum = 0.0f, mine = 0.0f;
  for (int i = lane; i < s.D; i += 32)
    sum += load(d[i]) * load(y[i]);
  if ((beta != 0.0f || own) && t < s.S) {
    const E *vt = v + s.kRow(b, t, h / s.G);
    for (int i = lane; i < s.D; i += 32)
      mine += load(d[i]) * load(vt[i]);
  }
  sum = warpSum(sum);
  mine = warpSum(mine);
  if (lane == 0) {
    terms[s.row(b, h, t)] = sum - beta * mine;
    if (own)
      own[s.row(b, h, t)] = mine;
  }
}

template <int DP> struct KeyTiles {
  // Keys per lane: dK and dV both stay in registers.
  static constexpr int R = DP <= 64 ? 4 : DP <= 128 ? 2 : 1;
  static constexpr int BK = 4 * R * kWarps; // keys per block
  static constexpr int BQ = 32;             // queries per tile
  static constexpr int LD = DP + 4, LP = BQ + 4;
  // K, V [BK][LD], Q, dO [BQ][LD], alpha P^T, dS^T [BK][LP], lse * log2 e
  // and D_i [BQ].
  static constexpr size_t bytes =
      sizeof(float) * ((2 * BK + 2 * BQ) * LD + 2 * BK * LP + 2 * BQ);
};

// dk, dv [B, S, KV, D]; a block per (b, kv head g, key tile), meeting the
// query tiles of the G heads of g in turn. With alphaPartials [B, H, tiles]:
// each head's sum of P dP over the block.
template <int DP, typename E>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    keyGradientsKernel(E *__restrict__ dk, E *__restrict__ dv,
                       float *__restrict__ alphaPartials,
                       const E *__restrict__ dout, const E *__restrict__ q,
                       const E *__restrict__ k, const E *__restrict__ v,
                       const float *__restrict__ lse,
                       const float *__restrict__ terms,
                       const float *__restrict__ coefficients, Shape s,
                       int tiles) {
  using K = KeyTiles<DP>;
  constexpr int R = K::R, C = K::BQ / 8, M = DP / 32;
  LAP_DYNAMIC_SHARED(float4, shared);
  __shared__ float warpSums[kWarps];
  float *Ks = reinterpret_cast<float *>(shared);
  float *Vs = Ks + K::BK * K::LD;
  float *Qs = Vs + K::BK * K::LD;
  float *dOs = Qs + K::BQ * K::LD;
  float *Ps = dOs + K::BQ * K::LD;
  float *dSs = Ps + K::BK * K::LP;
  float *Ls = dSs + K::BK * K::LP;
  float *Ds = Ls + K::BQ;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 8, c = lane % 8;
  const float *Kw = Ks + warp * 4 * R * K::LD;
  const float *Vw = Vs + warp * 4 * R * K::LD;
  float *Pw = Ps + warp * 4 * R * K::LP;
  float *dSw = dSs + warp * 4 * R * K::LP;

  // Under a causal mask the first key tiles meet the most queries: they
  // come first.
  const int bg = blockIdx.x / tiles, tile = blockIdx.x % tiles;
  const int s0 = tile * K::BK;
  const int b = bg / s.KV, g = bg % s.KV;
  const int nk = min(K::BK, s.S - s0);
  const int sk = s0 + warp * 4 * R + r; // key of row i: sk + 4i
  const int64_t ldq = int64_t(s.H) * s.D, ldk = int64_t(s.KV) * s.D;

  loadTile<DP>(Ks, k + s.kRow(b, s0, g), ldk, nk, K::BK, s.D);
  loadTile<DP>(Vs, v + s.kRow(b, s0, g), ldk, nk, K::BK, s.D);
  float4 dK[R][M], dV[R][M];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < M; ++j)
      dK[i][j] = dV[i][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  // Causal: queries before s0 see none of these keys, and under a window
  // neither do those from queryEnd on.
  const int tStart = s.causal ? s0 / K::BQ * K::BQ : 0;
  const int tEnd = s.queryEnd(b, s0, min(K::BK, s.S - s0));
  for (int hg = 0; hg < s.G; ++hg) {
    const int h = g * s.G + hg;
    const float alpha = coefficients[h];
    float pdp = 0.0f; // sum of P dP over the lane's entries
    for (int t0 = tStart; t0 < tEnd; t0 += K::BQ) {
      const int nq = min(K::BQ, s.T - t0);
      __syncthreads(); // the previous query tile is read
      loadTile<DP>(Qs, q + s.qRow(b, t0, h), ldq, nq, K::BQ, s.D);
      loadTile<DP>(dOs, dout + s.qRow(b, t0, h), ldq, nq, K::BQ, s.D);
      for (int j = threadIdx.x; j < K::BQ; j += kThreads) {
        Ls[j] = j < nq ? lse[s.row(b, h, t0 + j)] * kLog2e : 0.0f;
        Ds[j] = j < nq ? terms[s.row(b, h, t0 + j)] : 0.0f;
      }
      __syncthreads();
      // Transposed tiles, keys by queries: S^T = K Q^T, dP^T = V dO^T.
      float x[R][C], dp[R][C];
      rowDots<DP, R, C>(x, Kw, Qs, r, c);
      rowDots<DP, R, C>(dp, Vw, dOs, r, c);
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < C; ++j) {
          const int n = c + 8 * j;
          const bool seen = s.visible(b, t0 + n, sk + 4 * i);
          const float p = seen ? exp2f(s.c2 * x[i][j] - Ls[n]) : 0.0f;
          const float d = seen ? dp[i][j] : 0.0f;
          pdp += p * d;
          Pw[(r + 4 * i) * K::LP + n] = alpha * p;
          dSw[(r + 4 * i) * K::LP + n] = s.scale * p * (alpha * d - Ds[n]);
        }
      __syncwarp();
      // dV += (alpha P)^T dO, dK += dS^T Q.
      accumulate<DP, R, K::BQ>(dV, Pw, dOs, r, c);
      accumulate<DP, R, K::BQ>(dK, dSw, Qs, r, c);
    }
    if (alphaPartials)
      blockSum<kWarps>(alphaPartials[(int64_t(b) * s.H + h) * tiles + tile],
                       pdp, warpSums);
  }

  // dk; dv with its beta terms.
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int key = sk + 4 * i;
    if (key >= s.S)
      continue;
    storeRow<DP>(dk + s.kRow(b, key, g), dK[i], c, s.D);
    E *out = dv + s.kRow(b, key, g);
#pragma unroll
    for (int j = 0; j < M; ++j)
#pragma unroll
      for (int q4 = 0; q4 < 4; ++q4) {
        const int d = 32 * j + 4 * c + q4;
        if (d >= s.D)
          continue;
        float y = lane4(dV[i][j], q4);
        if (key < s.T)
          y += s.betaTerms(coefficients, dout, b, key, g, d);
        store(out[d], y);
      }
  }
}

template <int DP> struct QueryTiles {
  static constexpr int R = DP <= 128 ? 4 : 2; // query rows per lane
  static constexpr int BQ = 4 * R * kWarps;   // queries per block
  static constexpr int BK = 32;               // keys per tile
  static constexpr int LD = DP + 4, LP = BK + 4;
  // Q, dO [BQ][LD], K, V [BK][LD], dS [BQ][LP].
  static constexpr size_t bytes =
      sizeof(float) * ((2 * BQ + 2 * BK) * LD + BQ * LP);
};

// dq [B, T, H, D]; a block per (b, h, query tile), meeting the key tiles.
template <int DP, typename E>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    queryGradientsKernel(E *__restrict__ dq, const E *__restrict__ dout,
                         const E *__restrict__ q, const E *__restrict__ k,
                         const E *__restrict__ v, const float *__restrict__ lse,
                         const float *__restrict__ terms,
                         const float *__restrict__ coefficients, Shape s,
                         int tiles) {
  using Q = QueryTiles<DP>;
  constexpr int R = Q::R, C = Q::BK / 8, M = DP / 32;
  LAP_DYNAMIC_SHARED(float4, shared);
  float *Qs = reinterpret_cast<float *>(shared);
  float *dOs = Qs + Q::BQ * Q::LD;
  float *Ks = dOs + Q::BQ * Q::LD;
  float *Vs = Ks + Q::BK * Q::LD;
  float *dSs = Vs + Q::BK * Q::LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 8, c = lane % 8;
  const float *Qw = Qs + warp * 4 * R * Q::LD;
  const float *dOw = dOs + warp * 4 * R * Q::LD;
  float *dSw = dSs + warp * 4 * R * Q::LP;

  const auto [b, h, g, t0, nq] = s.queryTile(tiles, Q::BQ);
  const int tq = t0 + warp * 4 * R + r; // query of row i: tq + 4i
  const int64_t ldq = int64_t(s.H) * s.D, ldk = int64_t(s.KV) * s.D;

  loadTile<DP>(Qs, q + s.qRow(b, t0, h), ldq, nq, Q::BQ, s.D);
  loadTile<DP>(dOs, dout + s.qRow(b, t0, h), ldq, nq, Q::BQ, s.D);
  float lse2[R], rowD[R];
  float4 dQ[R][M];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const bool real = tq + 4 * i < s.T;
    lse2[i] = real ? lse[s.row(b, h, tq + 4 * i)] * kLog2e : 0.0f;
    rowD[i] = real ? terms[s.row(b, h, tq + 4 * i)] : 0.0f;
#pragma unroll
    for (int j = 0; j < M; ++j)
      dQ[i][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  const float alpha = coefficients[h];

  const int keyEnd = s.keyEnd(b, t0, nq);
  for (int s0 = s.firstKeyTile(b, t0, Q::BK); s0 < keyEnd; s0 += Q::BK) {
    const int nk = min(Q::BK, s.S - s0);
    __syncthreads(); // the previous tile is read
    loadTile<DP>(Ks, k + s.kRow(b, s0, g), ldk, nk, Q::BK, s.D);
    loadTile<DP>(Vs, v + s.kRow(b, s0, g), ldk, nk, Q::BK, s.D);
    __syncthreads();
    float x[R][C], dp[R][C];
    rowDots<DP, R, C>(x, Qw, Ks, r, c);
    rowDots<DP, R, C>(dp, dOw, Vs, r, c);
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const bool seen = s.visible(b, tq + 4 * i, s0 + c + 8 * j);
        const float p = seen ? exp2f(s.c2 * x[i][j] - lse2[i]) : 0.0f;
        const float d = seen ? dp[i][j] : 0.0f;
        dSw[(r + 4 * i) * Q::LP + c + 8 * j] =
            s.scale * p * (alpha * d - rowD[i]);
      }
    __syncwarp();
    accumulate<DP, R, Q::BK>(dQ, dSw, Ks, r, c); // dQ += dS K
  }

#pragma unroll
  for (int i = 0; i < R; ++i)
    if (tq + 4 * i < s.T)
      storeRow<DP>(dq + s.qRow(b, tq + 4 * i, h), dQ[i], c, s.D);
}

constexpr int kSumThreads = 256;

// dcoefficients [2, H], a block per entry: d alpha_h sums alphaPartials
// [B, H, tiles] over b and tiles, d beta_h sums own [B, H, T] over b and t.
// Fixed order, in double (as the CPU's sums across tasks).
__global__ void coefficientsKernel(float *__restrict__ dcoefficients,
                                   const float *__restrict__ alphaPartials,
                                   int tiles, const float *__restrict__ own,
                                   int B, int H, int T) {
  __shared__ double sums[kSumThreads];
  const bool isAlpha = int(blockIdx.x) < H;
  const int h = isAlpha ? int(blockIdx.x) : int(blockIdx.x) - H;
  const int per = isAlpha ? tiles : T; // entries per (b, h)
  const float *src = isAlpha ? alphaPartials : own;
  const int64_t n = int64_t(B) * per;
  double sum = 0.0;
  for (int64_t e = threadIdx.x; e < n; e += kSumThreads)
    sum += src[(e / per * H + h) * per + e % per];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kSumThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w)
      sums[threadIdx.x] += sums[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    dcoefficients[blockIdx.x] = float(sums[0]);
}

} // namespace
} // namespace lap::cuda::cudacores

#endif // LAP_RUNTIME_KERNELS_CUDA_ATTENTIONCUDACORES_H
