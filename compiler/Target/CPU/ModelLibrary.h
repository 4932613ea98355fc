//===- ModelLibrary.h - LLVM dialect to a native model.so -------*- C++ -*-===//
//
// The last steps of lapc: translate the LLVM-dialect module to LLVM IR,
// embed the manifest, optimise and emit an object for the chosen CPU (in
// process, through an LLVM TargetMachine), and link it with the kernel
// library and the ABI entry points into a shared library.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_CPU_MODELLIBRARY_H
#define LAP_COMPILER_TARGET_CPU_MODELLIBRARY_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
class raw_ostream;
} // namespace llvm

namespace lap {

/// The CPU lapc generates code for (`lapc --cpu`).
struct CPUTarget {
  /// LLVM's name of the CPU ("znver5", "x86-64-v3").
  std::string cpu;
  /// Its features: the host's for "native", else the CPU's own ("").
  std::string features;

  /// The target for `name`, an LLVM CPU name or "native" (the host); an
  /// error naming the closest known CPU, and nullopt, for another name.
  static std::optional<CPUTarget> lookup(llvm::StringRef name);
  /// The CPUs LLVM knows for this host's architecture.
  static std::vector<std::string> knownCPUs();

  std::unique_ptr<llvm::TargetMachine> machine() const;
  /// The instruction-set features of this CPU that lapc-run can check
  /// (runtime/platform/CpuFeatures.h), sorted.
  std::vector<std::string> checkableFeatures() const;
  /// The kernel library's baseline (LAP_KERNEL_CPU: x86-64-v3).
  static CPUTarget kernelBaseline();
};

/// LLVM IR of `module` (LLVM dialect) with `manifest` embedded as
/// `lap_gen_manifest`, optimised at -O3 for `target`.
std::unique_ptr<llvm::Module>
translateToOptimizedLLVMIR(mlir::ModuleOp module, const std::string &manifest,
                           const CPUTarget &target, llvm::LLVMContext &context);

/// Writes `module` as an object file for `target` to `os`.
mlir::LogicalResult emitObject(llvm::Module &module, const CPUTarget &target,
                               llvm::raw_ostream &os);

/// What a model library links besides the generated code: the runtime's
/// archives (in lapc's ../lib), the ABI's entry points and a kernel
/// library, and the system libraries those need.
struct RuntimeLibraries {
  std::string entry = "libLapModelEntry.a";
  std::string kernels = "libLapKernelsCPU.a";
  std::vector<std::string> system = {"-ldnnl", "-lhwy", "-lgomp"};
};

/// Links `module` (host code for `target`) into the shared library
/// `outputPath` with `libraries`. Errors go to llvm::errs().
mlir::LogicalResult linkModelLibrary(llvm::Module &module,
                                     const CPUTarget &target,
                                     const RuntimeLibraries &libraries,
                                     const std::string &outputPath,
                                     const char *argv0);

} // namespace lap

#endif // LAP_COMPILER_TARGET_CPU_MODELLIBRARY_H
