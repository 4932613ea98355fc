//===- ModelLibrary.cpp - LLVM dialect to a native model.so -----*- C++ -*-===//

#include "compiler/Target/CPU/ModelLibrary.h"
#include "runtime/platform/CpuFeatures.h"
#include "runtime/platform/Hash.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <set>

using namespace mlir;

namespace {

const llvm::Target *hostTarget(std::string &triple) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    llvm::errs() << "lapc: " << error << "\n";
  return target;
}

/// The subtarget of `cpu` with `features`, for its CPU list and features.
std::unique_ptr<llvm::MCSubtargetInfo> subtarget(StringRef cpu,
                                                 StringRef features) {
  std::string triple;
  const llvm::Target *target = hostTarget(triple);
  if (!target)
    return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target->createMCSubtargetInfo(triple, cpu, features));
}

/// Runs `program` with `args`; false (and a message) when it fails.
bool run(StringRef program, ArrayRef<StringRef> args) {
  std::string error;
  int rc =
      llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0, &error);
  if (rc == 0)
    return true;
  llvm::errs() << "lapc: linking failed (" << program << " exit " << rc << ")"
               << (error.empty() ? "" : ": " + error) << "\n";
  return false;
}

} // namespace

std::optional<lap::CPUTarget> lap::CPUTarget::lookup(StringRef name) {
  if (name == "native") {
    llvm::SubtargetFeatures features;
    for (auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature, enabled);
    return CPUTarget{llvm::sys::getHostCPUName().str(), features.getString()};
  }
  auto sti = subtarget("", "");
  if (!sti)
    return std::nullopt;
  if (sti->isCPUStringValid(name))
    return CPUTarget{name.str(), ""};
  std::string closest;
  unsigned best = ~0u;
  // Of equally close names the last, usually the newest (znver5, not znver1).
  for (const std::string &cpu : knownCPUs())
    if (unsigned d = name.edit_distance(cpu); d <= best)
      best = d, closest = cpu;
  llvm::errs() << "lapc: error: unknown CPU '" << name << "'";
  if (best <= std::max<size_t>(2, name.size() / 3))
    llvm::errs() << "; did you mean '" << closest << "'?";
  llvm::errs() << " (`lapc --cpu=help` lists the CPUs; `native` is this one, "
                  "`x86-64-v3` any with AVX2 and FMA)\n";
  return std::nullopt;
}

std::vector<std::string> lap::CPUTarget::knownCPUs() {
  std::vector<std::string> names;
  if (auto sti = subtarget("", ""))
    for (const llvm::SubtargetSubTypeKV &kv :
         sti->getAllProcessorDescriptions())
      names.push_back(kv.Key);
  return names;
}

std::unique_ptr<llvm::TargetMachine> lap::CPUTarget::machine() const {
  std::string triple;
  const llvm::Target *target = hostTarget(triple);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  options.UnsafeFPMath = false;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

std::vector<std::string> lap::CPUTarget::checkableFeatures() const {
  std::set<std::string> names;
  if (auto sti = subtarget(cpu, features))
    for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
      if (sti->getFeatureBits().test(kv.Value) &&
          lap::platform::isCheckableFeature(kv.Key))
        names.insert(kv.Key);
  return {names.begin(), names.end()};
}

lap::CPUTarget lap::CPUTarget::kernelBaseline() { return {LAP_KERNEL_CPU, ""}; }

std::unique_ptr<llvm::Module>
lap::translateToOptimizedLLVMIR(ModuleOp module, const std::string &manifest,
                                const CPUTarget &target,
                                llvm::LLVMContext &context) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "model");
  if (!llvmModule)
    return nullptr;
  auto machine = target.machine();
  if (!machine)
    return nullptr;
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple().getTriple());

  auto *text = llvm::ConstantDataArray::getString(context, manifest, true);
  new llvm::GlobalVariable(*llvmModule, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           "lap_gen_manifest");
  // The manifest's checksum, as code: an edit of the manifest's bytes in
  // model.so no longer matches it (lap_model_manifest_error).
  auto *i64 = llvm::Type::getInt64Ty(context);
  new llvm::GlobalVariable(
      *llvmModule, i64, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantInt::get(
          i64, lap::platform::contentHash64(manifest.data(), manifest.size())),
      "lap_gen_manifest_hash");
  // Generated loops vectorise with the target CPU's vectors.
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

LogicalResult lap::emitObject(llvm::Module &module, const CPUTarget &target,
                              llvm::raw_ostream &os) {
  auto machine = target.machine();
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
                                    const CPUTarget &target,
                                    const RuntimeLibraries &libraries,
                                    const std::string &outputPath,
                                    const char *argv0) {
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&lap::CPUTarget::knownCPUs));
  llvm::SmallString<256> libDir(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(libDir, "lib");
  llvm::SmallString<256> entry(libDir), kernels(libDir);
  llvm::sys::path::append(entry, libraries.entry);
  llvm::sys::path::append(kernels, libraries.kernels);
  for (StringRef lib : {entry.str(), kernels.str()})
    if (!llvm::sys::fs::exists(lib)) {
      llvm::errs()
          << "lapc: the runtime library " << lib
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
    if (ec || failed(emitObject(module, target, os)))
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
  SmallVector<StringRef> args = {*driver,
                                 "-shared",
                                 "-fuse-ld=lld",
                                 "-o",
                                 outputPath,
                                 object,
                                 "-Wl,--whole-archive",
                                 entry,
                                 "-Wl,--no-whole-archive",
                                 kernels};
  for (const std::string &flag : libraries.system)
    args.push_back(flag);
  args.append({"-Wl,-z,defs", "-Wl,--as-needed", versionScript});
  return success(run(*driver, args));
}
