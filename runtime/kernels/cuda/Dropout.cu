//===- Dropout.cu - counter-based dropout masks -----------------*- C++ -*-===//
//
// The masks are the CPU's bit for bit: the same splitMix (SplitMix.h, host
// and device code) and the same stream, threshold and scale
// (runtime/kernels/DropoutMask.h). The seed is read on the device, when the
// kernel runs, so a captured step replays with the seed of its replay.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/DropoutMask.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/Kernels.h"

#include <algorithm>
#include <cmath>

using lap::splitMix;
using lap::cuda::blocksFor;
using lap::cuda::kBlock;
using lap::cuda::load;
using lap::cuda::store;
using lap::dropout::maskStream;
using lap::dropout::survivalThreshold;
using lap::dropout::survivorScale;

namespace {

// x, y [n]; y may be x: each element is read, then written, by one thread.
// Element: fp32 or bf16 (scaled in fp32, rounded once).
template <typename Element>
__global__ void dropoutKernel(Element *y, const Element *x, int64_t n,
                              const uint64_t *seed, int64_t key,
                              uint64_t threshold, float scale) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  uint64_t base = maskStream(*seed, key);
  bool keep = (splitMix(base + uint64_t(i)) >> 40) >= threshold;
  store(y[i], keep ? load(x[i]) * scale : 0.0f);
}

// x, y [B, per_sample]; the draw of element i is sample b = i / per_sample's.
template <typename Element>
__global__ void dropPathKernel(Element *y, const Element *x, int64_t n,
                               int64_t per_sample, const uint64_t *seed,
                               int64_t key, uint64_t threshold, float scale) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  uint64_t base = maskStream(*seed, key);
  bool keep = (splitMix(base + uint64_t(i / per_sample)) >> 40) >= threshold;
  store(y[i], keep ? load(x[i]) * scale : 0.0f);
}

template <typename Element>
void dropout(Element *y, const Element *x, int64_t n, float rate,
             const uint64_t *seed, int64_t key) {
  if (n <= 0)
    return;
  dropoutKernel<<<blocksFor(n), kBlock, 0, lap::cuda::stream()>>>(
      y, x, n, seed, key, survivalThreshold(rate), survivorScale(rate));
  lap::cuda::checkLaunch("dropout");
}

template <typename Element>
void dropPath(Element *y, const Element *x, int64_t B, int64_t per_sample,
              float rate, const uint64_t *seed, int64_t key) {
  int64_t n = B * per_sample;
  if (n <= 0)
    return;
  dropPathKernel<<<blocksFor(n), kBlock, 0, lap::cuda::stream()>>>(
      y, x, n, per_sample, seed, key, survivalThreshold(rate),
      survivorScale(rate));
  lap::cuda::checkLaunch("drop_path");
}

} // namespace

extern "C" void lap_cuda_dropout(float *y, const float *x, int64_t n,
                                 float rate, const uint64_t *seed,
                                 int64_t key) {
  dropout(y, x, n, rate, seed, key);
}

extern "C" void lap_cuda_drop_path(float *y, const float *x, int64_t B,
                                   int64_t per_sample, float rate,
                                   const uint64_t *seed, int64_t key) {
  dropPath(y, x, B, per_sample, rate, seed, key);
}

extern "C" void lap_cuda_dropout_bf16(lap_bf16 *y, const lap_bf16 *x, int64_t n,
                                      float rate, const uint64_t *seed,
                                      int64_t key) {
  dropout(y, x, n, rate, seed, key);
}

extern "C" void lap_cuda_drop_path_bf16(lap_bf16 *y, const lap_bf16 *x,
                                        int64_t B, int64_t per_sample,
                                        float rate, const uint64_t *seed,
                                        int64_t key) {
  dropPath(y, x, B, per_sample, rate, seed, key);
}
