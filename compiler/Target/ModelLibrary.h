//===- ModelLibrary.h - LLVM dialect to a native model.so -------*- C++ -*-===//
//
// The last steps of lapc: translate the LLVM-dialect module to LLVM IR,
// embed the manifest, optimise and emit an object for the host CPU (in
// process, through an LLVM TargetMachine), and link it with the kernel
// library and the ABI entry points into a shared library.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_MODELLIBRARY_H
#define LAP_COMPILER_TARGET_MODELLIBRARY_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class raw_ostream;
} // namespace llvm

namespace lap {

/// The host CPU lapc tunes code for ("znver5").
std::string hostCPU();

/// LLVM IR of `module` (LLVM dialect) with `manifest` embedded as
/// `lap_gen_manifest`, optimised at -O3 for the host CPU.
std::unique_ptr<llvm::Module> translateToOptimizedLLVMIR(
    mlir::ModuleOp module, const std::string &manifest, llvm::LLVMContext &context);

/// Writes `module` as a host object file to `os`.
mlir::LogicalResult emitObject(llvm::Module &module, llvm::raw_ostream &os);

/// Links `module` into the shared library `outputPath` with the runtime's
/// libraries (found next to lapc: ../lib). Errors go to llvm::errs().
mlir::LogicalResult linkModelLibrary(llvm::Module &module,
                                     const std::string &outputPath,
                                     const char *argv0);

} // namespace lap

#endif // LAP_COMPILER_TARGET_MODELLIBRARY_H
