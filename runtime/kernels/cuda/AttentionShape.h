//===- AttentionShape.h - An attention call's sizes in device code -*- CUDA -*-===//
//
// For the attention kernels (AttentionCudaCores.h, AttentionTensorCores.h): the
// sizes of one call, the offsets of its rows and which keys a query sees;
// and the reductions both families make.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ATTENTIONSHAPE_H
#define LAP_RUNTIME_KERNELS_CUDA_ATTENTIONSHAPE_H

#include "runtime/kernels/AttentionMask.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"

#include <cstdint>

namespace lap::cuda {

constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.69314718055994530942f;

/// A call's sizes as the kernels index them (offsets in 64 bits).
struct Shape {
  int B, T, S, H, KV, D;
  int G;       // H / KV: query heads per kv head
  float scale; // of the scores
  float c2;    // scale * log2 e: scores in base 2
  bool causal;
  int window; // causal: query t sees keys t - window < s <= t (0: all)
  // causal: [B, T], query t of sequence b sees keys from starts[b T + t]
  // (its document's first token) on; or null.
  const int32_t *starts;
  // [B]: sequence b's keys are its first lengths[b], the rest padding that
  // no query sees; or null: all S.
  const int32_t *lengths;

  // Offsets of rows of q, o, dout, dq [B, T, H, D] and k, v [B, S, KV, D].
  __device__ int64_t qRow(int b, int t, int h) const {
    return ((int64_t(b) * T + t) * H + h) * D;
  }
  __device__ int64_t kRow(int b, int s, int g) const {
    return ((int64_t(b) * S + s) * KV + g) * D;
  }
  // Index of a row's entry in lse and the row terms [B, H, T].
  __device__ int64_t row(int b, int h, int t) const {
    return (int64_t(b) * H + h) * T + t;
  }
  // The query tile of a kernel with a block per (b, h, tile of `rows`
  // queries): the tiles of a head adjacent (its K and V stay in L2), the
  // costliest first (under a causal mask, the last).
  struct QueryTile {
    int b, h, kv, t0, nq; // kv: h's kv head; nq: the tile's real queries
  };
  __device__ QueryTile queryTile(int tiles, int rows) const {
    const int bh = blockIdx.x / tiles;
    const int t0 = (tiles - 1 - int(blockIdx.x % tiles)) * rows;
    return {bh / H, bh % H, bh % H / G, t0, min(rows, T - t0)};
  }
  // dv's beta terms at `key` (< T) of kv head kv, column d: V at a query's
  // own position gets beta dO from each head of the group, in head order
  // (as the CPU adds them).
  template <typename E>
  __device__ float betaTerms(const float *coefficients, const E *dout, int b,
                             int key, int kv, int d) const {
    float sum = 0.0f;
    for (int h = kv * G; h < kv * G + G; ++h) {
      const float beta = coefficients[H + h];
      if (beta != 0.0f)
        sum += beta * load(dout[qRow(b, key, h) + d]);
    }
    return sum;
  }
  // The first key that query t (< T) of sequence b sees: 0, or under a
  // window or in a document a later one. Nondecreasing in t.
  __device__ int firstKey(int b, int t) const {
    return attention_mask::firstKey(t, window,
                                    starts ? starts + int64_t(b) * T : nullptr);
  }
  // The keys of sequence b that are not padding.
  __device__ int keys(int b) const {
    return lengths ? max(0, min(int(lengths[b]), S)) : S;
  }
  // One past the last key that a query of t0 .. t0 + nq - 1 of sequence b
  // sees.
  __device__ int keyEnd(int b, int t0, int nq) const {
    return min(causal ? min(S, t0 + nq) : S, keys(b));
  }
  // Whether query t of sequence b sees key s (both may be a tile's
  // padding).
  __device__ bool visible(int b, int t, int s) const {
    return t < T && s < keys(b) && !(causal && s > t) && s >= firstKey(b, t);
  }
  // Whether queries t0 .. t0 + nt - 1 of sequence b all see keys s0 .. s0 +
  // ns - 1: a tile of them needs no mask.
  __device__ bool allVisible(int b, int t0, int nt, int s0, int ns) const {
    return t0 + nt <= T && s0 + ns <= keys(b) &&
           !(causal && s0 + ns - 1 > t0) && firstKey(b, t0 + nt - 1) <= s0;
  }
  // The first tile of `rows` keys that query t0 of sequence b, or a later
  // one, sees.
  __device__ int firstKeyTile(int b, int t0, int rows) const {
    return firstKey(b, min(t0, T - 1)) / rows * rows;
  }
  // One past the last query of sequence b that sees a key of s0 .. s0 +
  // ns - 1: from the first query whose first key is past them on, none
  // does (firstKey is nondecreasing: a binary search); 0 when they are all
  // padding.
  __device__ int queryEnd(int b, int s0, int ns) const {
    if (s0 >= keys(b))
      return 0;
    if (window == 0 && !starts)
      return T;
    return attention_mask::queryEnd(s0 + ns - 1, T,
                                    [&](int t) { return firstKey(b, t); });
  }
};

/// The sum over the warp, in every lane (a butterfly: every lane adds the
/// same values in the same order).
__device__ inline float warpSum(float x) {
  for (int o = 16; o > 0; o /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

/// to = the sum of x over a block of Warps warps, in a fixed order (each
/// warp's butterfly, then the warps in order); every thread calls it.
/// warpSums: Warps floats of shared memory, free again on return.
template <int Warps>
__device__ inline void blockSum(float &to, float x, float *warpSums) {
  x = warpSum(x);
  if (threadIdx.x % 32 == 0)
    warpSums[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int w = 0; w < Warps; ++w)
      sum += warpSums[w];
    to = sum;
  }
  __syncthreads();
}

/// The Shape of a call whose sizes the caller has checked.
inline Shape makeShape(int64_t B, int64_t T, int64_t S, int64_t H, int64_t KV,
                       int64_t D, float scale, int32_t causal, int64_t window,
                       const int32_t *starts, const int32_t *lengths) {
  Shape s;
  s.B = int(B), s.T = int(T), s.S = int(S), s.H = int(H), s.KV = int(KV);
  s.D = int(D);
  s.G = KV > 0 ? int(H / KV) : 0;
  s.scale = scale;
  s.c2 = scale * kLog2e;
  s.causal = causal != 0;
  s.window = int(window);
  s.starts = starts;
  s.lengths = lengths;
  return s;
}

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_ATTENTIONSHAPE_H
