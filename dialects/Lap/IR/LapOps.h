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
/// its input row; or a column sum over rows. Dropout and drop path are not
/// (outside a training step they are free aliases, inside one they call the
/// kernel library). The ops say so by Lap_LoopFusible (LapDialect.td).
bool isLoopFusible(mlir::Operation *op);

/// Whether code generation makes `op` a loop of its own, at either
/// precision (the loop-fusible ops, fusions, the layout ops that move
/// heads, the head coefficients, splat constants), rather than a call of
/// the kernel library, whose kernels take f32 (`--lap-widen-kernels`)
/// unless hasBF16Kernel. The ops say so by Lap_Generated or
/// Lap_LoopFusible.
bool isGenerated(mlir::Operation *op);

/// Whether the kernel library computes `op` on bf16 tensors too (the
/// kernels of Kernels.def named `<kernel>_bf16`): Lap_BF16Kernel.
bool hasBF16Kernel(mlir::Operation *op);

/// Whether `op` has bf16 tensors but becomes a call of a kernel that takes
/// f32 only: what `--lap-widen-kernels` makes compute in f32.
bool needsWidening(mlir::Operation *op);

/// Whether the loop-fusible `op` needs whole rows (a norm's statistics).
bool isRowReduction(mlir::Operation *op);

/// The value whose rows [..., C] a loop-fusible op works on: its result,
/// or a column sum's operand.
mlir::Value rowsOf(mlir::Operation *op);

/// The entry points lapc builds: @forward (and its gradient @train_step) at
/// the compiled image size, and for a model trained on smaller crops too
/// (DINO's local views) @forward_local and @train_step_local.
inline constexpr llvm::StringLiteral kForwardFunctions[] = {"forward",
                                                            "forward_local"};
/// The gradient function autodiff derives from forward function `forward`.
inline std::string trainStepOf(llvm::StringRef forward) {
  return ("train_step" + forward.drop_front(llvm::StringRef("forward").size()))
      .str();
}
/// Whether the function named `name` is a training step.
inline bool isTrainStep(llvm::StringRef name) {
  return name == "train_step" || name == "train_step_local";
}

/// The side G of the patch grid of a static position table [keep + G*G, C];
/// 0 when the type is not one.
int64_t positionGridSide(mlir::Type table, int64_t keep);

} // namespace lap

#endif // LAP_DIALECTS_LAP_IR_LAPOPS_H
