//===- Passes.h - lap dialect passes ----------------------------*- C++ -*-===//

#ifndef LAP_DIALECTS_LAP_TRANSFORMS_PASSES_H
#define LAP_DIALECTS_LAP_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace lap {

#define GEN_PASS_DECL
#include "dialects/Lap/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Lap/Transforms/Passes.h.inc"

} // namespace lap

#endif // LAP_DIALECTS_LAP_TRANSFORMS_PASSES_H
