//===- LapInterfaces.h - lap op interfaces ----------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAP_IR_LAPINTERFACES_H
#define LAP_DIALECTS_LAP_IR_LAPINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/Lap/IR/LapInterfaces.h.inc"

#endif // LAP_DIALECTS_LAP_IR_LAPINTERFACES_H
