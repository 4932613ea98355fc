//===- Device.h - CUDA devices visible to this process ----------*- C++ -*-===//
//
// Host-side view of the GPUs. Safe to call on machines without a driver or a
// device: the answer is then an empty list and the reason.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_CUDA_DEVICE_H
#define LAP_RUNTIME_CUDA_DEVICE_H

#include <cstddef>
#include <string>
#include <vector>

namespace lap::cuda {

/// One visible CUDA device.
struct GpuInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0; ///< Compute capability.
  size_t memoryBytes = 0;
};

/// The devices this process can use. When there are none, `whyNone` (if
/// given) receives the CUDA runtime's reason, e.g. "no CUDA-capable device
/// is detected".
std::vector<GpuInfo> visibleDevices(std::string *whyNone = nullptr);

} // namespace lap::cuda

#endif // LAP_RUNTIME_CUDA_DEVICE_H
