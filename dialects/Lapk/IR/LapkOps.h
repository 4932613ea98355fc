//===- LapkOps.h - lapk dialect ops -----------------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAPK_IR_LAPKOPS_H
#define LAP_DIALECTS_LAPK_IR_LAPKOPS_H

#include "dialects/Lapk/IR/LapkDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Lapk/IR/LapkOps.h.inc"

#endif // LAP_DIALECTS_LAPK_IR_LAPKOPS_H
