//===- RowLaunch.h - A block row per output row -----------------*- CUDA -*-===//
//
// The launch of the row kernels (Tokens.h, Embedding.h): a block row per
// output row (blockIdx.x), threads over its columns (blockIdx.y chunks), so
// that each output element is one thread's.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ROWLAUNCH_H
#define LAP_RUNTIME_KERNELS_CUDA_ROWLAUNCH_H

#include "runtime/kernels/cuda/DeviceCode.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lap::cuda {

/// The launch of a kernel over rows x c elements: a block row per row.
struct RowLaunch {
  /// Threads per block at most.
  static constexpr int64_t kMaxThreads = 256;

  /// Launches kernel (Launcher.h) over rows x c elements with
  /// `sharedBytes` of dynamic shared memory; nothing when there are none.
  template <typename Launcher, typename Kernel, typename... Args>
  static void launch(const Launcher &device, Kernel kernel, int64_t rows,
                     int64_t c, size_t sharedBytes, const char *what,
                     Args... args) {
    if (rows == 0 || c == 0)
      return;
    const int64_t threads = std::min<int64_t>(kMaxThreads, (c + 31) / 32 * 32);
    device.launch(kernel,
                  dim3(unsigned(rows), unsigned((c + threads - 1) / threads)),
                  dim3(unsigned(threads)), sharedBytes, what, args...);
  }

  /// The column of the calling thread of a RowLaunch's kernel.
  __device__ static int64_t column() {
    return int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  }
};

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_ROWLAUNCH_H
