//===- Pipeline.h - The production pass pipeline ----------------*- C++ -*-===//
//
// The order of lap's passes lives here and only here: `lapc` runs it, and
// `lap-opt --lap-pipeline` runs the same function, so lit tests exercise the
// exact production pipeline. The stages: the lap dialect (buildLapPipeline),
// the memory plan, the target-neutral kernel form (buildKernelPipeline), then
// a target's own lowering (compiler/Target/<target>).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_PIPELINES_PIPELINE_H
#define LAP_COMPILER_PIPELINES_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace lap {

/// Options of the pipeline.
struct LapPipelineOptions : mlir::PassPipelineOptions<LapPipelineOptions> {
  Option<bool> fuseLoops{
      *this, "fuse-loops",
      llvm::cl::desc("Fuse elementwise ops and the norms they feed into one "
                     "loop nest (--lap-fuse-loops)"),
      llvm::cl::init(true)};
  Option<bool> fuseEpilogues{
      *this, "fuse-epilogues",
      llvm::cl::desc("Fuse a tanh GELU and its gradient into the GEMMs "
                     "around it (--lap-fuse-epilogues)"),
      llvm::cl::init(true)};
  Option<bool> fuseBf16Epilogues{
      *this, "fuse-bf16-epilogues",
      llvm::cl::desc("Fuse a bf16 model's GELU layers too (the target's "
                     "choice: Target::fusesBf16Epilogues)"),
      llvm::cl::init(false)};
  Option<bool> biasesInLoops{
      *this, "biases-in-loops",
      llvm::cl::desc("Move linear layers' biases and bias gradients into "
                     "the loops around them (the target's choice: "
                     "Target::biasesInLoops)"),
      llvm::cl::init(true)};
};

/// Adds lap's passes, in order, to `pm`.
void buildLapPipeline(mlir::OpPassManager &pm,
                      const LapPipelineOptions &options);

/// Options of code generation, for every target.
struct CodegenOptions : mlir::PassPipelineOptions<CodegenOptions> {
  Option<int64_t> maxBatch{*this, "max-batch",
                           llvm::cl::desc("Largest batch size"),
                           llvm::cl::init(0)};
  Option<int64_t> maxSeq{*this, "max-seq",
                         llvm::cl::desc("Largest sequence length"),
                         llvm::cl::init(0)};
  Option<bool> profile{*this, "profile",
                       llvm::cl::desc("Time every op of the generated code"),
                       llvm::cl::init(false)};
};

/// After buildLapPipeline: the memory plan.
void buildMemoryPlanPipeline(mlir::OpPassManager &pm,
                             const CodegenOptions &options);
/// After the memory plan: the target-neutral kernel form.
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const CodegenOptions &options);

/// Registers `--lap-pipeline`, `--lap-kernels` (the plan and the kernel
/// form, after --lap-pipeline), `--lap-cpu-lowering` (the CPU target's
/// lowering of the kernel form) and `--lap-cpu-codegen` (all three, after
/// --lap-pipeline) for lap-opt.
void registerLapPipeline();

} // namespace lap

#endif // LAP_COMPILER_PIPELINES_PIPELINE_H
