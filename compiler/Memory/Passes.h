//===- Passes.h - The static memory plan ------------------------*- C++ -*-===//

#ifndef LAP_COMPILER_MEMORY_PASSES_H
#define LAP_COMPILER_MEMORY_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace lap {

#define GEN_PASS_DECL
#include "compiler/Memory/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Memory/Passes.h.inc"

} // namespace lap

#endif // LAP_COMPILER_MEMORY_PASSES_H
