//===- LapDialect.h - The lap dialect ---------------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAP_IR_LAPDIALECT_H
#define LAP_DIALECTS_LAP_IR_LAPDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Lap/IR/LapOpsDialect.h.inc"

namespace lap {

/// On a module: the precision its matrix products take their operands in,
/// "fp32" (also when absent) or "bf16" (train.matmul_precision); lowered
/// to the GEMM kernels' lap_matmul argument.
constexpr llvm::StringLiteral kMatmulPrecisionAttr = "lap.matmul_precision";

} // namespace lap

#endif // LAP_DIALECTS_LAP_IR_LAPDIALECT_H
