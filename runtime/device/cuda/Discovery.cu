//===- Device.cu - CUDA devices visible to this process ---------*- C++ -*-===//

#include "runtime/device/cuda/Discovery.h"

#include <cuda_runtime.h>

using namespace lap::cuda;

std::vector<GpuInfo> lap::cuda::visibleDevices(std::string *whyNone) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  std::vector<GpuInfo> devices;
  if (status != cudaSuccess) {
    if (whyNone)
      *whyNone = cudaGetErrorString(status);
    cudaGetLastError(); // Clear the sticky error for later callers.
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
      continue;
    devices.push_back(
        {i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (devices.empty() && whyNone)
    *whyNone = "no CUDA device is visible";
  return devices;
}
