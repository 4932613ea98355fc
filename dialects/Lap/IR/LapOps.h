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

#endif // LAP_DIALECTS_LAP_IR_LAPOPS_H
