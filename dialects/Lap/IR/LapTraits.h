//===- LapTraits.h - Traits of every lap op ---------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAP_IR_LAPTRAITS_H
#define LAP_DIALECTS_LAP_IR_LAPTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace lap::OpTrait {

/// The rule of Lap_ElementTypes (LapDialect.td): float tensors of rank >= 1
/// share one element type, f32 or bf16; rank-0 float tensors and an
/// attention's coefficients are f32.
mlir::LogicalResult verifyElementTypes(mlir::Operation *op);

template <typename ConcreteType>
class ElementTypes
    : public mlir::OpTrait::TraitBase<ConcreteType, ElementTypes> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyElementTypes(op);
  }
};

/// Lowering policy (LapDialect.td): markers with nothing to verify.
template <typename ConcreteType>
class LoopFusible : public mlir::OpTrait::TraitBase<ConcreteType, LoopFusible> {
};
template <typename ConcreteType>
class Generated : public mlir::OpTrait::TraitBase<ConcreteType, Generated> {};
template <typename ConcreteType>
class BF16Kernel : public mlir::OpTrait::TraitBase<ConcreteType, BF16Kernel> {};

} // namespace lap::OpTrait

#endif // LAP_DIALECTS_LAP_IR_LAPTRAITS_H
