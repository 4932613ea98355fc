//===- Dropout.h - counter-based dropout masks ------------------*- CUDA -*-===//
//
// The masks are the CPU's bit for bit: the same splitMix (platform/Random.h,
// host and device code) and the same stream, threshold and scale
// (runtime/kernels/DropoutMask.h). The seed is read on the device, when the
// kernel runs, so a captured step replays with the seed of its replay.
// Kernels in DeviceCode.h's CUDA, plans over a Launcher (Launcher.h): the
// emulator runs this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_DROPOUT_H
#define LAP_RUNTIME_KERNELS_CUDA_DROPOUT_H

#include "runtime/kernels/DropoutMask.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"

#include <cstdint>

namespace lap::cuda::dropout {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

using lap::dropout::maskStream;
using lap::dropout::survivalThreshold;
using lap::dropout::survivorScale;

/// Threads per block.
constexpr int kThreads = 256;

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

/// lap_cuda_dropout (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void dropout(const Launcher &device, Element *y, const Element *x, int64_t n,
             float rate, const uint64_t *seed, int64_t key) {
  if (n <= 0)
    return;
  device.launch(dropoutKernel<Element>, (n + kThreads - 1) / kThreads, kThreads,
                0, "dropout", y, x, n, seed, key, survivalThreshold(rate),
                survivorScale(rate));
}

/// lap_cuda_drop_path (Element = float) or its _bf16 variant.
template <typename Launcher, typename Element>
void dropPath(const Launcher &device, Element *y, const Element *x, int64_t B,
              int64_t per_sample, float rate, const uint64_t *seed,
              int64_t key) {
  const int64_t n = B * per_sample;
  if (n <= 0)
    return;
  device.launch(dropPathKernel<Element>, (n + kThreads - 1) / kThreads,
                kThreads, 0, "drop_path", y, x, n, per_sample, seed, key,
                survivalThreshold(rate), survivorScale(rate));
}

} // namespace
} // namespace lap::cuda::dropout

#endif // LAP_RUNTIME_KERNELS_CUDA_DROPOUT_H
