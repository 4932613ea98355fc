//===- DeviceBuffer.h - Device copies of test tensors -----------*- C++ -*-===//
//
// CUDA kernel tests run a lap_cuda_ kernel and its CPU twin, lap_cpu_, on
// the same inputs and compare: these move the inputs to the device and the
// outputs back, and compare them relative to the tensor's scale.
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

/// |got - want| <= tol * max |want| everywhere (NaN fails).
inline void expectClose(const std::vector<float> &got,
                        const std::vector<float> &want, double tol,
                        const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float v : want)
    scale = std::max(scale, std::fabs(double(v)));
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(double(got[i]) - double(want[i]));
    if (!(d <= worst)) {
      worst = std::isnan(d) ? INFINITY : d;
      at = i;
    }
  }
  EXPECT_LE(worst, tol * scale)
      << what << ": worst at " << at << ", " << got[at] << " vs " << want[at]
      << " (largest magnitude " << scale << ")";
}

} // namespace lap::test

#endif // LAP_TEST_UNIT_CUDA_KERNELS_DEVICEBUFFER_H
