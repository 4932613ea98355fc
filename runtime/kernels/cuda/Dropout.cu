//===- Dropout.cu - counter-based dropout masks -----------------*- C++ -*-===//
//
// The masks are the CPU's bit for bit: the same splitMix (SplitMix.h, shared
// with the device), the same per-(seed, key) stream and the same integer
// threshold. maskStream (the CPU's `stream`), survivalThreshold and
// survivorScale repeat the host arithmetic of runtime/kernels/cpu/
// Dropout.cpp, whose helpers are private to that file: change both together.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/SplitMix.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Kernels.h"

#include <algorithm>
#include <cmath>

using lap::splitMix;
using lap::cuda::blocksFor;
using lap::cuda::kBlock;

namespace {

/// The per-(seed, key) stream; element i hashes splitMix(stream + i).
uint64_t maskStream(uint64_t seed, int64_t key) {
  return splitMix(seed ^ (uint64_t(key) * 0xD1B54A32D192ED03ull));
}

/// The smallest 24-bit draw (u >> 40) that survives: ceil(rate * 2^24),
/// clamped to [0, 2^24]; NaN drops everything.
uint64_t survivalThreshold(float rate) {
  constexpr double kOne = 16777216.0; // 2^24
  if (std::isnan(rate))
    return uint64_t(kOne);
  double t = std::ceil(double(rate) * kOne);
  return t <= 0.0 ? 0 : uint64_t(std::min(t, kOne));
}

/// 1 / (1 - rate), or 0 when nothing survives (avoids 0 * inf).
float survivorScale(float rate) {
  return rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
}

// x, y [n]; y may be x: each element is read, then written, by one thread.
__global__ void dropoutKernel(float *y, const float *x, int64_t n,
                              uint64_t base, uint64_t threshold, float scale) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  bool keep = (splitMix(base + uint64_t(i)) >> 40) >= threshold;
  y[i] = keep ? x[i] * scale : 0.0f;
}

// x, y [B, per_sample]; the draw of element i is sample b = i / per_sample's.
__global__ void dropPathKernel(float *y, const float *x, int64_t n,
                               int64_t per_sample, uint64_t base,
                               uint64_t threshold, float scale) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  bool keep = (splitMix(base + uint64_t(i / per_sample)) >> 40) >= threshold;
  y[i] = keep ? x[i] * scale : 0.0f;
}

} // namespace

extern "C" void lap_cuda_dropout(float *y, const float *x, int64_t n,
                                 float rate, uint64_t seed, int64_t key) {
  if (n <= 0)
    return;
  dropoutKernel<<<blocksFor(n), kBlock, 0, lap::cuda::stream()>>>(
      y, x, n, maskStream(seed, key), survivalThreshold(rate),
      survivorScale(rate));
  lap::cuda::checkLaunch("dropout");
}

extern "C" void lap_cuda_drop_path(float *y, const float *x, int64_t B,
                                   int64_t per_sample, float rate,
                                   uint64_t seed, int64_t key) {
  int64_t n = B * per_sample;
  if (n <= 0)
    return;
  dropPathKernel<<<blocksFor(n), kBlock, 0, lap::cuda::stream()>>>(
      y, x, n, per_sample, maskStream(seed, key), survivalThreshold(rate),
      survivorScale(rate));
  lap::cuda::checkLaunch("drop_path");
}
