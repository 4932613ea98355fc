//===- Pipeline.cpp - The production pass pipeline --------------*- C++ -*-===//

#include "compiler/Pipelines/Pipeline.h"

#include "compiler/Conversion/Passes.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void lap::buildLapPipeline(mlir::OpPassManager &pm,
                           const LapPipelineOptions &) {
  pm.addPass(createLapLowerHeadKinds());
  pm.addPass(createLapAutodiff());
  pm.addPass(createLapFuse());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void lap::buildMemoryPlanPipeline(mlir::OpPassManager &pm,
                                  const CPUCodegenOptions &options) {
  LapPlanMemoryOptions plan;
  plan.maxBatch = options.maxBatch;
  plan.maxSeq = options.maxSeq;
  pm.addPass(createLapPlanMemory(plan));
}

void lap::buildCPUCodegenPipeline(mlir::OpPassManager &pm,
                                  const CPUCodegenOptions &options) {
  buildMemoryPlanPipeline(pm, options);
  buildCPULoweringPipeline(pm, options);
}

void lap::buildCPULoweringPipeline(mlir::OpPassManager &pm,
                                   const CPUCodegenOptions &options) {
  LapToCPUOptions lowering;
  lowering.profile = options.profile;
  pm.addPass(createLapToCPU(lowering));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
}

void lap::registerLapPipeline() {
  mlir::PassPipelineRegistration<LapPipelineOptions>(
      "lap-pipeline", "lap's production pipeline, as lapc runs it",
      buildLapPipeline);
  mlir::PassPipelineRegistration<CPUCodegenOptions>(
      "lap-cpu-codegen", "lap's CPU code generation, after --lap-pipeline",
      buildCPUCodegenPipeline);
}
