//===- Pipeline.cpp - The production pass pipeline --------------*- C++ -*-===//

#include "compiler/Pipelines/Pipeline.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Memory/Passes.h"
#include "compiler/Target/CPU/CPUTarget.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void lap::buildLapPipeline(mlir::OpPassManager &pm,
                           const LapPipelineOptions &options) {
  pm.addPass(createLapLowerHeadKinds());
  pm.addPass(createLapAutodiff());
  pm.addPass(createLapFuse());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  // After CSE, which would merge the copies back.
  pm.addPass(createLapRematerialize());
  if (options.fuseEpilogues) {
    LapFuseEpiloguesOptions epilogues;
    epilogues.bf16 = options.fuseBf16Epilogues;
    pm.addPass(createLapFuseEpilogues(epilogues));
  }
  pm.addPass(createLapWidenKernels());
  if (options.fuseLoops) {
    LapFuseLoopsOptions fusion;
    fusion.biasesInLoops = options.biasesInLoops;
    pm.addPass(createLapFuseLoops(fusion));
  }
}

void lap::buildMemoryPlanPipeline(mlir::OpPassManager &pm,
                                  const CodegenOptions &options) {
  LapPlanMemoryOptions plan;
  plan.maxBatch = options.maxBatch;
  plan.maxSeq = options.maxSeq;
  pm.addPass(createLapPlanMemory(plan));
}

void lap::buildKernelPipeline(mlir::OpPassManager &pm,
                              const CodegenOptions &options) {
  LapToKernelsOptions lowering;
  lowering.profile = options.profile;
  pm.addPass(createLapToKernels(lowering));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void lap::registerLapPipeline() {
  mlir::PassPipelineRegistration<LapPipelineOptions>(
      "lap-pipeline", "lap's production pipeline, as lapc runs it",
      buildLapPipeline);
  mlir::PassPipelineRegistration<CodegenOptions>(
      "lap-kernels",
      "the memory plan and the kernel form, after --lap-pipeline",
      [](mlir::OpPassManager &pm, const CodegenOptions &options) {
        buildMemoryPlanPipeline(pm, options);
        buildKernelPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<>(
      "lap-cpu-lowering",
      "the CPU target's lowering of the kernel form to the LLVM dialect",
      buildCPULoweringPipeline);
  mlir::PassPipelineRegistration<CodegenOptions>(
      "lap-cpu-codegen", "lap's CPU code generation, after --lap-pipeline",
      [](mlir::OpPassManager &pm, const CodegenOptions &options) {
        buildMemoryPlanPipeline(pm, options);
        buildKernelPipeline(pm, options);
        buildCPULoweringPipeline(pm);
      });
}
