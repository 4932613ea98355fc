//===- LapOps.h - lap dialect ops -------------------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAP_IR_LAPOPS_H
#define LAP_DIALECTS_LAP_IR_LAPOPS_H

#include "dialects/Lap/IR/LapDialect.h"
#include "dialects/Lap/IR/LapInterfaces.h"
#include "dialects/Lap/IR/LapTraits.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Lap/IR/LapOps.h.inc"

namespace lap {

/// Whether `op` may be part of a lap.fusion: an op whose result element
/// (row r, column j) needs only element (r, j) of its row-shaped operands,
/// column j of its [C] operands and, for the forward norms, statistics of
/// its input row; or a column sum over rows. Dropout and drop path are not (outside a training step
/// they are free aliases, inside one they call the kernel library).
bool isLoopFusible(mlir::Operation *op);

/// Whether the loop-fusible `op` needs whole rows (a norm's statistics).
bool isRowReduction(mlir::Operation *op);

/// The value whose rows [..., C] a loop-fusible op works on: its result,
/// or a column sum's operand.
mlir::Value rowsOf(mlir::Operation *op);

} // namespace lap

#endif // LAP_DIALECTS_LAP_IR_LAPOPS_H
