//===- CudaDevice.h - The kernels' plans on the GPU -------------*- CUDA -*-===//
//
// Kernel families written in DeviceCode.h's CUDA launch their kernels
// through plans over a Device (Attention.h, DecodeAttention.h, Norms.h,
// ColumnSums.h). A Device provides
//  - launch(kernel, grid, block, sharedBytes, what, args...), the grid and
//    block as dim3 or as counts (a row of blocks of threads): false if the
//    launch failed (recorded);
//  - floats(slot, n): n floats of scratch of the slot (ScratchSlots.h), or
//    null after recording why;
//  - fail(why): records the call's failure.
// CudaDevice is the GPU's: launches on the calling thread's stream,
// Context.h's scratch and failures. For .cu files only (it launches
// kernels). Built for the emulator (LAP_CUDA_EMULATOR: test/unit/cuda/
// emulator compiles those families' .cu files as host C++), it is the
// emulator's Device instead, so that the entry points themselves run on
// the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_CUDADEVICE_H
#define LAP_RUNTIME_KERNELS_CUDA_CUDADEVICE_H

#ifdef LAP_CUDA_EMULATOR

#include "test/unit/cuda/emulator/Emulator.h"

namespace lap::cuda {
using CudaDevice = lap::test::emulator::Device;
} // namespace lap::cuda

#else

#include "runtime/kernels/cuda/Context.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

namespace lap::cuda {

/// The Device of the kernels' plans on the GPU.
struct CudaDevice {
  /// Launches kernel on a grid of blocks with `bytes` of dynamic shared
  /// memory (opted in above the default 48 KiB) on the calling thread's
  /// stream; nothing for an empty grid. False when the launch failed
  /// (recorded).
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t bytes,
              const char *what, Args... args) const {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
      return true;
    if (bytes > 48 * 1024 &&
        !check(cudaFuncSetAttribute(kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(bytes)),
               what))
      return false;
    kernel<<<grid, block, bytes, stream()>>>(args...);
    return checkLaunch(what);
  }
  /// The same on a row of `blocks` blocks (beyond 2^31 - 1: a recorded
  /// failure).
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), int64_t blocks, int threads,
              size_t bytes, const char *what, Args... args) const {
    if (blocks > INT_MAX) {
      fail(std::string(what) + ": too many blocks");
      return false;
    }
    return launch(kernel, dim3(unsigned(blocks)), dim3(unsigned(threads)),
                  bytes, what, args...);
  }
  float *floats(int slot, int64_t n) const {
    return static_cast<float *>(
        scratch(slot, size_t(std::max<int64_t>(n, 1)) * sizeof(float)));
  }
  void fail(const std::string &why) const { lap::cuda::fail(why); }
};

} // namespace lap::cuda

#endif

#endif // LAP_RUNTIME_KERNELS_CUDA_CUDADEVICE_H
