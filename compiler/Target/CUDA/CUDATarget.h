//===- CUDATarget.h - The CUDA target ---------------------------*- C++ -*-===//
//
// `lapc --target=cuda`: the kernel form lowered by --lapk-to-cuda, its
// loops as GPU kernels through the gpu dialect, NVVM and PTX to a fatbin of
// the sm_90 cubin (ptxas, at compile time) and the PTX, embedded in host
// code that calls the CUDA kernel library (runtime/kernels/cuda) and is
// linked into model.so.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_CUDA_CUDATARGET_H
#define LAP_COMPILER_TARGET_CUDA_CUDATARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

namespace lap {

/// The GPU architectures lapc compiles for (`--gpu`), the default first:
/// Hopper, then Ampere and Ada. The kernel library carries code for every
/// one (cmake/LapCUDA.cmake: sm_90 machine code, compute_80 and compute_90
/// PTX), and the PTX version the kernels use knows them all.
inline constexpr const char *kCudaArchs[] = {"sm_90", "sm_80", "sm_86", "sm_87",
                                             "sm_89"};
inline constexpr const char *kCudaPtxFeatures = "+ptx80";

/// The architecture `--gpu` names (the default when empty), or null, with
/// an error printed, when lapc does not compile for it.
const char *cudaArch(llvm::StringRef gpu);

/// The form of the GPU module's binary: PTX text, or a fatbin of the
/// architecture's cubin and the PTX (which the driver compiles for later
/// GPUs on load).
enum class GpuBinaryFormat { PTX, Fatbin };

/// After --lapk-to-cuda: the GPU module to NVVM and a binary of `format`
/// for GPU architecture `arch` ("sm_90").
void buildGpuModulePipeline(mlir::OpPassManager &pm, GpuBinaryFormat format,
                            llvm::StringRef arch);
/// The whole lowering of the kernel form: --lapk-to-cuda, the GPU module
/// to a fatbin for `arch` embedded in the host code, the host code to the
/// LLVM dialect.
void buildCUDALoweringPipeline(mlir::OpPassManager &pm, llvm::StringRef arch);

/// Prints the PTX of every GPU binary of `module` (after
/// buildGpuModulePipeline with GpuBinaryFormat::PTX).
mlir::LogicalResult printPTX(mlir::ModuleOp module, llvm::raw_ostream &os);

/// What the lowering needs registered in a context: the NVVM target and
/// the translations of the GPU module to LLVM IR.
void registerCUDADialects(mlir::DialectRegistry &registry);

/// Registers the target as `cuda`.
void registerCUDATarget();

} // namespace lap

#endif // LAP_COMPILER_TARGET_CUDA_CUDATARGET_H
