//===- LapDialect.h - The lap dialect ---------------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAP_IR_LAPDIALECT_H
#define LAP_DIALECTS_LAP_IR_LAPDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Lap/IR/LapOpsDialect.h.inc"

#endif // LAP_DIALECTS_LAP_IR_LAPDIALECT_H
