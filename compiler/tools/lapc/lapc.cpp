//===- lapc.cpp - The lap compiler driver -----------------------*- C++ -*-===//
//
// lapc SPEC [--emit=spec|mlir|train|lowered] [-o FILE] [MLIR pass-manager flags]
//
// Reads a model spec, verifies it, builds its IR and runs the pipeline as far
// as the requested stage, and prints that stage. Spec errors go
// through MLIR's SourceMgr diagnostics, so each one prints as
// `spec.yaml:LINE:COL: error: ...` with the line and a caret. Exit codes:
// 0 success, 2 bad input (the spec), 1 internal error.
// `--verify-diagnostics` checks the errors against `expected-error`
// comments in the spec instead, as mlir-opt does for IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/SpecToLap.h"
#include "compiler/Pipelines/Pipeline.h"
#include "dialects/Lap/Transforms/Passes.h"
#include "dsl/SpecParser.h"
#include "dsl/SpecPrinter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;

namespace {

enum ExitCode { Success = 0, InternalError = 1, BadInput = 2 };

/// The stages lapc can print, in pipeline order.
enum class Emit { Spec, MLIR, Train, Lowered };

cl::OptionCategory lapcCategory("lapc options");
cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<spec.yaml>"),
                                   cl::Required, cl::cat(lapcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(lapcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Spec),
    cl::values(clEnumValN(Emit::Spec, "spec",
                          "the resolved spec, with derived values"),
               clEnumValN(Emit::MLIR, "mlir",
                          "@forward in the lap dialect, as the front end builds it"),
               clEnumValN(Emit::Train, "train",
                          "@forward and @train_step (autodiff only)"),
               clEnumValN(Emit::Lowered, "lowered",
                          "after lap's pass pipeline (head kinds lowered, ...)")),
    cl::cat(lapcCategory));
cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check errors against 'expected-error' comments in the spec"),
    cl::init(false), cl::cat(lapcCategory));

/// Hands the front end's errors to MLIR's diagnostic engine.
void report(const lap::dsl::Diagnostics &diags, mlir::MLIRContext &context) {
  for (const lap::dsl::Diagnostic &d : diags.all()) {
    mlir::Location loc = mlir::FileLineColLoc::get(&context, d.loc.file,
                                                   d.loc.line, d.loc.col);
    mlir::emitError(loc) << d.message;
  }
}

/// Builds the IR for `spec`, runs the passes the requested stage needs and
/// prints the module.
ExitCode emitModule(const lap::dsl::Spec &spec, mlir::MLIRContext &context,
                    raw_ostream &os) {
  mlir::OwningOpRef<mlir::ModuleOp> module = lap::buildForward(spec, context);
  if (!module)
    return BadInput;
  if (mlir::failed(mlir::verify(*module))) {
    errs() << "lapc: internal error: the front end built invalid IR\n";
    return InternalError;
  }
  if (emitAction >= Emit::Train) {
    mlir::PassManager pm(&context);
    mlir::DefaultTimingManager timing;
    mlir::applyDefaultTimingManagerCLOptions(timing);
    mlir::TimingScope rootTiming = timing.getRootScope();
    pm.enableTiming(rootTiming);
    if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
      return BadInput;
    if (emitAction == Emit::Train)
      pm.addPass(lap::createLapAutodiff());
    else
      lap::buildLapPipeline(pm, lap::LapPipelineOptions());
    if (mlir::failed(pm.run(*module)))
      return InternalError;
  }
  module->print(os);
  return Success;
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

  lap::dsl::Diagnostics diags;
  std::optional<lap::dsl::Spec> spec = lap::dsl::loadSpec(inputFilename, diags);

  mlir::MLIRContext context;
  SourceMgr sourceMgr;
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
  if (!spec)
    return BadInput;

  std::string error;
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    errs() << "lapc: " << error << "\n";
    return BadInput;
  }
  switch (emitAction) {
  case Emit::Spec:
    output->os() << lap::dsl::printSpec(*spec);
    break;
  case Emit::MLIR:
  case Emit::Train:
  case Emit::Lowered:
    if (ExitCode code = emitModule(*spec, context, output->os()); code != Success)
      return code;
    break;
  }
  output->keep();
  return Success;
}
