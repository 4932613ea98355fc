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
void buildLapPipeline(mlir::OpPassManager &pm, const LapPipelineOptions &options);

/// Registers the pipeline as `--lap-pipeline` for lap-opt.
void registerLapPipeline();

} // namespace lap

#endif // LAP_COMPILER_PIPELINES_PIPELINE_H
