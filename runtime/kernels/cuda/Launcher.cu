//===- Launcher.cu - The GPU Launcher's library calls -------------*- CUDA -*-===//

#include "runtime/kernels/cuda/Launcher.h"

#include "runtime/kernels/cuda/ScratchSlots.h"

#include <cub/device/device_radix_sort.cuh>

namespace lap::cuda {

bool Launcher::sortPairs(const uint32_t *keysIn, uint32_t *keysOut,
                         const uint32_t *valuesIn, uint32_t *valuesOut,
                         int64_t n, int bits) const {
  if (n > INT_MAX) { // CUB's item count is an int
    fail("sort: more than 2^31 - 1 pairs");
    return false;
  }
  size_t bytes = 0;
  if (!check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keysIn, keysOut,
                                             valuesIn, valuesOut, int(n), 0,
                                             bits, stream()),
             "sort: storage size"))
    return false;
  void *storage = scratch(kSortStorage, bytes > 0 ? bytes : 1);
  return storage && check(cub::DeviceRadixSort::SortPairs(
                              storage, bytes, keysIn, keysOut, valuesIn,
                              valuesOut, int(n), 0, bits, stream()),
                          "sort");
}

bool Launcher::hopper() const { return hopperKernels(); }

} // namespace lap::cuda
