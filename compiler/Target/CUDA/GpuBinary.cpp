//===- GpuBinary.cpp - The GPU module's binary in the host code -*- C++ -*-===//
//
// gpu-module-to-binary leaves `gpu.binary @lap_kernels` with one object:
// the fatbin of the architecture's cubin and the PTX (the library) or the
// PTX alone (lapc --emit=ptx). The fatbin becomes a global of the host
// code, which the runtime loads, with the architecture's name beside it;
// the PTX is printed.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CUDA/CUDATarget.h"
#include "compiler/Target/CUDA/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace lap {
#define GEN_PASS_DEF_LAPEMBEDGPUBINARY
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace lap

using namespace mlir;

namespace {

/// `binary`'s one object; null with an error otherwise.
FailureOr<gpu::ObjectAttr> onlyObject(gpu::BinaryOp binary) {
  if (binary.getObjects().size() != 1)
    return binary.emitError("expected one object in the GPU binary");
  return cast<gpu::ObjectAttr>(binary.getObjects()[0]);
}

/// The bytes of `binary`'s one object; null with an error otherwise.
FailureOr<StringRef> objectOf(gpu::BinaryOp binary) {
  FailureOr<gpu::ObjectAttr> object = onlyObject(binary);
  if (failed(object))
    return failure();
  return object->getObject().getValue();
}

struct LapEmbedGpuBinaryPass
    : lap::impl::LapEmbedGpuBinaryBase<LapEmbedGpuBinaryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto binary :
         llvm::make_early_inc_range(module.getOps<gpu::BinaryOp>())) {
      FailureOr<gpu::ObjectAttr> object = onlyObject(binary);
      if (failed(object))
        return signalPassFailure();
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object->getTarget());
      if (!target) {
        binary.emitError("expected an NVVM target on the GPU binary");
        return signalPassFailure();
      }
      StringRef bytes = object->getObject().getValue();
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      Location loc = binary.getLoc();
      auto image = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
      b.create<LLVM::GlobalOp>(loc, image, /*isConstant=*/true,
                               LLVM::Linkage::External, "lap_gen_cuda_image",
                               b.getStringAttr(bytes));
      b.create<LLVM::GlobalOp>(loc, b.getI64Type(), /*isConstant=*/true,
                               LLVM::Linkage::External,
                               "lap_gen_cuda_image_size",
                               b.getI64IntegerAttr(int64_t(bytes.size())));
      // The architecture it was compiled for ("sm_90"), NUL-terminated: the
      // runtime names it and finds the GPUs that run it.
      std::string arch = target.getChip().str();
      arch.push_back('\0');
      b.create<LLVM::GlobalOp>(
          loc, LLVM::LLVMArrayType::get(b.getI8Type(), arch.size()),
          /*isConstant=*/true, LLVM::Linkage::External, "lap_gen_cuda_arch",
          b.getStringAttr(arch));
      binary.erase();
    }
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace

LogicalResult lap::printPTX(ModuleOp module, llvm::raw_ostream &os) {
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    FailureOr<StringRef> ptx = objectOf(binary);
    if (failed(ptx))
      return failure();
    // MLIR 19 counts the PTX's terminating NUL as part of the text.
    os << ptx->rtrim(StringRef("\0", 1));
  }
  return success();
}
