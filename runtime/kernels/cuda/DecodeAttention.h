//===- DecodeAttention.h - attention against a key/value cache --*- CUDA -*-===//
//
// Incremental decoding: a few new queries against every cached key, bound by
// reading the cache. One block per (sequence, head, query) makes one pass
// over its keys: each warp takes a strided share of them, kKeyBatch at a
// time (loads in flight, shuffle reductions interleaved), and keeps an
// online softmax (running max, sum, and P V in registers, a lane holding
// channels lane + 32 m); the warps' partial results are merged at the end.
// The kernels are in DeviceCode.h's CUDA and the plan takes a Launcher
// (Launcher.h), so the emulator runs this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_DECODEATTENTION_H
#define LAP_RUNTIME_KERNELS_CUDA_DECODEATTENTION_H

#include "runtime/kernels/cuda/DeviceCode.h"

#include <cstdint>

namespace lap::cuda::decoding {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

constexpr int kAppendThreads = 256;
constexpr int kDecodeWarps = 16; ///< per block: keys read in parallel
constexpr int kKeyBatch = 4;     ///< keys in flight per warp

// kCache, vCache [B, capacity, KV, D] at positions first .. first + T - 1
// <- k, v [B, T, KV, D]; n = B T KV D, span = T KV D.
__global__ void appendKernel(float *kCache, float *vCache, const float *k,
                             const float *v, int64_t n, int64_t span,
                             int64_t first, int64_t capacity, int64_t row) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n)
    return;
  const int64_t to = (e / span * capacity + first) * row + e % span;
  kCache[to] = k[e];
  vCache[to] = v[e];
}

// o, q [B, T, H, D]; caches [B, capacity, KV, D]; block = (b, h, t) with
// blockIdx.x = (b H + h) T + t. Query t attends to positions <= first + t,
// and under a window to those after first + t - window.
// kPerLane: channels per lane, ceil(D / 32) rounded up to a power of two.
template <int kPerLane>
__global__ void __launch_bounds__(kDecodeWarps * 32)
    decodeKernel(float *o, const float *kCache, const float *vCache,
                 const float *q, const float *coefficients, int64_t T,
                 int64_t first, int64_t capacity, int64_t H, int64_t KV,
                 int64_t D, float scale, int64_t window) {
  __shared__ float warpMax[kDecodeWarps], warpSum[kDecodeWarps];
  __shared__ float warpOut[kDecodeWarps][32 * kPerLane];
  const int64_t task = blockIdx.x, t = task % T, h = task / T % H,
                b = task / (T * H);
  // kr and vr start at the query's first key: keys of them in all.
  const int64_t row = KV * D, g = h / (H / KV), own = first + t,
                from = window > 0 && own >= window ? own - window + 1 : 0,
                keys = own + 1 - from;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float *kr = kCache + (b * capacity + from) * row + g * D;
  const float *vr = vCache + (b * capacity + from) * row + g * D;

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
      if (s0 + u < keys)
#pragma unroll
        for (int m = 0; m < kPerLane; ++m) {
          int i = lane + 32 * m;
          if (i < D)
            score[u] += qv[m] * kr[(s0 + u) * row + i];
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
#pragma unroll
        for (int m = 0; m < kPerLane; ++m) {
          int i = lane + 32 * m;
          if (i < D)
            acc[m] += p * vr[(s0 + u) * row + i];
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
  const float *self = vr + (own - from) * row;
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

/// lap_cuda_attention_decode: appends k, v to the caches, then attends.
template <typename Launcher>
void decode(const Launcher &device, float *o, float *kCache, float *vCache,
            const float *q, const float *k, const float *v,
            const float *coefficients, int64_t B, int64_t T, int64_t first,
            int64_t capacity, int64_t H, int64_t KV, int64_t D, float scale,
            int64_t window) {
  if (B * T * KV * D == 0)
    return;
  const int64_t row = KV * D, n = B * T * row;
  if (!device.launch(appendKernel, (n + kAppendThreads - 1) / kAppendThreads,
                     kAppendThreads, 0, "attention_decode", kCache, vCache, k,
                     v, n, T * row, first, capacity, row) ||
      H == 0)
    return;
  // Registers hold a lane's channels: up to 8 per lane, D <= 256.
  auto attend = [&](auto kernel) {
    device.launch(kernel, B * H * T, kDecodeWarps * 32, 0, "attention_decode",
                  o, kCache, vCache, q, coefficients, T, first, capacity, H, KV,
                  D, scale, window);
  };
  if (D <= 32)
    attend(decodeKernel<1>);
  else if (D <= 64)
    attend(decodeKernel<2>);
  else if (D <= 128)
    attend(decodeKernel<4>);
  else if (D <= 256)
    attend(decodeKernel<8>);
  else
    device.fail("attention_decode: head dimension above 256");
}

} // namespace
} // namespace lap::cuda::decoding

#endif // LAP_RUNTIME_KERNELS_CUDA_DECODEATTENTION_H
