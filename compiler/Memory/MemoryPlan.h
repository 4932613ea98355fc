//===- MemoryPlan.h - The static memory plan, printed -----------*- C++ -*-===//

#ifndef LAP_COMPILER_MEMORY_MEMORYPLAN_H
#define LAP_COMPILER_MEMORY_MEMORYPLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace lap {

/// Bytes a `lap.attention` result needs beyond its output: the row
/// logsumexp [B, H, T] the backward reads.
int64_t attentionScratchBytes(mlir::Operation *attention, int64_t maxBatch,
                              int64_t maxSeq);

/// Prints the plan of every planned function (after --lap-plan-memory):
/// each intermediate's offset, size and live range, the workspace size, and
/// the peak bytes of a step (parameters, gradients, batch and workspace).
void printMemoryPlan(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace lap

#endif // LAP_COMPILER_MEMORY_MEMORYPLAN_H
