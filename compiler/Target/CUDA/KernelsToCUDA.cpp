//===- KernelsToCUDA.cpp - The kernel form to CUDA code ---------*- C++ -*-===//
//
// The CUDA target's decisions, and only those: generated loops become GPU
// kernels (gpu.func in one gpu.module) that the host enqueues through
// lap_cuda_launch, constants live on the device, kernels of the library are
// `lap_cuda_` symbols. What every target's host code shares (the ABI's
// signature, buffers and pointers, frames) is HostLowering's.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CUDA/IterationLanes.h"
#include "compiler/Target/CUDA/Passes.h"
#include "compiler/Target/CUDA/ThreadIterations.h"
#include "compiler/Target/HostLowering.h"
#include "dialects/Lapk/IR/LapkOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lap {
#define GEN_PASS_DEF_LAPKTOCUDA
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

constexpr llvm::StringLiteral kGpuModule = "lap_kernels";

class CUDALowering : HostLowering {
public:
  using HostLowering::HostLowering;

  LogicalResult run() {
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    kernels = b.create<gpu::GPUModuleOp>(module.getLoc(), kGpuModule);
    moveConstantsToDevice();

    SmallVector<func::FuncOp> functions = entries();
    for (func::FuncOp f : functions) {
      if (failed(wrapHostMemoryCode(f)))
        return failure();
      SmallVector<scf::ParallelOp> loops;
      for (auto loop : f.getBody().getOps<scf::ParallelOp>())
        loops.push_back(loop);
      int count = 0;
      for (scf::ParallelOp loop : loops)
        if (failed(outline(loop, f.getName(), count++)))
          return failure();
      passConstantsByDeviceAddress(f);
    }
    SmallVector<lapk::CallOp> calls;
    module.walk([&](lapk::CallOp call) { calls.push_back(call); });
    for (lapk::CallOp call : calls)
      lowerCall(call, "lap_cuda_");
    WalkResult profiled = module.walk([](Operation *op) {
      if (!isa<lapk::ProfileBeginOp, lapk::ProfileEndOp>(op))
        return WalkResult::advance();
      op->emitError("the CUDA target does not time ops (--profile)");
      return WalkResult::interrupt();
    });
    if (profiled.wasInterrupted())
      return failure();
    eraseUnusedNulls();
    for (func::FuncOp f : functions)
      exposeEntry(f);
    return success();
  }

private:
  //--- Constants ---------------------------------------------------------------
  /// The module's constants (head coefficients, ...) move into the GPU
  /// module, public so that the runtime finds them by name.
  void moveConstantsToDevice() {
    for (auto global :
         llvm::make_early_inc_range(module.getOps<memref::GlobalOp>())) {
      global->moveBefore(kernels.getBody(), kernels.getBody()->begin());
      global.setPublic();
    }
  }

  /// A constant the host hands to a kernel of the library goes at its
  /// device address; loops clone theirs into the kernel.
  void passConstantsByDeviceAddress(func::FuncOp f) {
    for (auto get : llvm::make_early_inc_range(
             f.getBody().getOps<memref::GetGlobalOp>())) {
      if (get->use_empty()) {
        get.erase();
        continue;
      }
      OpBuilder b(get);
      Location loc = get.getLoc();
      StringRef name = get.getName();
      Value address =
          b.create<func::CallOp>(
               loc,
               declare("lap_cuda_symbol",
                       FunctionType::get(context, {ptrType}, {ptrType})),
               ValueRange{cString(b, loc, ("lap_symbol_" + name).str(), name)})
              .getResult(0);
      get.replaceAllUsesWith(bufferAt(b, loc, get.getType(), address));
      get.erase();
    }
  }

  //--- Kernels ---------------------------------------------------------------
  /// Whether `op` reads or writes memory (a load, a store, a loop of them).
  static bool touchesMemory(Operation *op) {
    if (isa<lapk::CallOp, scf::ParallelOp, memref::ViewOp, memref::GetGlobalOp,
            lapk::NullOp>(op))
      return false;
    return !isMemoryEffectFree(op);
  }

  /// What the kernel form does with memory outside its parallel loops (the
  /// loss gradient's seed, a layer's learned head coefficients: a few
  /// stores; sequential loops) runs as a kernel of one iteration: the host
  /// touches no device memory. Each run of such ops, with the pure ops
  /// only they use, moves into one loop; a value read from memory and used
  /// after the run would have to come back to the host, and is refused.
  LogicalResult wrapHostMemoryCode(func::FuncOp f) {
    Block &body = f.getBody().front();
    SmallVector<Operation *> run;
    auto flush = [&]() -> LogicalResult {
      if (run.empty())
        return success();
      llvm::SetVector<Operation *> moved;
      for (Operation *op : llvm::reverse(run)) {
        bool usedOnlyInside = llvm::all_of(op->getUsers(), [&](Operation *u) {
          return moved.contains(f.getBody().findAncestorOpInRegion(*u));
        });
        if (touchesMemory(op) || (!op->use_empty() && usedOnlyInside))
          moved.insert(op);
      }
      for (Operation *op : moved)
        for (Operation *user : op->getUsers())
          if (!moved.contains(f.getBody().findAncestorOpInRegion(*user)))
            return op->emitError("the CUDA target reads no device memory "
                                 "on the host");
      OpBuilder b(run.back()->getBlock(), ++run.back()->getIterator());
      Location loc = run.front()->getLoc();
      Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
      Value one = b.create<arith::ConstantIndexOp>(loc, 1);
      auto loop = b.create<scf::ParallelOp>(loc, ValueRange{zero},
                                            ValueRange{one}, ValueRange{one});
      for (Operation *op : run)
        if (moved.contains(op))
          op->moveBefore(loop.getBody()->getTerminator());
      run.clear();
      return success();
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (touchesMemory(&op) ||
          (!run.empty() && isMemoryEffectFree(&op) &&
           !isa<scf::ParallelOp, memref::ViewOp, memref::GetGlobalOp>(op) &&
           !op.hasTrait<OpTrait::IsTerminator>())) {
        run.push_back(&op);
        continue;
      }
      if (failed(flush()))
        return failure();
    }
    return flush();
  }

  /// `loop` as kernel @<parent>_loop_<k>(values..., n): thread i of the
  /// grid runs iteration i < n, or, where its iterations walk rows, warp i
  /// or block i does (IterationLanes.h), or a thread runs several
  /// (ThreadIterations.h). Constants are cloned into it; the
  /// values it uses from above are its parameters (indices as i64), passed by
  /// the host in a frame.
  LogicalResult outline(scf::ParallelOp loop, StringRef parent, int k) {
    Location loc = loop.getLoc();
    if (loop.getNumLoops() != 1 || loop.getNumResults() != 0)
      return loop.emitError("a parallel loop of the kernel form has one "
                            "dimension and no results");
    SetVector<Value> captures;
    SmallVector<Operation *> cloned;
    valuesUsedBy(loop, cloned, captures);
    SmallVector<Type> parameters;
    for (Value v : captures)
      parameters.push_back(v.getType().isIndex() ? i64 : v.getType());
    parameters.push_back(i64);

    std::string name = (parent + "_loop_" + Twine(k)).str();
    OpBuilder b = OpBuilder::atBlockTerminator(kernels.getBody());
    auto kernel = b.create<gpu::GPUFuncOp>(
        loc, name, FunctionType::get(context, parameters, {}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                    UnitAttr::get(context));
    Block *entry = &kernel.getBody().front();
    OpBuilder in = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (Operation *def : cloned)
      map.map(def->getResult(0), in.clone(*def)->getResult(0));
    for (auto [i, v] : llvm::enumerate(captures)) {
      Value arg = entry->getArgument(i);
      map.map(v, v.getType().isIndex() ? in.create<arith::IndexCastOp>(
                                             loc, in.getIndexType(), arg)
                                       : arg);
    }
    // Iteration i runs on thread i; or, where it walks rows
    // (IterationLanes.h), on lanes i * 32 .. i * 32 + 31 of the grid, or on
    // block i; or, where a thread runs several (ThreadIterations.h), the
    // block's threads run its stretch of blocks' widths, each thread i and
    // every block's width after it.
    cuda::Lanes lanes = cuda::lanesOf(loop);
    const int64_t perThread =
        lanes == cuda::Lanes::kThread ? cuda::iterationsPerThread(loop) : 1;
    Value block = in.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
    Value width = in.create<gpu::BlockDimOp>(loc, gpu::Dimension::x);
    Value thread = in.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
    Value i = block, lane = thread, count = width;
    if (lanes != cuda::Lanes::kBlock) {
      Value stretch =
          perThread == 1
              ? width
              : in.create<arith::MulIOp>(
                    loc, width,
                    in.create<arith::ConstantIndexOp>(loc, perThread));
      i = in.create<arith::AddIOp>(
          loc, in.create<arith::MulIOp>(loc, block, stretch), thread);
      count = in.create<arith::ConstantIndexOp>(loc, int64_t(lanes));
      lane = in.create<arith::RemUIOp>(loc, i, count);
      i = in.create<arith::DivUIOp>(loc, i, count);
    }
    Value n = in.create<arith::IndexCastOp>(loc, in.getIndexType(),
                                            entry->getArguments().back());
    auto inRange = in.create<scf::IfOp>(
        loc, in.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, i, n),
        /*withElseRegion=*/false);
    in.create<gpu::ReturnOp>(loc);
    map.map(loop.getInductionVars()[0], i);
    OpBuilder then = inRange.getThenBodyBuilder();
    if (perThread > 1) {
      cuda::cloneIterations(then, loop, perThread, i, width, n, map);
    } else if (lanes == cuda::Lanes::kThread) {
      for (Operation &op : loop.getBody()->without_terminator())
        then.clone(op, map);
    } else {
      cuda::cloneOnLanes(then, loop, lanes, lane, count, map);
    }

    OpBuilder host(loop);
    SmallVector<Value> values(captures.begin(), captures.end());
    Value iterations =
        host.create<arith::IndexCastOp>(loc, i64, loop.getUpperBound()[0]);
    values.push_back(iterations);
    Value frame = storeFrame(host, loc, values);
    // The grid's threads: one per perThread iterations.
    Value threads = iterations;
    if (perThread > 1)
      threads = host.create<arith::DivUIOp>(
          loc,
          host.create<arith::AddIOp>(loc, iterations,
                                     constant(host, loc, perThread - 1)),
          constant(host, loc, perThread));
    auto launchType =
        FunctionType::get(context, {ptrType, i64, i64, ptrType, i64}, {});
    host.create<func::CallOp>(
        loc, declare("lap_cuda_launch", launchType),
        ValueRange{cString(host, loc, "lap_kernel_" + name, name), threads,
                   constant(host, loc, int64_t(lanes)), frame,
                   constant(host, loc, int64_t(values.size()))});
    loop.erase();
    return success();
  }

  gpu::GPUModuleOp kernels;
};

struct LapkToCUDAPass : lap::impl::LapkToCUDABase<LapkToCUDAPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(CUDALowering(module).run()))
      return signalPassFailure();
    if (failed(approximateMath(module)))
      return signalPassFailure();
    if (failed(expandBF16(module)))
      return signalPassFailure();
    // The polynomials' fused multiply-adds as LLVM's intrinsic, which NVPTX
    // emits as fma.rn (MLIR 19's GPU-to-NVVM conversion has no math.fma).
    module.walk([](math::FmaOp fma) {
      OpBuilder b(fma);
      fma.replaceAllUsesWith(b.create<LLVM::FMAOp>(fma.getLoc(), fma.getA(),
                                                   fma.getB(), fma.getC())
                                 .getResult());
      fma.erase();
    });
  }
};

} // namespace
