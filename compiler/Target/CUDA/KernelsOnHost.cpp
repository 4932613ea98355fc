//===- KernelsOnHost.cpp - Generated GPU kernels run on the host ----------===//
//
// For tests (--lap-cuda-kernels-on-host, Passes.td): the kernels run on the
// CPU as the GPU would run their threads, one after another.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CUDA/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap {
#define GEN_PASS_DEF_LAPCUDAKERNELSONHOST
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace lap

using namespace mlir;

namespace {

/// Threads per block of a generated kernel's launch (CudaLaunch.cpp).
constexpr int64_t kLoopBlock = 256;

/// `kernel` as func.func @<name>(parameters..., blocks: index) at `b`.
LogicalResult runOnHost(gpu::GPUFuncOp kernel, OpBuilder &b) {
  WalkResult unsupported = kernel.walk([](Operation *op) {
    if (isa<gpu::BlockIdOp, gpu::ThreadIdOp, gpu::BlockDimOp, gpu::GridDimOp,
            gpu::ReturnOp, gpu::GPUFuncOp>(op) ||
        !isa<gpu::GPUDialect, NVVM::NVVMDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitError("a kernel whose threads run together (")
        << op->getName() << ") does not run on the host";
    return WalkResult::interrupt();
  });
  if (unsupported.wasInterrupted() || !kernel.getBody().hasOneBlock())
    return failure();
  Location loc = kernel.getLoc();
  SmallVector<Type> parameters(kernel.getArgumentTypes());
  parameters.push_back(b.getIndexType());
  auto host = b.create<func::FuncOp>(loc, kernel.getName(),
                                     b.getFunctionType(parameters, {}));
  Block *entry = host.addEntryBlock();
  OpBuilder in = OpBuilder::atBlockBegin(entry);
  Value zero = in.create<arith::ConstantIndexOp>(loc, 0);
  Value one = in.create<arith::ConstantIndexOp>(loc, 1);
  Value width = in.create<arith::ConstantIndexOp>(loc, kLoopBlock);
  Value blocks = entry->getArguments().back();
  auto overBlocks = in.create<scf::ForOp>(loc, zero, blocks, one);
  OpBuilder inBlock = OpBuilder::atBlockBegin(overBlocks.getBody());
  auto overThreads = inBlock.create<scf::ForOp>(loc, zero, width, one);
  OpBuilder inThread = OpBuilder::atBlockBegin(overThreads.getBody());
  IRMapping map;
  for (auto [from, to] :
       llvm::zip(kernel.getArguments(), entry->getArguments()))
    map.map(from, to);
  for (Operation &op : kernel.getBody().front()) {
    Value as =
        llvm::TypeSwitch<Operation *, Value>(&op)
            .Case([&](gpu::BlockIdOp) { return overBlocks.getInductionVar(); })
            .Case(
                [&](gpu::ThreadIdOp) { return overThreads.getInductionVar(); })
            .Case([&](gpu::BlockDimOp) { return width; })
            .Case([&](gpu::GridDimOp) { return blocks; })
            .Default([](Operation *) { return Value(); });
    if (as)
      map.map(op.getResult(0), as);
    else if (!isa<gpu::ReturnOp>(op))
      inThread.clone(op, map);
  }
  in.create<func::ReturnOp>(loc);
  return success();
}

struct KernelsOnHost : lap::impl::LapCudaKernelsOnHostBase<KernelsOnHost> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module.lookupSymbol<gpu::GPUModuleOp>("lap_kernels");
    if (!kernels) {
      module.emitError("no gpu.module @lap_kernels: run --lapk-to-cuda first");
      return signalPassFailure();
    }
    // The host code, and the runtime it calls.
    for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (f.getName().starts_with("lap_gen_") ||
          f.getName().starts_with("lap_cuda_"))
        f.erase();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
      if (Operation *declared = module.lookupSymbol(kernel.getName()))
        declared->erase();
      if (failed(runOnHost(kernel, b)))
        return signalPassFailure();
    }
    kernels.erase();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace
