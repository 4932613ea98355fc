//===- Manifest.h - The JSON manifest embedded in model.so ------*- C++ -*-===//
//
// What a host needs to drive a compiled model without MLIR: the resolved
// spec, the parameter table (names, shapes, offsets, init), the batch and
// output tensors, the compiled limits, the memory plan and the target the
// code was compiled for, with the features it needs. Documented in
// docs/abi.md; runtime/include/lap/model.h is the other half of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_MANIFEST_H
#define LAP_COMPILER_TARGET_MANIFEST_H

#include "dsl/Spec.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace lap {

/// The manifest of `module` (after --lap-plan-memory) compiled from `spec`
/// for the target that `target` describes (Target::describe).
std::string buildManifest(const dsl::Spec &spec, mlir::ModuleOp module,
                          llvm::json::Object target);

} // namespace lap

#endif // LAP_COMPILER_TARGET_MANIFEST_H
