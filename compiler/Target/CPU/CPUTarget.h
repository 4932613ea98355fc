//===- CPUTarget.h - The CPU target -----------------------------*- C++ -*-===//
//
// `lapc --target=cpu` (the default): the kernel form lowered by
// --lapk-to-cpu and MLIR's conversions to the LLVM dialect, compiled for
// the CPU `--cpu` names and linked with the CPU kernel library.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_CPU_CPUTARGET_H
#define LAP_COMPILER_TARGET_CPU_CPUTARGET_H

#include "mlir/Pass/PassManager.h"

namespace lap {

/// The kernel form to the LLVM dialect: --lapk-to-cpu, then MLIR's
/// conversions.
void buildCPULoweringPipeline(mlir::OpPassManager &pm);

/// Registers the target as `cpu`.
void registerCPUTarget();

} // namespace lap

#endif // LAP_COMPILER_TARGET_CPU_CPUTARGET_H
