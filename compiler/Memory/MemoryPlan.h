//===- MemoryPlan.h - The static memory plan, printed -----------*- C++ -*-===//

#ifndef LAP_COMPILER_MEMORY_MEMORYPLAN_H
#define LAP_COMPILER_MEMORY_MEMORYPLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace lap {

/// Row chunks of a column sum: its partial sums [kColumnSumChunks, C] lie
/// after it in its slot.
constexpr int64_t kColumnSumChunks = 64;

/// Bytes a result needs in its slot beyond its own: the row logsumexp
/// [B, H, T] of a `lap.attention` output, which the backward reads; the
/// per-chunk partial sums of a column sum (a `lap.column_sum`, or a
/// `lap.fusion` result it yields).
int64_t scratchBytes(mlir::Value result, int64_t maxBatch, int64_t maxSeq);

/// Where that scratch begins in the slot: after the result's bytes, rounded
/// up to 16 (a bf16 result's bytes need not be a multiple of the fp32
/// scratch's element).
int64_t scratchOffset(mlir::Value result, int64_t maxBatch, int64_t maxSeq);

/// Prints the plan of every planned function (after --lap-plan-memory):
/// each intermediate's offset, size and live range, the workspace size, and
/// the peak bytes of a step (parameters, gradients, batch and workspace).
void printMemoryPlan(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace lap

#endif // LAP_COMPILER_MEMORY_MEMORYPLAN_H
