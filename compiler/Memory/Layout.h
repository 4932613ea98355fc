//===- Layout.h - Where tensors live in a compiled model --------*- C++ -*-===//
//
// The facts that the memory plan, the lowering to kernels and the manifest
// must agree on: parameter offsets in the flat parameter buffer, the sizes of
// dynamic dimensions, and the attributes the plan leaves on the IR.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_MEMORY_LAYOUT_H
#define LAP_COMPILER_MEMORY_LAYOUT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace lap {

/// Byte alignment of every tensor (a cache line, an AVX-512 vector).
constexpr int64_t kTensorAlignment = 64;

/// Attribute names the memory plan writes.
constexpr llvm::StringLiteral kOffsetsAttr = "lap.offsets";
constexpr llvm::StringLiteral kWorkspaceAttr = "lap.workspace_bytes";
constexpr llvm::StringLiteral kMaxBatchAttr = "lap.max_batch";
constexpr llvm::StringLiteral kMaxSeqAttr = "lap.max_seq";

/// `lap.offsets` entries that are not workspace offsets.
constexpr int64_t kUnused = -1;
inline int64_t outputSlot(int64_t result) { return -2 - result; }
inline int64_t outputIndex(int64_t slot) { return -2 - slot; }

inline int64_t alignTo(int64_t bytes, int64_t alignment = kTensorAlignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// The size of dimension `i` of `type` at its largest: a dynamic dimension
/// 0 is the batch, a dynamic dimension 1 the sequence.
int64_t maxDimSize(mlir::ShapedType type, unsigned i, int64_t maxBatch,
                   int64_t maxSeq);

/// The most bytes one planned tensor or workspace may take: 256 TiB, more
/// than any machine has, and far enough from 2^63 that sums of planned
/// sizes cannot overflow.
constexpr int64_t kMaxPlannedBytes = int64_t(1) << 48;

/// Bytes of `type` at the largest batch and sequence; more than
/// kMaxPlannedBytes (not the exact count) when it is beyond that.
int64_t maxBytes(mlir::ShapedType type, int64_t maxBatch, int64_t maxSeq);

/// The buffer of a tensor of `type` in the kernel form: flat (1-D), of its
/// element type, with room for the largest batch and sequence.
mlir::MemRefType flatBufferType(mlir::Type type, int64_t maxBatch,
                                int64_t maxSeq);

/// Offsets (in floats, 16-float aligned) of the parameters of `func`, the
/// arguments marked `lap.parameter`, in argument order; `total` receives the
/// buffer's length in floats.
llvm::SmallVector<int64_t> parameterOffsets(mlir::func::FuncOp func,
                                            int64_t &total);

/// The model part an op belongs to ("blocks.0.attn"), from the name the
/// front end puts on its location; empty when there is none.
std::string partName(mlir::Location loc);

/// Whether argument `i` of `func` is a parameter.
bool isParameter(mlir::func::FuncOp func, unsigned i);

} // namespace lap

#endif // LAP_COMPILER_MEMORY_LAYOUT_H
