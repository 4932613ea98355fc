//===- lap-opt.cpp - The lap optimizer driver -------------------*- C++ -*-===//
//
// mlir-opt for lap IR: parses, verifies, runs passes, prints. The lit tests
// of the dialect and its passes run through it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"
#include "compiler/Memory/Passes.h"
#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Target/CPU/Passes.h"
#include "compiler/Target/CUDA/CUDATarget.h"
#include "compiler/Target/CUDA/Passes.h"
#include "dialects/Lap/IR/LapDialect.h"
#include "dialects/Lap/Transforms/Passes.h"
#include "dialects/Lapk/IR/LapkDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  lap::registerLapPasses();
  lap::registerLapMemoryPasses();
  lap::registerLapConversionPasses();
  lap::registerLapTargetCPUPasses();
  lap::registerLapTargetCUDAPasses();
  lap::registerLapPipeline();
  mlir::DialectRegistry registry;
  registry.insert<lap::LapDialect, lap::lapk::LapkDialect,
                  mlir::memref::MemRefDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                  mlir::LLVM::LLVMDialect, mlir::scf::SCFDialect,
                  mlir::math::MathDialect>();
  lap::registerCUDADialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "lap optimizer driver\n", registry));
}
