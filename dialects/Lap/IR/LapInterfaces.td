//===- LapInterfaces.td - lap op interfaces ----------------*- tablegen -*-===//

#ifndef LAP_INTERFACES
#define LAP_INTERFACES

include "mlir/IR/OpBase.td"

def Lap_DifferentiableOpInterface : OpInterface<"DifferentiableOp"> {
  let description = [{
    An op that can build its own adjoint. Given the gradients of its results
    (a null value for a result whose gradient is zero), it builds ops that
    compute the gradients of its operands and returns them in operand order,
    with a null value for an operand that has no gradient (integer indices).
    `--lap-autodiff` builds `@train_step` from these.
  }];
  let cppNamespace = "::lap";
  let methods = [
    InterfaceMethod<
      "Builds the operand gradients from the result gradients.",
      "::llvm::LogicalResult", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGradients,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>
  ];
}

#endif // LAP_INTERFACES
