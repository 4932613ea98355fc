//===- LapDialect.cpp - The lap dialect -------------------------*- C++ -*-===//

#include "dialects/Lap/IR/LapDialect.h"
#include "dialects/Lap/IR/LapOps.h"

#include "mlir/IR/BuiltinOps.h"

using namespace lap;

#include "dialects/Lap/IR/LapOpsDialect.cpp.inc"

void LapDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Lap/IR/LapOps.cpp.inc"
      >();
}

mlir::LogicalResult
LapDialect::verifyOperationAttribute(mlir::Operation *op,
                                     mlir::NamedAttribute attr) {
  if (attr.getName() != kMatmulPrecisionAttr)
    return mlir::success();
  if (!mlir::isa<mlir::ModuleOp>(op))
    return op->emitError() << "'" << kMatmulPrecisionAttr
                           << "' belongs on a module";
  auto value = mlir::dyn_cast<mlir::StringAttr>(attr.getValue());
  if (!value || (value != "fp32" && value != "bf16"))
    return op->emitError() << "'" << kMatmulPrecisionAttr
                           << "' must be \"fp32\" or \"bf16\"";
  return mlir::success();
}
