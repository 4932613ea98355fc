//===- ModelLibrary.cpp - LLVM dialect to a native model.so -----*- C++ -*-===//

#include "compiler/Target/ModelLibrary.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace {

std::unique_ptr<llvm::TargetMachine> hostTargetMachine() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple(), error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    llvm::errs() << "lapc: " << error << "\n";
    return nullptr;
  }
  llvm::SubtargetFeatures features;
  for (auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature, enabled);
  llvm::TargetOptions options;
  options.UnsafeFPMath = false;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, lap::hostCPU(), features.getString(), options, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Runs `program` with `args`; false (and a message) when it fails.
bool run(StringRef program, ArrayRef<StringRef> args) {
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0, &error);
  if (rc == 0)
    return true;
  llvm::errs() << "lapc: linking failed (" << program << " exit " << rc << ")"
               << (error.empty() ? "" : ": " + error) << "\n";
  return false;
}

} // namespace

std::string lap::hostCPU() { return llvm::sys::getHostCPUName().str(); }

std::unique_ptr<llvm::Module>
lap::translateToOptimizedLLVMIR(ModuleOp module, const std::string &manifest,
                                llvm::LLVMContext &context) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "model");
  if (!llvmModule)
    return nullptr;
  auto machine = hostTargetMachine();
  if (!machine)
    return nullptr;
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple().getTriple());

  auto *text = llvm::ConstantDataArray::getString(context, manifest, true);
  new llvm::GlobalVariable(*llvmModule, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           "lap_gen_manifest");
  // Generated loops vectorise with the host's widest vectors.
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", machine->getTargetCPU());
    f.addFnAttr("target-features", machine->getTargetFeatureString());
  }
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error error = optimize(llvmModule.get())) {
    llvm::errs() << "lapc: LLVM optimisation failed: "
                 << llvm::toString(std::move(error)) << "\n";
    return nullptr;
  }
  return llvmModule;
}

LogicalResult lap::emitObject(llvm::Module &module, llvm::raw_ostream &os) {
  auto machine = hostTargetMachine();
  if (!machine)
    return failure();
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream bufferStream(buffer);
  llvm::legacy::PassManager pm;
  if (machine->addPassesToEmitFile(pm, bufferStream, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    llvm::errs() << "lapc: the target cannot emit object files\n";
    return failure();
  }
  pm.run(module);
  os << buffer;
  return success();
}

LogicalResult lap::linkModelLibrary(llvm::Module &module,
                                    const std::string &outputPath,
                                    const char *argv0) {
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&lap::hostCPU));
  llvm::SmallString<256> libDir(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(libDir, "lib");
  llvm::SmallString<256> entry(libDir), kernels(libDir);
  llvm::sys::path::append(entry, "libLapModelEntry.a");
  llvm::sys::path::append(kernels, "libLapKernelsCPU.a");
  for (StringRef lib : {entry.str(), kernels.str()})
    if (!llvm::sys::fs::exists(lib)) {
      llvm::errs() << "lapc: the runtime library " << lib
                   << " is missing (build the project, or install lapc with its lib/)\n";
      return failure();
    }

  llvm::SmallString<128> object, exports;
  if (llvm::sys::fs::createTemporaryFile("lap-model", "o", object) ||
      llvm::sys::fs::createTemporaryFile("lap-model", "map", exports)) {
    llvm::errs() << "lapc: cannot create temporary files\n";
    return failure();
  }
  llvm::FileRemover removeObject(object), removeExports(exports);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object, ec);
    if (ec || failed(emitObject(module, os)))
      return failure();
    llvm::raw_fd_ostream map(exports, ec);
    // Only the ABI is exported: kernels and generated code stay private.
    map << "{ global: lap_model_*; local: *; };\n";
  }
  auto driver = llvm::sys::findProgramByName(LAP_LINK_DRIVER);
  if (!driver) {
    llvm::errs() << "lapc: the linker driver " << LAP_LINK_DRIVER
                 << " is not installed\n";
    return failure();
  }
  std::string versionScript = ("-Wl,--version-script=" + exports).str();
  return success(run(*driver,
                     {*driver, "-shared", "-fuse-ld=lld", "-o", outputPath, object,
                      "-Wl,--whole-archive", entry, "-Wl,--no-whole-archive", kernels,
                      "-ldnnl", "-lgomp", "-Wl,-z,defs", "-Wl,--as-needed",
                      versionScript}));
}
