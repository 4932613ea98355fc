//===- ColumnSums.h - Deterministic column sums, bf16 rounding --*- CUDA -*-===//
//
// The library's column sums, which bias and norm-weight gradients are:
// fixed row chunks whose partials are then summed as columns themselves,
// in an order fixed by the shape, so a sum is the same on every run; and the
// rounding of fp32 results to bf16. Kernels in DeviceCode.h's CUDA, plans over
// a Launcher (Launcher.h), so that the emulator runs them too. Gemm.h's
// columnSums and roundToBf16 are these plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_COLUMNSUMS_H
#define LAP_RUNTIME_KERNELS_CUDA_COLUMNSUMS_H

#include "runtime/kernels/KernelEnums.h"
#include "runtime/kernels/cuda/ColumnTerms.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/ScratchSlots.h"

#include <algorithm>
#include <cstdint>

namespace lap::cuda::columns {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

/// Column sums: a block covers 32 columns of one row chunk, its 8 row lanes
/// striding the chunk's rows; lanes are then added in lane order.
constexpr int kTileColumns = 32, kTileRows = 8;

/// Row chunks of a column sum: a function of n alone, so the summation
/// order is fixed by the shape.
inline int64_t columnChunks(int64_t n) {
  return std::clamp<int64_t>((n + 63) / 64, 1, 256);
}

/// partials [chunks, c]: chunk blockIdx.y's sums of t's terms.
template <typename Element>
__global__ void columnPartials(float *partials, ColumnTerms<Element> t,
                               int64_t n, int64_t c, int64_t rowsPerChunk) {
  __shared__ float lanes[kTileRows][kTileColumns + 1];
  const int64_t j = int64_t(blockIdx.x) * kTileColumns + threadIdx.x;
  const int64_t begin = int64_t(blockIdx.y) * rowsPerChunk;
  const int64_t end = min(n, begin + rowsPerChunk);
  float acc = 0.0f;
  if (j < c)
    for (int64_t i = begin + threadIdx.y; i < end; i += kTileRows) {
      float v = load(t.a[i * c + j]);
      if (t.b) {
        float f = load(t.b[i * c + j]);
        if (t.shift)
          f -= t.shift[i];
        v *= f;
      }
      if (t.scale)
        v *= t.scale[i];
      acc += v;
    }
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < c) {
    float s = lanes[0][threadIdx.x];
    for (int r = 1; r < kTileRows; ++r)
      s += lanes[r][threadIdx.x];
    partials[blockIdx.y * c + j] = s;
  }
}

constexpr int kRoundThreads = 256;

__global__ void roundRows(lap_bf16 *to, const float *from, const lap_bf16 *bias,
                          int64_t n, int64_t c) {
  int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * c)
    return;
  store(to[e], bias ? from[e] + load(bias[e % c]) : from[e]);
}

/// Floats of device scratch columnSums needs for n rows of c.
inline int64_t columnSumsScratch(int64_t n, int64_t c) {
  return columnChunks(n) * c;
}

/// out [c] = the column sums of the terms over n rows (0 when n = 0), in an
/// order fixed by the shape. partials: columnSumsScratch(n, c) floats of
/// device memory for the call, or null for the device's kReductionPartials.
template <typename Launcher, typename Element>
void columnSums(const Launcher &device, float *out,
                const ColumnTerms<Element> &terms, int64_t n, int64_t c,
                float *partials = nullptr) {
  if (c <= 0)
    return;
  const int64_t chunks = columnChunks(n);
  const int64_t rowsPerChunk = (n + chunks - 1) / chunks;
  // One chunk's partial is the sum itself.
  if (chunks == 1)
    partials = out;
  else if (!partials)
    partials = deviceScratch<float>(device, kReductionPartials, chunks * c);
  if (!partials)
    return;
  const dim3 grid(unsigned((c + kTileColumns - 1) / kTileColumns),
                  unsigned(chunks));
  if (!device.launch(columnPartials<Element>, grid,
                     dim3(kTileColumns, kTileRows), 0, "columnPartials",
                     partials, terms, n, c, rowsPerChunk) ||
      chunks == 1)
    return;
  // out = the partials' own column sums, one chunk of all their rows: each
  // row lane adds every 8th chunk, then the lanes are added in lane order
  // (a thread adding all 256 chunks of its column took 32 us for 768).
  device.launch(columnPartials<float>, dim3(grid.x),
                dim3(kTileColumns, kTileRows), 0, "columnPartials", out,
                ColumnTerms<float>{partials}, chunks, c, chunks);
}

/// to [n, c] = from [n, c] + bias [c] (nullable), rounded to bf16 (to
/// nearest, ties to even).
template <typename Launcher>
void roundToBf16(const Launcher &device, lap_bf16 *to, const float *from,
                 int64_t n, int64_t c, const lap_bf16 *bias = nullptr) {
  if (n * c > 0)
    device.launch(roundRows, (n * c + kRoundThreads - 1) / kRoundThreads,
                  kRoundThreads, 0, "roundToBf16", to, from, bias, n, c);
}

} // namespace
} // namespace lap::cuda::columns

#endif // LAP_RUNTIME_KERNELS_CUDA_COLUMNSUMS_H
