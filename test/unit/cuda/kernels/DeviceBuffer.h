//===- DeviceBuffer.h - Device copies of test tensors -----------*- C++ -*-===//
//
// CUDA kernel tests run a lap_cuda_ kernel and its CPU twin, lap_cpu_, on
// the same inputs and compare: these move the inputs to the device and the
// outputs back (the comparison: expectWithinScale, KernelTestSupport.h).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H
#define LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H

#include "runtime/kernels/cuda/Context.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace lap::test {

/// A device array of T, freed on destruction.
template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t count) : count(count) {
    EXPECT_EQ(cudaMalloc(&data, std::max<size_t>(count, 1) * sizeof(T)),
              cudaSuccess);
    cudaMemset(data, 0, std::max<size_t>(count, 1) * sizeof(T));
  }
  explicit DeviceBuffer(const std::vector<T> &host)
      : DeviceBuffer(host.size()) {
    cudaMemcpy(data, host.data(), host.size() * sizeof(T),
               cudaMemcpyHostToDevice);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { cudaFree(data); }

  T *get() const { return data; }
  operator T *() const { return data; }

  /// The contents, after every queued kernel has finished; fails the test
  /// if a kernel recorded a failure.
  std::vector<T> host() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::string failure = lap::cuda::takeFailure();
    EXPECT_TRUE(failure.empty()) << failure;
    std::vector<T> out(count);
    cudaMemcpy(out.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }

private:
  T *data = nullptr;
  size_t count;
};

} // namespace lap::test

#endif // LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H
