//===- ModelLibrary.cpp - LLVM dialect to a native model.so -----*- C++ -*-===//

#include "compiler/Target/CPU/ModelLibrary.h"
#include "runtime/platform/CpuFeatures.h"
#include "runtime/platform/Files.h"
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
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
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

/// The size of the file `path`; 0 when it has none.
uint64_t fileBytes(const Twine &path) {
  uint64_t bytes = 0;
  return llvm::sys::fs::file_size(path, bytes) ? 0 : bytes;
}

/// Every failure to put the library where it was asked for says so.
LogicalResult cannotWrite(StringRef path, const Twine &why) {
  llvm::errs() << "lapc: error: cannot write " << path << ": " << why << "\n";
  return failure();
}

/// Closes `os`, a file lapc wrote, naming it when a write failed.
LogicalResult closeWritten(llvm::raw_fd_ostream &os, StringRef path) {
  os.close();
  if (!os.has_error())
    return success();
  std::error_code error = os.error();
  os.clear_error();
  return cannotWrite(path, error.message());
}

/// The OS's reason in the linker's messages when it could not write its
/// output ("No space left on device"), else "".
std::string outputFailure(StringRef messages) {
  for (StringRef marker :
       {"IO failure on output stream: ", "failed to write output '",
        "cannot open output file "}) {
    size_t at = messages.find(marker);
    if (at == StringRef::npos)
      continue;
    StringRef rest = messages.substr(at + marker.size());
    rest = rest.take_until([](char c) { return c == '\n'; });
    if (!marker.ends_with(": ")) // after the file's name
      rest = rest.split(": ").second;
    return rest.trim().str();
  }
  return "";
}

/// The linker's messages without a crash report's stack dump.
std::string withoutStackDump(StringRef messages) {
  std::string kept;
  SmallVector<StringRef> lines;
  messages.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    StringRef t = line.ltrim();
    if (t.starts_with("#") || t.starts_with("Stack dump:") ||
        t.starts_with("PLEASE submit") || t.starts_with("0.\tProgram"))
      continue;
    kept += line.str() + "\n";
  }
  return kept;
}

/// Runs the linker driver `program` with `args`, its output kept apart; on
/// failure a message that names `output` and, when the library could not be
/// written (the linker says why, or fewer than `needed` bytes are free in
/// `outputDir`), the OS's reason rather than the linker's messages.
LogicalResult runLinker(StringRef program, ArrayRef<StringRef> args,
                        StringRef output, StringRef outputDir,
                        uint64_t needed) {
  llvm::SmallString<128> log;
  if (llvm::sys::fs::createTemporaryFile("lap-link", "log", log))
    return cannotWrite(output, "cannot create a temporary file");
  llvm::FileRemover removeLog(log);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects, 0,
                                     0, &error);
  std::string messages;
  if (auto text = llvm::MemoryBuffer::getFile(log))
    messages = (*text)->getBuffer().str();
  if (rc == 0) {
    llvm::errs() << messages; // warnings, if any
    return success();
  }
  std::string reason = outputFailure(messages);
  auto space = llvm::sys::fs::disk_space(outputDir);
  if (reason.empty() && space && space->available < needed)
    reason = "No space left on device";
  if (!reason.empty())
    return cannotWrite(output, reason);
  llvm::errs() << "lapc: error: linking " << output << " failed (" << program
               << (rc < 0 ? " did not finish" : " exit " + std::to_string(rc))
               << (error.empty() ? "" : ": " + error) << ")\n"
               << withoutStackDump(messages);
  return failure();
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
    if (ec)
      return cannotWrite(object, ec.message());
    if (failed(emitObject(module, target, os)) ||
        failed(closeWritten(os, object)))
      return failure();
    llvm::raw_fd_ostream map(exports, ec);
    if (ec)
      return cannotWrite(exports, ec.message());
    // Only the ABI is exported: kernels and generated code stay private.
    map << "{ global: lap_model_*; local: *; };\n";
    if (failed(closeWritten(map, exports)))
      return failure();
  }
  auto driver = llvm::sys::findProgramByName(LAP_LINK_DRIVER);
  if (!driver) {
    llvm::errs() << "lapc: the linker driver " << LAP_LINK_DRIVER
                 << " is not installed\n";
    return failure();
  }

  // The library is linked beside `outputPath` and renamed over it: a failed
  // link leaves the file that was there, and a symbolic link there is
  // replaced, never written through. A device or FIFO there (-o /dev/null)
  // gets the library's bytes instead, linked in the temporary directory.
  llvm::sys::fs::file_status status;
  llvm::sys::fs::status(outputPath, status, /*Follow=*/false);
  using llvm::sys::fs::file_type;
  const bool special = status.type() == file_type::character_file ||
                       status.type() == file_type::block_file ||
                       status.type() == file_type::fifo_file ||
                       status.type() == file_type::socket_file;
  llvm::SmallString<256> outputDir(outputPath);
  llvm::sys::path::remove_filename(outputDir);
  if (outputDir.empty())
    outputDir = ".";
  // At most the object and the runtime's archives end up in the library.
  uint64_t needed = fileBytes(object) + fileBytes(entry) + fileBytes(kernels);
  if (auto space = llvm::sys::fs::disk_space(outputDir);
      !special && space && space->available < needed)
    return cannotWrite(
        outputPath,
        llvm::formatv("No space left on device (the library needs up to {0} "
                      "MiB; {1} has {2} MiB free)",
                      (needed + (1 << 20) - 1) >> 20, outputDir,
                      space->available >> 20));
  llvm::SmallString<256> partial;
  if (std::error_code ec =
          special ? llvm::sys::fs::createTemporaryFile("lap-model", "so",
                                                       partial)
                  : llvm::sys::fs::createUniqueFile(
                        outputPath + ".lapc-%%%%%%", partial))
    return cannotWrite(outputPath, ec.message());
  llvm::FileRemover removePartial(partial);
  std::string versionScript = ("-Wl,--version-script=" + exports).str();
  // lld writes through a memory map unless told otherwise, and a full disk
  // then kills it with SIGBUS instead of an error.
  SmallVector<StringRef> args = {*driver,        "-shared",
                                 "-fuse-ld=lld", "-Wl,--no-mmap-output-file",
                                 "-o",           partial,
                                 object,         "-Wl,--whole-archive",
                                 entry,          "-Wl,--no-whole-archive",
                                 kernels};
  for (const std::string &flag : libraries.system)
    args.push_back(flag);
  args.append({"-Wl,-z,defs", "-Wl,--as-needed", versionScript});
  if (failed(runLinker(*driver, args, outputPath, outputDir, needed)))
    return failure();
  if (special) {
    auto linked = llvm::MemoryBuffer::getFile(partial);
    if (!linked)
      return cannotWrite(outputPath, linked.getError().message());
    std::string why = lap::platform::writeFileAtomically(
        outputPath, (*linked)->getBuffer(), std::nothrow);
    return why.empty() ? success() : cannotWrite(outputPath, why);
  }
  if (std::error_code ec = llvm::sys::fs::rename(partial, outputPath))
    return cannotWrite(outputPath, ec.message());
  removePartial.releaseFile();
  return success();
}
