//===- Embedding.h - table lookups, positions, documents -------*- CUDA -*-===//
//
// The backward passes are gathers: each output element is owned by one
// thread that adds its terms in the CPU's order, so the gradients are
// race-free, identical from run to run, and need no float atomics. For
// embedding_backward the positions are first grouped by index with a stable
// radix sort (the Launcher's: CUB's on the GPU), which keeps each group in
// position order. Kernels in DeviceCode.h's CUDA, plans over a Launcher
// (Launcher.h): the emulator runs this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_EMBEDDING_H
#define LAP_RUNTIME_KERNELS_CUDA_EMBEDDING_H

#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/RowLaunch.h"
#include "runtime/kernels/cuda/ScratchSlots.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace lap::cuda::embedding {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

/// Threads per block of the one-dimensional launches.
constexpr int kThreads = 256;

//--- Embeddings ---------------------------------------------------------------

// table [vocab, c], idx [n] -> y [n, c]; block row = i. Element: fp32 or
// bf16, copied as it is.
template <typename Element>
__global__ void embeddingForwardKernel(Element *y, const Element *table,
                                       const int32_t *idx, int64_t vocab,
                                       int64_t c) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t i = blockIdx.x, v = idx[i];
  y[i * c + j] = v >= 0 && v < vocab ? table[v * c + j] : Element(0);
}

// keys [n] = idx with indices outside [0, vocab) mapped to `dropped` (sorted
// last, summed into no row); rows [n] = 0 .. n - 1.
__global__ void sortKeysKernel(uint32_t *keys, uint32_t *rows,
                               const int32_t *idx, int64_t n, int64_t vocab,
                               uint32_t dropped) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const int64_t v = idx[i];
  keys[i] = v >= 0 && v < vocab ? uint32_t(v) : dropped;
  rows[i] = uint32_t(i);
}

// starts [vocab + 1]: starts[v] = the first k with keys[k] >= v (keys [n]
// sorted), so the positions holding v are rows[starts[v] .. starts[v + 1]).
__global__ void segmentStartsKernel(uint32_t *starts, const uint32_t *keys,
                                    int64_t n, int64_t vocab) {
  const int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v > vocab)
    return;
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (int64_t(keys[mid]) < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  starts[v] = uint32_t(lo);
}

/// Columns each thread of the segment sum owns: independent loads in flight
/// per position, and one long segment (a frequent token) still spreads over
/// c / (kSumColumns * kSumThreads) blocks.
constexpr int kSumColumns = 4, kSumThreads = 128;

// dtable [vocab, c] = sum of dy [n, c] rows rows[starts[v] .. starts[v + 1])
// in position order (the first copied, as the CPU does), zero when none;
// block = (table row v, kSumColumns * kSumThreads columns). Element: fp32
// or bf16, summed in fp32.
template <typename Element>
__global__ void segmentSumKernel(Element *dtable, const Element *dy,
                                 const uint32_t *rows, const uint32_t *starts,
                                 int64_t c) {
  const int64_t v = blockIdx.x;
  const int64_t j0 =
      int64_t(blockIdx.y) * kSumColumns * kSumThreads + threadIdx.x;
  const uint32_t first = starts[v], last = starts[v + 1];
  float sum[kSumColumns];
#pragma unroll
  for (int m = 0; m < kSumColumns; ++m) {
    int64_t j = j0 + m * kSumThreads;
    sum[m] =
        first < last && j < c ? load(dy[int64_t(rows[first]) * c + j]) : 0.0f;
  }
  for (uint32_t k = first + 1; k < last; ++k) {
    const Element *row = dy + int64_t(rows[k]) * c;
#pragma unroll
    for (int m = 0; m < kSumColumns; ++m) {
      int64_t j = j0 + m * kSumThreads;
      if (j < c)
        sum[m] += load(row[j]);
    }
  }
#pragma unroll
  for (int m = 0; m < kSumColumns; ++m) {
    int64_t j = j0 + m * kSumThreads;
    if (j < c)
      store(dtable[v * c + j], sum[m]);
  }
}

/// Bytes rounded up to a multiple of 256 (coalescing alignment).
inline size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

//--- Learned positions --------------------------------------------------------

// x, y [B * T, c], table [P, c]; block row = row of x. Token t sits at
// position first + t, which reads table row (first + t - offset) if any.
// Element: fp32 or bf16, added in fp32.
template <typename Element>
__global__ void
addPositionsForwardKernel(Element *y, const Element *x, const Element *table,
                          int64_t T, int64_t c, int64_t offset, int64_t first) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t r = blockIdx.x, t = first + r % T;
  const float in = load(x[r * c + j]);
  store(y[r * c + j], t < offset ? in : in + load(table[(t - offset) * c + j]));
}

// dy [B, T, c] -> dtable [P, c]: row p sums dy[b, p + offset] over b in
// order (in fp32), zero past the sequence; block row = p.
template <typename Element>
__global__ void addPositionsBackwardKernel(Element *dtable, const Element *dy,
                                           int64_t B, int64_t T, int64_t c,
                                           int64_t offset) {
  const int64_t j = RowLaunch::column();
  if (j >= c)
    return;
  const int64_t p = blockIdx.x, t = p + offset;
  float sum = 0.0f;
  if (t < T && B > 0) {
    sum = load(dy[t * c + j]);
    for (int64_t b = 1; b < B; ++b)
      sum += load(dy[(b * T + t) * c + j]);
  }
  store(dtable[p * c + j], sum);
}

/// The four source rows (clamped to the grid) and weights of output row i
/// of a bicubic resampling from `from` to `to` rows: PyTorch's
/// upsample_bicubic2d (A = -0.75, align_corners = False) with DINO's scale
/// factor (to + 0.1) / from, in double as the CPU's CubicTaps.
__device__ inline void cubicTaps(int64_t i, int64_t from, int64_t to,
                                 int *index, float *weight) {
  const double a = -0.75, scale = double(from) / (double(to) + 0.1);
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [&](double x) {
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  };
  double source = (double(i) + 0.5) * scale - 0.5;
  double f = floor(source), t = source - f;
  double w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
  for (int k = 0; k < 4; ++k) {
    int64_t s = int64_t(f) - 1 + k;
    index[k] = int(s < 0 ? 0 : s > from - 1 ? from - 1 : s);
    weight[k] = float(w[k]);
  }
}

// x [keep + from^2, c] -> y [keep + to^2, c]; block row = row of y.
__global__ void interpolateForwardKernel(float *y, const float *x, int64_t keep,
                                         int64_t from, int64_t to, int64_t c) {
  __shared__ int index[8]; // [2, 4]: the taps of the output row, column
  __shared__ float weight[8];
  const int64_t r = blockIdx.x, j = RowLaunch::column();
  if (r < keep) { // uniform over the block: no barrier is skipped
    if (j < c)
      y[r * c + j] = x[r * c + j];
    return;
  }
  const int64_t oy = (r - keep) / to, ox = (r - keep) % to;
  if (threadIdx.x < 2)
    cubicTaps(threadIdx.x == 0 ? oy : ox, from, to, index + 4 * threadIdx.x,
              weight + 4 * threadIdx.x);
  __syncthreads();
  if (j >= c)
    return;
  const float *grid = x + keep * c;
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 4; ++k)
      sum += weight[i] * weight[4 + k] *
             grid[(int64_t(index[i]) * from + index[4 + k]) * c + j];
  y[r * c + j] = sum;
}

// dy [keep + to^2, c] -> dx [keep + from^2, c]; block row = row of dx.
// Shared: the taps of every output row, index [to, 4] then weight [to, 4].
// Grid cell (sy, sx) gathers the terms the CPU scatters into it, in the
// CPU's order: output rows (oy, ox) ascending, then taps (i, k). A row's
// taps are consecutive clamped indices, nondecreasing in oy, so the rows
// reaching sy are those with index[oy][0] <= sy <= index[oy][3], a range.
__global__ void interpolateBackwardKernel(float *dx, const float *dy,
                                          int64_t keep, int64_t from,
                                          int64_t to, int64_t c) {
  LAP_DYNAMIC_SHARED(int, taps);
  int *index = taps;
  float *weight = reinterpret_cast<float *>(taps + 4 * to);
  const int64_t r = blockIdx.x, j = RowLaunch::column();
  if (r < keep) { // uniform over the block: no barrier is skipped
    if (j < c)
      dx[r * c + j] = dy[r * c + j];
    return;
  }
  for (int64_t i = threadIdx.x; i < to; i += blockDim.x)
    cubicTaps(i, from, to, index + 4 * i, weight + 4 * i);
  __syncthreads();
  if (j >= c)
    return;
  const int sy = int((r - keep) / from), sx = int((r - keep) % from);
  float sum = 0.0f;
  for (int oy = 0; oy < to && index[4 * oy] <= sy; ++oy) {
    if (index[4 * oy + 3] < sy)
      continue;
    for (int ox = 0; ox < to && index[4 * ox] <= sx; ++ox) {
      if (index[4 * ox + 3] < sx)
        continue;
      const float d = dy[(keep + int64_t(oy) * to + ox) * c + j];
      for (int i = 0; i < 4; ++i)
        if (index[4 * oy + i] == sy)
          for (int k = 0; k < 4; ++k)
            if (index[4 * ox + k] == sx)
              sum += weight[4 * oy + i] * weight[4 * ox + k] * d;
    }
  }
  dx[r * c + j] = sum;
}

/// lap_cuda_embedding_forward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void embeddingForward(const Launcher &device, Element *y, const Element *table,
                      const int32_t *idx, int64_t n, int64_t vocab, int64_t c) {
  RowLaunch::launch(device, embeddingForwardKernel<Element>, n, c, 0,
                    "embedding_forward", y, table, idx, vocab, c);
}

/// lap_cuda_embedding_backward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void embeddingBackward(const Launcher &device, Element *dtable,
                       const Element *dy, const int32_t *idx, int64_t n,
                       int64_t vocab, int64_t c) {
  if (vocab == 0 || c == 0)
    return;
  if (n == 0) {
    device.zero(dtable, size_t(vocab * c) * sizeof(Element));
    return;
  }
  if (n > INT32_MAX) { // the sort's item count is an int
    device.fail("embedding_backward: more than 2^31 - 1 rows");
    return;
  }
  // Valid indices are < min(vocab, 2^31): that bound marks dropped ones, and
  // the sort looks only at the bits it needs (17 for a 65,536 vocabulary).
  const uint32_t dropped = uint32_t(std::min<int64_t>(vocab, int64_t(1) << 31));
  int bits = 1;
  while (bits < 32 && (uint64_t(1) << bits) <= dropped)
    ++bits;

  // Scratch: keys and rows [n] each, before and after the sort, then
  // starts [vocab + 1].
  const size_t buffer = aligned(size_t(n) * sizeof(uint32_t));
  const size_t startsBytes = aligned(size_t(vocab + 1) * sizeof(uint32_t));
  char *base = deviceScratch<char>(device, kReductionPartials,
                                   int64_t(4 * buffer + startsBytes));
  if (!base)
    return;
  auto *keys = reinterpret_cast<uint32_t *>(base),
       *rows = reinterpret_cast<uint32_t *>(base + buffer),
       *sortedKeys = reinterpret_cast<uint32_t *>(base + 2 * buffer),
       *sortedRows = reinterpret_cast<uint32_t *>(base + 3 * buffer),
       *starts = reinterpret_cast<uint32_t *>(base + 4 * buffer);
  if (!device.launch(sortKeysKernel, (n + kThreads - 1) / kThreads, kThreads, 0,
                     "embedding_backward", keys, rows, idx, n, vocab, dropped))
    return;
  // Stable: equal keys keep their rows in position order.
  if (!device.sortPairs(keys, sortedKeys, rows, sortedRows, n, bits))
    return;
  if (!device.launch(segmentStartsKernel, (vocab + 1 + kThreads - 1) / kThreads,
                     kThreads, 0, "embedding_backward", starts, sortedKeys, n,
                     vocab))
    return;
  const int64_t columnBlocks =
      (c + kSumColumns * kSumThreads - 1) / (kSumColumns * kSumThreads);
  device.launch(segmentSumKernel<Element>,
                dim3(unsigned(vocab), unsigned(columnBlocks)),
                dim3(unsigned(kSumThreads)), 0, "embedding_backward", dtable,
                dy, sortedRows, starts, c);
}

/// lap_cuda_add_positions_forward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void addPositionsForward(const Launcher &device, Element *y, const Element *x,
                         const Element *table, int64_t B, int64_t T, int64_t c,
                         int64_t offset, int64_t first) {
  RowLaunch::launch(device, addPositionsForwardKernel<Element>, B * T, c, 0,
                    "add_positions_forward", y, x, table, T, c, offset, first);
}

/// lap_cuda_add_positions_backward (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void addPositionsBackward(const Launcher &device, Element *dtable,
                          const Element *dy, int64_t B, int64_t T, int64_t c,
                          int64_t offset, int64_t P) {
  RowLaunch::launch(device, addPositionsBackwardKernel<Element>, P, c, 0,
                    "add_positions_backward", dtable, dy, B, T, c, offset);
}

/// lap_cuda_interpolate_positions_forward.
template <typename Launcher>
void interpolatePositionsForward(const Launcher &device, float *y,
                                 const float *x, int64_t keep, int64_t from,
                                 int64_t to, int64_t c) {
  RowLaunch::launch(device, interpolateForwardKernel, keep + to * to, c, 0,
                    "interpolate_positions_forward", y, x, keep, from, to, c);
}

/// lap_cuda_interpolate_positions_backward.
template <typename Launcher>
void interpolatePositionsBackward(const Launcher &device, float *dx,
                                  const float *dy, int64_t keep, int64_t from,
                                  int64_t to, int64_t c) {
  if (keep + from * from == 0 || c == 0)
    return;
  // The whole tap table lives in shared memory: 32 bytes per output row.
  const size_t shared = size_t(to) * 4 * (sizeof(int) + sizeof(float));
  if (shared > 48 * 1024) {
    device.fail("interpolate_positions_backward: more than 1536 rows");
    return;
  }
  RowLaunch::launch(device, interpolateBackwardKernel, keep + from * from, c,
                    shared, "interpolate_positions_backward", dx, dy, keep,
                    from, to, c);
}

//===----------------------------------------------------------------------===//
// Document starts
//===----------------------------------------------------------------------===//

constexpr int kDocumentThreads = 256;

// A block per sequence, a chunk of its tokens per thread: each thread finds
// its chunk's last `bos`, thread 0 carries them across the chunks in order,
// and each thread writes its chunk from the start it enters with.
__global__ void documentStartsKernel(int32_t *starts, const int32_t *tokens,
                                     int64_t T, int64_t bos) {
  __shared__ int32_t carried[kDocumentThreads];
  const int64_t chunk = (T + kDocumentThreads - 1) / kDocumentThreads;
  const int64_t begin = min(T, int64_t(threadIdx.x) * chunk);
  const int64_t end = min(T, begin + chunk);
  const int32_t *row = tokens + int64_t(blockIdx.x) * T;
  int32_t *out = starts + int64_t(blockIdx.x) * T;
  int32_t last = -1;
  for (int64_t t = begin; t < end; ++t)
    if (row[t] == bos)
      last = int32_t(t);
  carried[threadIdx.x] = last;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t start = 0;
    for (int i = 0; i < kDocumentThreads; ++i) {
      const int32_t own = carried[i];
      carried[i] = start;
      if (own >= 0)
        start = own;
    }
  }
  __syncthreads();
  int32_t start = carried[threadIdx.x];
  for (int64_t t = begin; t < end; ++t) {
    if (row[t] == bos)
      start = int32_t(t);
    out[t] = start;
  }
}

template <typename Launcher>
void documentStarts(const Launcher &device, int32_t *starts,
                    const int32_t *tokens, int64_t B, int64_t T, int64_t bos) {
  if (B * T == 0)
    return;
  device.launch(documentStartsKernel, B, kDocumentThreads, 0, "document_starts",
                starts, tokens, T, bos);
}

//===----------------------------------------------------------------------===//
// Padded targets
//===----------------------------------------------------------------------===//

constexpr int kPadThreads = 256;

// A thread per target of n = B T.
__global__ void padTargetsKernel(int32_t *out, const int32_t *targets,
                                 const int32_t *lengths, int64_t n, int64_t T) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = i % T < lengths[i / T] ? targets[i] : -1;
}

template <typename Launcher>
void padTargets(const Launcher &device, int32_t *out, const int32_t *targets,
                const int32_t *lengths, int64_t B, int64_t T) {
  const int64_t n = B * T;
  if (n == 0)
    return;
  device.launch(padTargetsKernel, (n + kPadThreads - 1) / kPadThreads,
                kPadThreads, 0, "pad_targets", out, targets, lengths, n, T);
}

} // namespace
} // namespace lap::cuda::embedding

#endif // LAP_RUNTIME_KERNELS_CUDA_EMBEDDING_H
