//===- LapkDialect.h - The lapk dialect -------------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAPK_IR_LAPKDIALECT_H
#define LAP_DIALECTS_LAPK_IR_LAPKDIALECT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Lapk/IR/LapkOpsDialect.h.inc"

namespace lap::lapk {

/// Marks a function of the kernel form that a target exposes as an entry
/// point of the model library; its value is the number of batch tensors,
/// whose buffers follow the parameters and the workspace and precede the
/// outputs'.
constexpr llvm::StringLiteral kEntryAttr = "lapk.entry";
/// On a generated scf.parallel: the fewest iterations worth a thread (or a
/// block) of their own.
constexpr llvm::StringLiteral kGrainAttr = "lapk.grain";

} // namespace lap::lapk

#endif // LAP_DIALECTS_LAPK_IR_LAPKDIALECT_H
