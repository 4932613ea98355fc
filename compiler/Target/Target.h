//===- Target.h - The targets lapc compiles for -----------------*- C++ -*-===//
//
// A target turns the kernel form (after --lap-to-kernels, the same for
// every target) into its own code and a model library: its passes, its
// entry in the manifest, its translation to LLVM IR and its link step.
// Each target lives in a folder of its own (compiler/Target/CPU) and is
// registered once, in Targets.cpp; `lapc --target=NAME` selects it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_TARGET_H
#define LAP_COMPILER_TARGET_TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace lap {

/// What lapc's command line says of the machine to generate code for.
struct TargetOptions {
  /// `--cpu`: the host CPU the code runs on ("native", "x86-64-v3", ...);
  /// empty when not given (the CPU target then compiles for this one).
  std::string cpu;
  /// `--gpu`: the GPU architecture ("sm_80", "sm_90"); empty when not given.
  std::string gpu;
};

class Target {
public:
  virtual ~Target() = default;
  /// Adds what the target's passes need registered in a context.
  virtual void registerDialects(mlir::DialectRegistry &registry) const {}
  /// Whether this lapc can make the target's code (--emit=target and
  /// beyond); false with an error printed when it cannot.
  virtual bool canGenerateCode() const { return true; }
  /// Whether linear layers' biases and bias gradients move into the
  /// generated loops around them (--lap-fuse-loops' biases-in-loops):
  /// where those loops add them in the pass they make anyway, rather than
  /// the GEMMs' own epilogues.
  virtual bool biasesInLoops() const { return true; }
  /// Whether a bf16 model's tanh GELU rides on its GEMMs as an f32
  /// model's does (--lap-fuse-epilogues' bf16): where the kernels' fused
  /// epilogues cost less than the generated GELU loops.
  virtual bool fusesBf16Epilogues() const { return false; }
  /// The passes from the kernel form to this target's code in MLIR.
  virtual void buildLowering(mlir::OpPassManager &pm) const = 0;
  /// The manifest's `target` object: the device and what the code needs.
  virtual llvm::json::Object describe() const = 0;
  /// Optimised LLVM IR of the lowered module, `manifest` embedded.
  virtual std::unique_ptr<llvm::Module>
  translate(mlir::ModuleOp lowered, const std::string &manifest,
            llvm::LLVMContext &context) const = 0;
  /// Links `module` into the model library at `path`; lapc's runtime
  /// libraries are found from `argv0`. Errors go to llvm::errs().
  virtual mlir::LogicalResult link(llvm::Module &module,
                                   const std::string &path,
                                   const char *argv0) const = 0;
};

/// A registered target: its `--target` name and how to make it (null, with
/// an error printed, for options it cannot take).
struct TargetInfo {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Target>(const TargetOptions &)> create;
};

void registerTarget(TargetInfo info);
/// The target called `name`, or null.
const TargetInfo *lookupTarget(llvm::StringRef name);
/// Every registered target, in registration order.
llvm::ArrayRef<TargetInfo> registeredTargets();

/// Registers every target lap has (Targets.cpp).
void registerAllTargets();

} // namespace lap

#endif // LAP_COMPILER_TARGET_TARGET_H
