//===- Passes.h - lap to the target-neutral form ----------------*- C++ -*-===//

#ifndef LAP_COMPILER_CONVERSION_PASSES_H
#define LAP_COMPILER_CONVERSION_PASSES_H

#include "dialects/Lapk/IR/LapkDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace lap {

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace lap

#endif // LAP_COMPILER_CONVERSION_PASSES_H
