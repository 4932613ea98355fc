//===- DecodeAttention.h - attention against a key/value cache --*- CUDA -*-===//
//
// Incremental decoding: a few new queries against every cached key, bound by
// reading the cache. The new keys are read from k and v, and stored into the
// cache by a second kernel once every query has read it (a windowed cache of
// `window` slots may not have room for old and new keys at once). One block per
// (sequence, head, query) makes one pass over its keys: each warp takes a
// strided share of them, kKeyBatch at a time (loads in flight, shuffle
// reductions interleaved), and keeps an online softmax (running max, sum, and P
// V in registers, a lane holding channels lane + 32 m); the warps' partial
// results are merged at the end. The kernels are in DeviceCode.h's CUDA and the
// plan takes a Launcher (Launcher.h), so the emulator runs this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_DECODEATTENTION_H
#define LAP_RUNTIME_KERNELS_CUDA_DECODEATTENTION_H

#include "runtime/kernels/cuda/DeviceCode.h"

#include <algorithm>
#include <cstdint>

namespace lap::cuda::decoding {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

constexpr int kStoreThreads = 256;
constexpr int kDecodeWarps = 16; ///< per block: keys read in parallel
constexpr int kKeyBatch = 4;     ///< keys in flight per warp

// kCache, vCache [B, slots, KV, D] at slots p mod slots <- k, v [B, T, KV,
// D] at positions p = kept .. first + T - 1; n = B span, span = (first + T -
// kept) KV D.
__global__ void storeKernel(float *kCache, float *vCache, const float *k,
                            const float *v, int64_t n, int64_t span,
                            int64_t first, int64_t kept, int64_t T,
                            int64_t slots, int64_t row) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n)
    return;
  const int64_t b = e / span, p = kept + e % span / row, c = e % row;
  const int64_t to = (b * slots + p % slots) * row + c,
                at = (b * T + p - first) * row + c;
  kCache[to] = k[at];
  vCache[to] = v[at];
}

// o, q [B, T, H, D]; caches [B, slots, KV, D]; k, v [B, T, KV, D]; block =
// (b, h, t) with blockIdx.x = (b H + h) T + t. Query t attends to positions
// <= first + t, and under a window to those after first + t - window.
// kPerLane: channels per lane, ceil(D / 32) rounded up to a power of two.
template <int kPerLane>
__global__ void __launch_bounds__(kDecodeWarps * 32)
    decodeKernel(float *o, const float *kCache, const float *vCache,
                 const float *q, const float *k, const float *v,
                 const float *coefficients, int64_t T, int64_t first,
                 int64_t slots, int64_t H, int64_t KV, int64_t D, float scale,
                 int64_t window) {
  __shared__ float warpMax[kDecodeWarps], warpSum[kDecodeWarps];
  __shared__ float warpOut[kDecodeWarps][32 * kPerLane];
  const int64_t task = blockIdx.x, t = task % T, h = task / T % H,
                b = task / (T * H);
  // Key s of the query is position from + s: in the cache at slot
  // (from + s) mod slots before first (old of them), else a row of k.
  const int64_t row = KV * D, g = h / (H / KV), own = first + t,
                from = window > 0 && own >= window ? own - window + 1 : 0,
                keys = own + 1 - from, old = from < first ? first - from : 0,
                fromSlot = from % slots;
  auto keyRow = [&](int64_t s) {
    if (s >= old)
      return (b * T + from + s - first) * row + g * D;
    const int64_t slot = fromSlot + s;
    return (b * slots + (slot < slots ? slot : slot - slots)) * row + g * D;
  };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float qv[kPerLane], acc[kPerLane];
  const float *qr = q + ((b * T + t) * H + h) * D;
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    int i = lane + 32 * m;
    qv[m] = i < D ? qr[i] : 0.0f;
    acc[m] = 0.0f;
  }
  float max = -INFINITY, sum = 0.0f;
  for (int64_t s0 = int64_t(warp) * kKeyBatch; s0 < keys;
       s0 += kDecodeWarps * kKeyBatch) {
    float score[kKeyBatch];
#pragma unroll
    for (int u = 0; u < kKeyBatch; ++u) {
      score[u] = 0.0f;
      if (s0 + u < keys) {
        const float *kr = (s0 + u < old ? kCache : k) + keyRow(s0 + u);
#pragma unroll
        for (int m = 0; m < kPerLane; ++m) {
          int i = lane + 32 * m;
          if (i < D)
            score[u] += qv[m] * kr[i];
        }
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
      for (int u = 0; u < kKeyBatch; ++u)
        score[u] += __shfl_xor_sync(0xffffffffu, score[u], offset);
    // s0 < keys: the batch has at least one key, so next is finite.
    float next = max;
#pragma unroll
    for (int u = 0; u < kKeyBatch; ++u) {
      score[u] *= scale;
      if (s0 + u < keys)
        next = fmaxf(next, score[u]);
    }
    const float rescale = expf(max - next); // 0 on the first batch
    sum *= rescale;
#pragma unroll
    for (int m = 0; m < kPerLane; ++m)
      acc[m] *= rescale;
#pragma unroll
    for (int u = 0; u < kKeyBatch; ++u)
      if (s0 + u < keys) {
        float p = expf(score[u] - next);
        sum += p;
        const float *vr = (s0 + u < old ? vCache : v) + keyRow(s0 + u);
#pragma unroll
        for (int m = 0; m < kPerLane; ++m) {
          int i = lane + 32 * m;
          if (i < D)
            acc[m] += p * vr[i];
        }
      }
    max = next;
  }

  // Merge the warps: weights exp(max_w - M); a warp with no keys has
  // max_w = -inf and weight 0.
  if (lane == 0) {
    warpMax[warp] = max;
    warpSum[warp] = sum;
  }
#pragma unroll
  for (int m = 0; m < kPerLane; ++m)
    warpOut[warp][lane + 32 * m] = acc[m];
  __syncthreads();
  float M = -INFINITY;
  for (int w = 0; w < kDecodeWarps; ++w)
    M = fmaxf(M, warpMax[w]);
  // O = alpha P V + beta V at the query's own position.
  const float alpha = coefficients[h], beta = coefficients[H + h];
  const float *self = v + ((b * T + t) * KV + g) * D;
  float *out = o + ((b * T + t) * H + h) * D;
  for (int i = threadIdx.x; i < D; i += blockDim.x) {
    float total = 0.0f, pv = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w) {
      float weight = expf(warpMax[w] - M);
      total += warpSum[w] * weight;
      pv += warpOut[w][i] * weight;
    }
    out[i] = alpha / total * pv + beta * self[i];
  }
}

/// lap_cuda_attention_decode: attends, then stores the new keys and values
/// the cache keeps (the last `slots` positions).
template <typename Launcher>
void decode(const Launcher &device, float *o, float *kCache, float *vCache,
            const float *q, const float *k, const float *v,
            const float *coefficients, int64_t B, int64_t T, int64_t first,
            int64_t slots, int64_t H, int64_t KV, int64_t D, float scale,
            int64_t window) {
  if (B * T * KV * D == 0)
    return;
  // Registers hold a lane's channels: up to 8 per lane, D <= 256.
  if (D > 256) {
    device.fail("attention_decode: head dimension above 256");
    return;
  }
  auto kernel = D <= 32    ? decodeKernel<1>
                : D <= 64  ? decodeKernel<2>
                : D <= 128 ? decodeKernel<4>
                           : decodeKernel<8>;
  if (H > 0 &&
      !device.launch(kernel, B * H * T, kDecodeWarps * 32, 0,
                     "attention_decode", o, kCache, vCache, q, k, v,
                     coefficients, T, first, slots, H, KV, D, scale, window))
    return;
  const int64_t kept = std::max(first, first + T - slots), row = KV * D,
                span = (first + T - kept) * row, n = B * span;
  device.launch(storeKernel, (n + kStoreThreads - 1) / kStoreThreads,
                kStoreThreads, 0, "attention_decode", kCache, vCache, k, v, n,
                span, first, kept, T, slots, row);
}

} // namespace
} // namespace lap::cuda::decoding

#endif // LAP_RUNTIME_KERNELS_CUDA_DECODEATTENTION_H
