//===- CudaDevice.h - The kernels' plans on the GPU -------------*- CUDA -*-===//
//
// Kernel families written as plans over a Device (Attention.h,
// DecodeAttention.h) take this one in their .cu files: launches on the
// calling thread's stream, Context.h's scratch, failures recorded there.
// The emulator's Device (test/unit/cuda/emulator) runs the same plans on
// the CPU. For .cu files only (it launches kernels).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_CUDADEVICE_H
#define LAP_RUNTIME_KERNELS_CUDA_CUDADEVICE_H

#include "runtime/kernels/cuda/Context.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

namespace lap::cuda {

/// The Device of the kernels' plans on the GPU.
struct CudaDevice {
  /// Launches kernel on `blocks` blocks of `threads` with `bytes` of
  /// dynamic shared memory (opted in above the default 48 KiB) on the
  /// calling thread's stream; nothing for zero blocks. False when the launch
  /// failed (recorded).
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), int64_t blocks, int threads,
              size_t bytes, const char *what, Args... args) const {
    if (blocks == 0)
      return true;
    if (blocks > INT_MAX) {
      fail(std::string(what) + ": too many blocks");
      return false;
    }
    if (bytes > 48 * 1024 &&
        !check(cudaFuncSetAttribute(kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(bytes)),
               what))
      return false;
    kernel<<<unsigned(blocks), threads, bytes, stream()>>>(args...);
    return checkLaunch(what);
  }
  float *floats(int slot, int64_t n) const {
    return static_cast<float *>(
        scratch(slot, size_t(std::max<int64_t>(n, 1)) * sizeof(float)));
  }
  void fail(const std::string &why) const { lap::cuda::fail(why); }
};

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_CUDADEVICE_H
