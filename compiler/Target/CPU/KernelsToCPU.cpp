//===- KernelsToCPU.cpp - The kernel form to CPU code -----------*- C++ -*-===//
//
// The CPU's decisions, and only those: the model ABI's pointer signature,
// the thread pool (libgomp, through lap_cpu_parallel_for) for parallel
// loops, the `lap_cpu_` kernel symbols, the profiler's calls. Buffers meet
// pointers at two places: a buffer built from a pointer (an argument, a
// frame slot) and a buffer passed as its pointer (a kernel argument, a
// frame slot); both are MemRefDescriptors that MLIR's memref-to-LLVM
// conversion folds away.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPU/Passes.h"
#include "compiler/Target/HostLowering.h"
#include "dialects/Lapk/IR/LapkOps.h"

namespace lap {
#define GEN_PASS_DEF_LAPKTOCPU
#include "compiler/Target/CPU/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

class CPULowering : HostLowering {
public:
  using HostLowering::HostLowering;

  LogicalResult run() {
    SmallVector<func::FuncOp> functions = entries();
    for (func::FuncOp f : functions) {
      SmallVector<scf::ParallelOp> loops;
      f.walk([&](scf::ParallelOp loop) { loops.push_back(loop); });
      int count = 0;
      for (scf::ParallelOp loop : loops)
        if (failed(outline(loop, f.getName(), count++)))
          return failure();
    }
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<lapk::CallOp, lapk::ProfileBeginOp, lapk::ProfileEndOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      if (auto call = dyn_cast<lapk::CallOp>(op))
        lowerCall(call, "lap_cpu_");
      else
        lowerProfileMarker(op);
    eraseUnusedNulls();
    for (func::FuncOp f : functions)
      exposeEntry(f);
    return success();
  }

private:
  //--- The thread pool -------------------------------------------------------
  /// Runs `loop`'s body through lap_cpu_parallel_for: outlined into
  /// @<parent>_loop_<k>(frame, begin, end), with the values it uses from
  /// above stored in an on-stack frame of 8-byte slots.
  LogicalResult outline(scf::ParallelOp loop, StringRef parent, int k) {
    Location loc = loop.getLoc();
    if (loop.getNumLoops() != 1 || loop.getNumResults() != 0)
      return loop.emitError("a parallel loop of the kernel form has one "
                            "dimension and no results");
    // Constants are cloned into the body; the other values it uses travel
    // in the frame.
    SetVector<Value> captures;
    SmallVector<Operation *> cloned;
    valuesUsedBy(loop, cloned, captures);

    OpBuilder b(loop);
    Value frame = storeFrame(b, loc, captures.getArrayRef());
    auto type = FunctionType::get(context, {ptrType, i64, i64}, {});
    std::string name = (parent + "_loop_" + Twine(k)).str();
    auto body = [&] {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(module.getBody());
      auto f = b.create<func::FuncOp>(loc, name, type);
      f.setPrivate();
      return f;
    }();
    Block *entry = body.addEntryBlock();
    OpBuilder in = OpBuilder::atBlockBegin(entry);
    for (Operation *def : cloned) {
      Value copy = in.clone(*def)->getResult(0);
      def->getResult(0).replaceUsesWithIf(copy, [&](OpOperand &use) {
        return loop->isProperAncestor(use.getOwner());
      });
    }
    SmallVector<Value> loaded;
    for (auto [i, v] : llvm::enumerate(captures)) {
      Value at = slot(in, loc, entry->getArgument(0), i64, i);
      if (auto memref = dyn_cast<MemRefType>(v.getType()))
        loaded.push_back(bufferAt(in, loc, memref,
                                  in.create<LLVM::LoadOp>(loc, ptrType, at)));
      else if (v.getType().isIndex())
        loaded.push_back(in.create<arith::IndexCastOp>(
            loc, in.getIndexType(), in.create<LLVM::LoadOp>(loc, i64, at)));
      else
        loaded.push_back(in.create<LLVM::LoadOp>(loc, v.getType(), at));
    }
    auto index = [&](Value v) {
      return in.create<arith::IndexCastOp>(loc, in.getIndexType(), v);
    };
    auto chunk = in.create<scf::ForOp>(
        loc, index(entry->getArgument(1)), index(entry->getArgument(2)),
        in.create<arith::ConstantIndexOp>(loc, 1));
    in.create<func::ReturnOp>(loc);
    Block *from = loop.getBody();
    Block *to = chunk.getBody();
    to->getOperations().splice(to->getTerminator()->getIterator(),
                               from->getOperations(), from->begin(),
                               std::prev(from->end()));
    from->getArgument(0).replaceAllUsesWith(chunk.getInductionVar());
    for (auto [captured, reloaded] : llvm::zip(captures, loaded))
      Value(captured).replaceUsesWithIf(reloaded, [&](OpOperand &use) {
        return body->isProperAncestor(use.getOwner());
      });

    Value n = b.create<arith::IndexCastOp>(loc, i64, loop.getUpperBound()[0]);
    auto grainAttr = loop->getAttrOfType<IntegerAttr>(lapk::kGrainAttr);
    int64_t grain = grainAttr ? grainAttr.getInt() : 1;
    Value function =
        b.create<func::ConstantOp>(loc, type, SymbolRefAttr::get(body));
    auto fnType = FunctionType::get(context, {i64, i64, type, ptrType}, {});
    b.create<func::CallOp>(
        loc, declare("lap_cpu_parallel_for", fnType),
        ValueRange{n, constant(b, loc, grain), function, frame});
    loop.erase();
    return success();
  }

  //--- The profiler ------------------------------------------------------------
  /// A profile marker as a call that times the op. Each op gets a label
  /// global of its own (the profiler tells ops apart by it), which its end
  /// marker, the next one in program order, shares.
  void lowerProfileMarker(Operation *op) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto begin = dyn_cast<lapk::ProfileBeginOp>(op);
    StringRef label =
        begin ? begin.getLabel() : cast<lapk::ProfileEndOp>(op).getLabel();
    if (begin)
      symbol = "lap_profile_" + std::to_string(labels++);
    auto type = FunctionType::get(context, {ptrType}, {});
    b.create<func::CallOp>(
        loc,
        declare(begin ? "lap_cpu_profile_begin" : "lap_cpu_profile_end", type),
        ValueRange{cString(b, loc, symbol, label)});
    op->erase();
  }

  std::string symbol;
  int labels = 0;
};

struct LapkToCPUPass : lap::impl::LapkToCPUBase<LapkToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(CPULowering(module).run()))
      return signalPassFailure();
    if (failed(approximateMath(module)))
      return signalPassFailure();
    if (failed(expandBF16(module)))
      return signalPassFailure();
  }
};

} // namespace
