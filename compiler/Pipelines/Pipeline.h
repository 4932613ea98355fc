//===- Pipeline.h - The production pass pipeline ----------------*- C++ -*-===//
//
// The order of lap's passes lives here and only here: `lapc` runs it, and
// `lap-opt --lap-pipeline` runs the same function, so lit tests exercise the
// exact production pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_PIPELINES_PIPELINE_H
#define LAP_COMPILER_PIPELINES_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace lap {

/// Options of the pipeline (none yet beyond the defaults).
struct LapPipelineOptions : mlir::PassPipelineOptions<LapPipelineOptions> {};

/// Adds lap's passes, in order, to `pm`.
void buildLapPipeline(mlir::OpPassManager &pm,
                      const LapPipelineOptions &options);

/// Options of the CPU code generation pipeline.
struct CPUCodegenOptions : mlir::PassPipelineOptions<CPUCodegenOptions> {
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

/// After buildLapPipeline: the memory plan, lap to loops and kernel calls,
/// and everything down to the LLVM dialect; the two halves below in turn.
void buildCPUCodegenPipeline(mlir::OpPassManager &pm,
                             const CPUCodegenOptions &options);
void buildMemoryPlanPipeline(mlir::OpPassManager &pm,
                             const CPUCodegenOptions &options);
void buildCPULoweringPipeline(mlir::OpPassManager &pm,
                              const CPUCodegenOptions &options);

/// Registers the pipelines as `--lap-pipeline` and `--lap-cpu-codegen` for
/// lap-opt.
void registerLapPipeline();

} // namespace lap

#endif // LAP_COMPILER_PIPELINES_PIPELINE_H
