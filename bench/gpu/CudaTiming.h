//===- CudaTiming.h - What the GPU benchmarks share -------------*- C++ -*-===//
//
// Device memory and CUDA-event timing for lap-gpu-step-bench and
// lap-gpu-attention-bench.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_BENCH_GPU_CUDATIMING_H
#define LAP_BENCH_GPU_CUDATIMING_H

#include "runtime/kernels/Bf16.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace lap::bench {

inline void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(status));
}

/// A device allocation, freed on destruction.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) {
    check(cudaMalloc(&data, std::max<size_t>(bytes, 1)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(data); }
  void *data = nullptr;
};

/// `n` elements E (float, or lap_bf16's bits) of device memory, uniform in
/// [-1, 1] (a product of zeros runs faster than real data), or zeros.
template <typename E = float>
std::unique_ptr<DeviceBuffer> randomElements(int64_t n, std::mt19937 &rng,
                                             bool zero = false) {
  auto buffer = std::make_unique<DeviceBuffer>(size_t(n) * sizeof(E));
  std::vector<E> host(size_t(n), E(0));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  if (!zero)
    for (E &x : host) {
      if constexpr (std::is_same_v<E, float>)
        x = value(rng);
      else
        x = lap::bf16::bits(value(rng));
    }
  check(cudaMemcpy(buffer->data, host.data(), size_t(n) * sizeof(E),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  return buffer;
}

/// Milliseconds of each of `iters` runs of `body(i)` after `warmup`, by
/// events on `stream`, sorted.
template <typename F>
std::vector<double> timeRuns(cudaStream_t stream, int64_t warmup, int64_t iters,
                             F body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int64_t i = 0; i < warmup + iters; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    body(i);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "a timed run");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= warmup)
      ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms;
}

} // namespace lap::bench

#endif // LAP_BENCH_GPU_CUDATIMING_H
