//===- ScratchSlots.h - Who uses which scratch memory -----------*- C++ -*-===//
//
// The slots of Context.h's scratch: a small integer naming each user, so
// that two kernels' scratch never alias. Apart from Context.h so that code
// the emulator also compiles (the plans over a Launcher, Launcher.h) names
// them without CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_SCRATCHSLOTS_H
#define LAP_RUNTIME_KERNELS_CUDA_SCRATCHSLOTS_H

#include <cstddef>
#include <cstdint>

namespace lap::cuda {

enum ScratchSlot : int {
  kGemmWorkspace = 0, ///< cuBLASLt's workspace
  kCrossEntropyChunk, ///< linear_cross_entropy's logits chunk
  kReductionPartials, ///< deterministic column sums' partial sums
  kAttentionScratch,  ///< attention backward's per-row terms
  kNewtonSchulz,      ///< Muon's orthogonalisation (Update.h)
  kBf16Result,        ///< a bf16 kernel's fp32 results before rounding
  kSortStorage,       ///< a sort's temporary storage (Launcher.h)
  kScratchSlots
};

/// n elements of type T (at least one) of the slot's scratch from a Launcher
/// (Launcher.h), or null after the Launcher recorded why.
template <typename T, typename Launcher>
T *deviceScratch(const Launcher &device, ScratchSlot slot, int64_t n) {
  return static_cast<T *>(
      device.bytes(slot, size_t(n > 1 ? n : 1) * sizeof(T)));
}

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_SCRATCHSLOTS_H
