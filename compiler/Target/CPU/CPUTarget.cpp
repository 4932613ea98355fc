//===- CPUTarget.cpp - The CPU target ---------------------------*- C++ -*-===//

#include "compiler/Target/CPU/CPUTarget.h"
#include "compiler/Target/CPU/ModelLibrary.h"
#include "compiler/Target/CPU/Passes.h"
#include "compiler/Target/HostLowering.h"
#include "compiler/Target/Target.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

void lap::buildCPULoweringPipeline(OpPassManager &pm) {
  pm.addPass(createLapkToCPU());
  lap::buildHostToLLVMPipeline(pm);
}

namespace {

class CPU : public lap::Target {
public:
  explicit CPU(lap::CPUTarget cpu) : cpu(std::move(cpu)) {}

  void buildLowering(OpPassManager &pm) const override {
    lap::buildCPULoweringPipeline(pm);
  }

  llvm::json::Object describe() const override {
    lap::CPUTarget kernels = lap::CPUTarget::kernelBaseline();
    return llvm::json::Object{
        {"device", "cpu"},
        {"cpu", cpu.cpu},
        {"features", llvm::json::Array(cpu.checkableFeatures())},
        {"kernel_cpu", kernels.cpu},
        {"kernel_features", llvm::json::Array(kernels.checkableFeatures())}};
  }

  std::unique_ptr<llvm::Module>
  translate(ModuleOp lowered, const std::string &manifest,
            llvm::LLVMContext &context) const override {
    return lap::translateToOptimizedLLVMIR(lowered, manifest, cpu, context);
  }

  LogicalResult link(llvm::Module &module, const std::string &path,
                     const char *argv0) const override {
    return lap::linkModelLibrary(module, cpu, lap::RuntimeLibraries(), path,
                                 argv0);
  }

private:
  lap::CPUTarget cpu;
};

} // namespace

void lap::registerCPUTarget() {
  registerTarget(
      {"cpu", "this host's CPU, or the one --cpu names (the default)",
       [](const TargetOptions &options) -> std::unique_ptr<Target> {
         if (!options.gpu.empty()) {
           llvm::errs() << "lapc: error: --gpu names the GPU of "
                           "--target=cuda; the CPU target takes --cpu\n";
           return nullptr;
         }
         std::optional<CPUTarget> cpu =
             CPUTarget::lookup(options.cpu.empty() ? "native" : options.cpu);
         if (!cpu)
           return nullptr;
         return std::make_unique<CPU>(*cpu);
       }});
}
