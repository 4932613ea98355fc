//===- CUDATarget.cpp - The CUDA target -------------------------*- C++ -*-===//

#include "compiler/Target/CUDA/CUDATarget.h"
#include "compiler/Target/CPU/ModelLibrary.h"
#include "compiler/Target/CUDA/Passes.h"
#include "compiler/Target/HostLowering.h"
#include "compiler/Target/Target.h"
#include "dsl/Suggest.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/Module.h"

using namespace mlir;

const char *lap::cudaArch(llvm::StringRef gpu) {
  if (gpu.empty())
    return kCudaArchs[0];
  std::vector<std::string_view> names;
  for (const char *arch : kCudaArchs) {
    if (gpu == arch)
      return arch;
    names.push_back(arch);
  }
  llvm::errs() << "lapc: error: --gpu=" << gpu << ": lapc compiles for "
               << dsl::listChoices(names)
               << " (compute capability 8.0 and later; GPUs after Hopper run "
                  "sm_90's PTX)"
               << dsl::didYouMean(gpu.str(), names) << "\n";
  return nullptr;
}

void lap::buildGpuModulePipeline(OpPassManager &pm, GpuBinaryFormat format,
                                 llvm::StringRef arch) {
  GpuNVVMAttachTargetOptions target;
  target.chip = arch.str();
  target.features = kCudaPtxFeatures;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertSCFToCFPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  // Kernels take their buffers as plain pointers, as the host passes them.
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = 64;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  // libdevice (sqrt, rsqrt) and ptxas come from the toolkit lapc was built
  // with; without one, PTX can still be printed (its libdevice calls then
  // stay external).
  binary.toolkitPath = LAP_CUDA_TOOLKIT;
  binary.compilationTarget = format == GpuBinaryFormat::PTX ? "isa" : "fatbin";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void lap::buildCUDALoweringPipeline(OpPassManager &pm, llvm::StringRef arch) {
  pm.addPass(createLapkToCUDA());
  buildGpuModulePipeline(pm, GpuBinaryFormat::Fatbin, arch);
  pm.addPass(createLapEmbedGpuBinary());
  buildHostToLLVMPipeline(pm);
}

void lap::registerCUDADialects(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

namespace {

class CUDA : public lap::Target {
public:
  explicit CUDA(const char *arch) : arch(arch) {}

  void registerDialects(DialectRegistry &registry) const override {
    lap::registerCUDADialects(registry);
  }

  // The fatbin needs ptxas, fatbinary and libdevice, the library CUDA's
  // libraries.
  bool canGenerateCode() const override {
    if (*LAP_CUDA_TOOLKIT)
      return true;
    llvm::errs() << "lapc: error: this lapc was built without CUDA, so it "
                    "cannot build CUDA code (--emit=gpu and --emit=ptx work "
                    "without it)\n";
    return false;
  }

  // cuBLASLt's epilogues add a bias and its gradient as the GEMM writes;
  // in a generated loop a bias gradient is a column sum whose row chunks
  // (64 at most) would each be one GPU thread.
  bool biasesInLoops() const override { return false; }

  // cuBLASLt applies the GELU and its slope as it writes a bf16 result:
  // no kernel of their own.
  bool fusesBf16Epilogues() const override { return true; }

  void buildLowering(OpPassManager &pm) const override {
    lap::buildCUDALoweringPipeline(pm, arch);
  }

  // The host code runs on any CPU lap's kernels run on.
  llvm::json::Object describe() const override {
    lap::CPUTarget host = lap::CPUTarget::kernelBaseline();
    std::vector<std::string> features = host.checkableFeatures();
    return llvm::json::Object{{"device", "cuda"},
                              {"arch", arch},
                              {"cpu", host.cpu},
                              {"features", llvm::json::Array(features)},
                              {"kernel_cpu", host.cpu},
                              {"kernel_features", llvm::json::Array(features)}};
  }

  std::unique_ptr<llvm::Module>
  translate(ModuleOp lowered, const std::string &manifest,
            llvm::LLVMContext &context) const override {
    return lap::translateToOptimizedLLVMIR(
        lowered, manifest, lap::CPUTarget::kernelBaseline(), context);
  }

  LogicalResult link(llvm::Module &module, const std::string &path,
                     const char *argv0) const override {
    lap::RuntimeLibraries libraries;
    libraries.entry = "libLapModelEntryCUDA.a";
    libraries.kernels = "libLapKernelsCUDA.a";
    libraries.system = {std::string("-L") + LAP_CUDA_LIBRARY_DIR,
                        std::string("-Wl,-rpath,") + LAP_CUDA_LIBRARY_DIR,
                        "-lcublasLt", "-lcudart"};
    return lap::linkModelLibrary(module, lap::CPUTarget::kernelBaseline(),
                                 libraries, path, argv0);
  }

private:
  const char *arch; ///< the GPU architecture ("sm_90")
};

} // namespace

void lap::registerCUDATarget() {
  registerTarget(
      {"cuda",
       std::string("NVIDIA GPUs: ") + kCudaArchs[0] +
           " (Hopper) by default, --gpu=sm_80 (Ampere), sm_86, sm_87 or "
           "sm_89 (Ada); the host code runs on any x86-64-v3 CPU",
       [](const TargetOptions &options) -> std::unique_ptr<Target> {
         if (!options.cpu.empty()) {
           llvm::errs() << "lapc: error: --cpu names the CPU of --target=cpu; "
                           "a CUDA library's host code runs on any x86-64-v3 "
                           "CPU\n";
           return nullptr;
         }
         const char *arch = cudaArch(options.gpu);
         if (!arch)
           return nullptr;
         return std::make_unique<CUDA>(arch);
       }});
}
