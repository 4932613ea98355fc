//===- Pipeline.cpp - The production pass pipeline --------------*- C++ -*-===//

#include "compiler/Pipelines/Pipeline.h"

#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void lap::buildLapPipeline(mlir::OpPassManager &pm, const LapPipelineOptions &) {
  pm.addPass(createLapLowerHeadKinds());
  pm.addPass(createLapAutodiff());
  pm.addPass(createLapFuse());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void lap::registerLapPipeline() {
  mlir::PassPipelineRegistration<LapPipelineOptions>(
      "lap-pipeline", "lap's production pipeline, as lapc runs it",
      buildLapPipeline);
}
