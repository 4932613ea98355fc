//===- DeviceBuffer.h - Device copies of test tensors -----------*- C++ -*-===//
//
// CUDA kernel tests run a lap_cuda_ kernel and its CPU twin, lap_cpu_, on
// the same inputs and compare: these move the inputs to the device and the
// outputs back (the comparison: expectWithinScale, KernelTestSupport.h).
// Built for the emulator (LAP_CUDA_EMULATOR, test/unit/cuda/emulator) the
// "device" memory is the host's, and the kernels run there.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H
#define LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H

#ifdef LAP_CUDA_EMULATOR
#include "test/unit/cuda/emulator/Emulator.h"
#else
#include "runtime/kernels/cuda/Context.h"

#include <cuda_runtime.h>
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace lap::test {

/// A device array of T, freed on destruction.
#ifdef LAP_CUDA_EMULATOR

template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t count)
      : data(std::max<size_t>(count, 1)), count(count) {}
  explicit DeviceBuffer(const std::vector<T> &host)
      : data(host.begin(), host.end()), count(host.size()) {
    data.resize(std::max<size_t>(count, 1));
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  T *get() const { return data.data(); }
  operator T *() const { return data.data(); }

  /// The contents; fails the test if a kernel recorded a failure.
  std::vector<T> host() const {
    std::string failure = lap::cuda::takeFailure();
    EXPECT_TRUE(failure.empty()) << failure;
    return std::vector<T>(data.begin(), data.begin() + count);
  }

private:
  mutable std::vector<T> data;
  size_t count;
};

#else

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

#endif

} // namespace lap::test

#endif // LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H
