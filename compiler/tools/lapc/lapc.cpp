//===- lapc.cpp - The lap compiler driver -----------------------*- C++ -*-===//
//
// lapc SPEC [--emit=spec|mlir|train|lowered|memory-plan|kernels|target|gpu|
//             ptx|llvm|so]
//      [-o FILE] [--target NAME] [--max-batch N] [--max-seq N] [--cpu NAME]
//      [MLIR pass-manager flags]
//
// Reads a model spec, verifies it, builds its IR and runs the pipeline as far
// as the requested stage, and prints that stage; `-o model.so` (or
// --emit=so) compiles the model into a shared library. Spec errors go
// through MLIR's SourceMgr diagnostics, so each one prints as
// `spec.yaml:LINE:COL: error: ...` with the line and a caret. Exit codes:
// 0 success, 2 bad input (the spec), 1 internal error.
// `--verify-diagnostics` checks the errors against `expected-error`
// comments in the spec instead, as mlir-opt does for IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/SpecToLap.h"
#include "compiler/Memory/MemoryPlan.h"
#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Target/CPU/ModelLibrary.h"
#include "compiler/Target/CUDA/CUDATarget.h"
#include "compiler/Target/CUDA/Passes.h"
#include "compiler/Target/Manifest.h"
#include "compiler/Target/Target.h"
#include "dialects/Lap/Transforms/Passes.h"
#include "dsl/SpecParser.h"
#include "dsl/SpecPrinter.h"
#include "dsl/Suggest.h"
#include "dsl/YamlTree.h"
#include "runtime/platform/Files.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;

namespace {

enum ExitCode { Success = 0, InternalError = 1, BadInput = 2 };

/// The stages lapc can print, in pipeline order.
enum class Emit {
  Sweep,
  Spec,
  MLIR,
  Train,
  Lowered,
  MemoryPlan,
  Kernels,
  TargetMLIR,
  CPUMLIR,
  GPU,
  PTX,
  LLVM,
  SO
};

cl::OptionCategory lapcCategory("lapc options");
// Optional only for --cpu=help, which needs no spec.
cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<spec.yaml>"),
                                   cl::cat(lapcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(lapcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Spec),
    cl::values(
        clEnumValN(Emit::Sweep, "sweep",
                   "the variants of a spec's sweep, each a resolved spec (-o "
                   "DIR writes DIR/<variant>.yaml and DIR/sweep.json)"),
        clEnumValN(Emit::Spec, "spec",
                   "the resolved spec, with derived values"),
        clEnumValN(Emit::MLIR, "mlir",
                   "@forward in the lap dialect, as the front end builds it"),
        clEnumValN(Emit::Train, "train",
                   "@forward and @train_step (autodiff only)"),
        clEnumValN(Emit::Lowered, "lowered",
                   "after lap's pass pipeline (head kinds lowered, ...)"),
        clEnumValN(Emit::MemoryPlan, "memory-plan",
                   "the static memory plan of forward and train_step"),
        clEnumValN(Emit::Kernels, "kernels",
                   "the target-neutral form: kernel calls and loops on "
                   "buffers"),
        clEnumValN(Emit::TargetMLIR, "target",
                   "the target's code in MLIR (the CPU's: the LLVM dialect)"),
        clEnumValN(Emit::CPUMLIR, "cpu", "--emit=target for --target=cpu"),
        clEnumValN(Emit::GPU, "gpu",
                   "--target=cuda: loops as GPU kernels (gpu.func) and the "
                   "host code that launches them"),
        clEnumValN(Emit::PTX, "ptx", "--target=cuda: the kernels' PTX"),
        clEnumValN(Emit::LLVM, "llvm",
                   "optimised LLVM IR for the target (the CPU --cpu names)"),
        clEnumValN(Emit::SO, "so",
                   "the model library (default when -o ends in .so)")),
    cl::cat(lapcCategory));
cl::opt<int64_t> maxBatch(
    "max-batch",
    cl::desc("Largest batch per call (default: the spec's micro_batch_size)"),
    cl::init(0), cl::cat(lapcCategory));
cl::opt<int64_t>
    maxSeq("max-seq",
           cl::desc("Largest sequence length (default: the spec's context)"),
           cl::init(0), cl::cat(lapcCategory));
cl::opt<std::string> targetName(
    "target",
    cl::desc("The target to compile for: cpu (the default); help lists them"),
    cl::value_desc("name"), cl::init("cpu"), cl::cat(lapcCategory));
cl::opt<std::string> targetCPU(
    "cpu",
    cl::desc("The CPU to generate code for: an LLVM CPU name (x86-64-v3: any "
             "CPU with AVX2 and FMA; znver4, ...), native (this one), or "
             "help (list them)"),
    cl::value_desc("name"), cl::init("native"), cl::cat(lapcCategory));
cl::opt<std::string> targetGPU(
    "gpu",
    cl::desc("--target=cuda: the GPU architecture to generate code for: "
             "sm_90 (Hopper, the default), sm_80 (Ampere), sm_86, sm_87 or "
             "sm_89 (Ada); later GPUs run the PTX of the library"),
    cl::value_desc("arch"), cl::cat(lapcCategory));
cl::opt<bool> profile(
    "profile",
    cl::desc("Time every op of the generated code; the process prints a "
             "profile when it exits"),
    cl::init(false), cl::cat(lapcCategory));
cl::opt<bool> fuseLoops(
    "fuse-loops",
    cl::desc("Compute chains of elementwise ops and the norms they feed as "
             "one loop nest (default on; --fuse-loops=false keeps one loop "
             "per op)"),
    cl::init(true), cl::cat(lapcCategory));
cl::opt<bool> fuseEpilogues(
    "fuse-epilogues",
    cl::desc("Compute a tanh GELU in the epilogue of the GEMM before it, and "
             "its gradient in the one after it (default on; "
             "--fuse-epilogues=false keeps them apart)"),
    cl::init(true), cl::cat(lapcCategory));
cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check errors against 'expected-error' comments in the spec"),
    cl::init(false), cl::cat(lapcCategory));

/// Hands the front end's errors to MLIR's diagnostic engine.
void report(const lap::dsl::Diagnostics &diags, mlir::MLIRContext &context) {
  for (const lap::dsl::Diagnostic &d : diags.all()) {
    mlir::Location loc =
        mlir::FileLineColLoc::get(&context, d.loc.file, d.loc.line, d.loc.col);
    mlir::emitError(loc) << d.message;
  }
}

/// Runs the passes `build` adds on `module`, with lapc's timing and MLIR's
/// command-line options: Success, BadInput for bad options, or `onFailure`
/// when a pass fails.
ExitCode runPasses(mlir::ModuleOp module,
                   llvm::function_ref<void(mlir::OpPassManager &)> build,
                   ExitCode onFailure) {
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope root = timing.getRootScope();
  mlir::PassManager pm(module.getContext());
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return BadInput;
  pm.enableTiming(root);
  build(pm);
  return mlir::succeeded(pm.run(module)) ? Success : onFailure;
}

/// The compiled maxima: flags, else the spec's micro batch and context (an
/// image model's sequence is fixed by its image size). False, with an error,
/// for a --max-seq the model cannot take.
bool setCodegenOptions(const lap::dsl::Spec &spec,
                       lap::CodegenOptions &options) {
  // Bounds that keep every size lapc computes from them far from overflow.
  constexpr int64_t kLargest = int64_t(1) << 30;
  for (auto [flag, value] :
       {std::pair<const char *, int64_t>{"--max-batch", maxBatch},
        {"--max-seq", maxSeq}})
    if (value < 0 || value > kLargest) {
      errs() << "lapc: error: " << flag << " " << value << " is outside 1.."
             << kLargest << "\n";
      return false;
    }
  int64_t micro = spec.train.microBatchSize ? spec.train.microBatchSize
                                            : spec.train.batchSize;
  options.maxBatch = maxBatch ? maxBatch : std::max<int64_t>(micro, 1);
  const lap::dsl::ModelSpec &m = spec.model;
  // A language model takes up to its context; an image model exactly its
  // tokens (patches, class token and registers, as the spec resolves them).
  int64_t tokens =
      m.family == lap::dsl::Family::GPT ? m.context : spec.derived.tokens;
  options.maxSeq = maxSeq ? maxSeq : std::max<int64_t>(tokens, 1);
  options.profile = bool(profile);
  if (m.family != lap::dsl::Family::GPT && maxSeq && maxSeq != tokens) {
    errs() << "lapc: error: --max-seq " << maxSeq
           << ": an image model's sequence is "
           << "fixed by its image size (" << tokens << " tokens)\n";
    return false;
  }
  bool learned = m.positions.type == lap::dsl::PositionType::Learned;
  if (m.family == lap::dsl::Family::GPT && learned &&
      options.maxSeq > m.context) {
    errs() << "lapc: error: --max-seq " << options.maxSeq << " is beyond the "
           << m.context << " learned positions (model.context)\n";
    return false;
  }
  return true;
}

/// Writes `text` to `path` ("-": stdout) all at once, replacing a link
/// there rather than writing through it; a failure names the file and the
/// OS's reason.
ExitCode writeOutput(const std::string &path, const std::string &text) {
  if (path == "-") {
    outs() << text;
    return Success;
  }
  std::string why =
      lap::platform::writeFileAtomically(path, text, std::nothrow);
  if (why.empty())
    return Success;
  errs() << "lapc: error: cannot write " << path << ": " << why << "\n";
  return InternalError;
}

/// --emit=sweep: every variant's resolved spec, to stdout as YAML documents,
/// or with -o DIR as DIR/<variant>.yaml and an index, DIR/sweep.json.
ExitCode emitSweep(const std::vector<lap::dsl::SpecVariant> &variants) {
  auto valuesOf = [](const lap::dsl::SpecVariant &v) {
    std::string text;
    for (const auto &[axis, value] : v.values)
      text += (text.empty() ? "" : ", ") + axis + " = " + value;
    return text.empty() ? std::string("no sweep") : text;
  };
  if (outputFilename == "-") {
    for (size_t i = 0; i < variants.size(); ++i)
      outs() << (i ? "---\n" : "") << "# variant " << i + 1 << " of "
             << variants.size() << ": " << valuesOf(variants[i]) << "\n"
             << lap::dsl::printSpec(variants[i].spec);
    return Success;
  }
  if (std::error_code ec = sys::fs::create_directories(outputFilename)) {
    errs() << "lapc: " << outputFilename << ": " << ec.message() << "\n";
    return BadInput;
  }
  auto write = [](const std::string &path, const std::string &text) {
    return writeOutput(path, text) == Success;
  };
  json::Array index;
  for (const lap::dsl::SpecVariant &v : variants) {
    std::string file = v.name + ".yaml";
    if (!write(outputFilename + "/" + file,
               "# " + valuesOf(v) + "\n" + lap::dsl::printSpec(v.spec)))
      return InternalError;
    json::Object values;
    json::Array axes;
    for (const auto &[axis, value] : v.values) {
      values[axis] = value;
      axes.push_back(axis);
    }
    index.push_back(json::Object{{"name", v.name},
                                 {"spec", file},
                                 {"axes", std::move(axes)},
                                 {"values", std::move(values)}});
  }
  std::string text = formatv(
      "{0:2}", json::Value(json::Object{{"variants", std::move(index)}}));
  if (!write(outputFilename + "/sweep.json", text + "\n"))
    return InternalError;
  outs() << "wrote " << variants.size() << " variants and sweep.json to "
         << outputFilename << "\n";
  return Success;
}

/// Builds the IR for `spec`, runs the passes the requested stage needs and
/// prints the stage (or, for .so, writes the library).
ExitCode emitModule(const lap::dsl::Spec &spec, const lap::Target &target,
                    mlir::MLIRContext &context, raw_ostream &os,
                    const std::string &outputPath, const char *argv0) {
  mlir::OwningOpRef<mlir::ModuleOp> module = lap::buildForward(spec, context);
  if (!module)
    return BadInput;
  if (mlir::failed(mlir::verify(*module))) {
    errs() << "lapc: internal error: the front end built invalid IR\n";
    return InternalError;
  }
  if (emitAction == Emit::MLIR) {
    module->print(os);
    return Success;
  }
  lap::CodegenOptions options;
  if (!setCodegenOptions(spec, options))
    return BadInput;
  ExitCode code = runPasses(
      *module,
      [&](mlir::OpPassManager &pm) {
        if (emitAction == Emit::Train)
          pm.addPass(lap::createLapAutodiff());
        else {
          lap::LapPipelineOptions pipeline;
          pipeline.fuseLoops = fuseLoops.getValue();
          pipeline.fuseEpilogues = fuseEpilogues.getValue();
          pipeline.fuseBf16Epilogues = target.fusesBf16Epilogues();
          pipeline.biasesInLoops = target.biasesInLoops();
          lap::buildLapPipeline(pm, pipeline);
        }
      },
      InternalError);
  if (code != Success)
    return code;
  if (emitAction <= Emit::Lowered) {
    module->print(os);
    return Success;
  }
  // The plan fails only on sizes the spec and the flags ask for: bad input.
  code = runPasses(
      *module,
      [&](mlir::OpPassManager &pm) {
        lap::buildMemoryPlanPipeline(pm, options);
      },
      BadInput);
  if (code != Success)
    return code;
  if (emitAction == Emit::MemoryPlan) {
    lap::printMemoryPlan(*module, os);
    return Success;
  }

  // The manifest reads the plan, which the kernel form replaces.
  std::string manifest = lap::buildManifest(spec, *module, target.describe());
  code = runPasses(
      *module,
      [&](mlir::OpPassManager &pm) { lap::buildKernelPipeline(pm, options); },
      InternalError);
  if (code != Success)
    return code;
  if (emitAction == Emit::Kernels) {
    module->print(os);
    return Success;
  }
  if (emitAction == Emit::GPU || emitAction == Emit::PTX) {
    code = runPasses(
        *module,
        [&](mlir::OpPassManager &pm) {
          pm.addPass(lap::createLapkToCUDA());
          if (emitAction == Emit::PTX)
            lap::buildGpuModulePipeline(pm, lap::GpuBinaryFormat::PTX,
                                        lap::cudaArch(targetGPU));
        },
        InternalError);
    if (code != Success)
      return code;
    if (emitAction == Emit::GPU)
      module->print(os);
    else if (mlir::failed(lap::printPTX(*module, os)))
      return InternalError;
    return Success;
  }
  if (!target.canGenerateCode())
    return BadInput;
  code = runPasses(
      *module, [&](mlir::OpPassManager &pm) { target.buildLowering(pm); },
      InternalError);
  if (code != Success)
    return code;
  if (emitAction == Emit::TargetMLIR || emitAction == Emit::CPUMLIR) {
    module->print(os);
    return Success;
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      target.translate(*module, manifest, llvmContext);
  if (!llvmModule)
    return InternalError;
  if (emitAction == Emit::LLVM) {
    llvmModule->print(os, nullptr);
    return Success;
  }
  if (outputPath == "-") {
    errs() << "lapc: a model library needs an output file: -o model.so\n";
    return BadInput;
  }
  return mlir::succeeded(target.link(*llvmModule, outputPath, argv0))
             ? Success
             : InternalError;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  // Show lapc's options and MLIR's (--mlir-print-ir-after-all, --mlir-timing,
  // ...) in --help; hide the LLVM backends' hundreds.
  cl::OptionCategory mlirCategory("MLIR options");
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (name.starts_with("mlir-"))
      option->addCategory(mlirCategory);
  cl::HideUnrelatedOptions({&lapcCategory, &mlirCategory});
  if (!cl::ParseCommandLineOptions(argc, argv, "lap compiler\n", &errs()))
    return BadInput;

  lap::registerAllTargets();
  if (targetName == "help") {
    for (const lap::TargetInfo &info : lap::registeredTargets())
      outs() << info.name << "  " << info.description << "\n";
    return Success;
  }
  if (targetCPU == "help") {
    for (const std::string &cpu : lap::CPUTarget::knownCPUs())
      outs() << cpu << "\n";
    return Success;
  }
  if (inputFilename.empty()) {
    errs() << "lapc: error: no spec given (usage: lapc SPEC [-o model.so]; "
              "lapc --help lists the options)\n";
    return BadInput;
  }
  const lap::TargetInfo *targetInfo = lap::lookupTarget(targetName);
  if (!targetInfo) {
    std::vector<std::string_view> names;
    for (const lap::TargetInfo &info : lap::registeredTargets())
      names.push_back(info.name);
    errs() << "lapc: error: unknown target '" << targetName << "'"
           << lap::dsl::didYouMean(targetName.getValue(), names)
           << " (lapc --target=help lists them)\n";
    return BadInput;
  }
  if (emitAction == Emit::CPUMLIR && targetInfo->name != "cpu") {
    errs() << "lapc: error: --emit=cpu is the CPU target's stage; use "
              "--emit=target\n";
    return BadInput;
  }
  if ((emitAction == Emit::GPU || emitAction == Emit::PTX) &&
      targetInfo->name != "cuda") {
    errs() << "lapc: error: --emit="
           << (emitAction == Emit::GPU ? "gpu" : "ptx")
           << " is a stage of the CUDA target: add --target=cuda\n";
    return BadInput;
  }
  if (profile && targetInfo->name != "cpu") {
    errs() << "lapc: error: --profile times the CPU target's code only\n";
    return BadInput;
  }
  lap::TargetOptions targetOptions;
  if (targetCPU.getNumOccurrences())
    targetOptions.cpu = targetCPU;
  targetOptions.gpu = targetGPU;
  std::unique_ptr<lap::Target> target = targetInfo->create(targetOptions);
  if (!target)
    return BadInput;

  lap::dsl::Diagnostics diags;
  std::optional<std::vector<lap::dsl::SpecVariant>> variants;
  std::optional<lap::dsl::Spec> spec;
  if (emitAction == Emit::Sweep)
    variants = lap::dsl::loadSweep(inputFilename, diags);
  else
    spec = lap::dsl::loadSpec(inputFilename, diags);

  mlir::DialectRegistry registry;
  target->registerDialects(registry);
  mlir::MLIRContext context(registry);
  SourceMgr sourceMgr;
  // The spec's text, for the lines of diagnostics: only a regular file of a
  // spec's size (the loader has refused anything else, and a FIFO or a
  // device would block or never end).
  uint64_t size = 0;
  if (sys::fs::is_regular_file(inputFilename) &&
      !sys::fs::file_size(inputFilename, size) &&
      size <= lap::dsl::TreeLimits().maxFileBytes)
    if (auto buffer = MemoryBuffer::getFile(inputFilename))
      sourceMgr.AddNewSourceBuffer(std::move(*buffer), SMLoc());

  if (verifyDiagnostics) {
    mlir::SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
    report(diags, context);
    return mlir::failed(handler.verify()) ? BadInput : Success;
  }
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  report(diags, context);
  if (diags.hasInternalError())
    return InternalError;
  if (emitAction == Emit::Sweep)
    return variants ? emitSweep(*variants) : BadInput;
  if (!spec)
    return BadInput;

  if (emitAction.getNumOccurrences() == 0 &&
      StringRef(outputFilename).ends_with(".so"))
    emitAction = Emit::SO;
  if (emitAction == Emit::Spec)
    return writeOutput(outputFilename, lap::dsl::printSpec(*spec));
  // A stage is printed to memory and written once it is whole; a library
  // is linked into place (linkModelLibrary).
  std::string text;
  raw_string_ostream os(text);
  if (ExitCode code =
          emitModule(*spec, *target, context, os, outputFilename, argv[0]);
      code != Success)
    return code;
  return emitAction == Emit::SO ? Success : writeOutput(outputFilename, text);
}
