//===- ScratchSlots.h - Who uses which scratch memory -----------*- C++ -*-===//
//
// The slots of Context.h's scratch: a small integer naming each user, so
// that two kernels' scratch never alias. Apart from Context.h so that code
// the emulator also compiles (the plans over a Device, CudaDevice.h) names
// them without CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_SCRATCHSLOTS_H
#define LAP_RUNTIME_KERNELS_CUDA_SCRATCHSLOTS_H

namespace lap::cuda {

enum ScratchSlot : int {
  kGemmWorkspace = 0, ///< cuBLASLt's workspace
  kCrossEntropyChunk, ///< linear_cross_entropy's logits chunk
  kReductionPartials, ///< deterministic column sums' partial sums
  kAttentionScratch,  ///< attention backward's per-row terms
  kNewtonSchulz,      ///< Muon's orthogonalisation (Update.h)
  kBf16Result,        ///< a bf16 kernel's fp32 results before rounding
  kScratchSlots
};

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_SCRATCHSLOTS_H
