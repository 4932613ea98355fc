//===- IterationLanes.cpp - The threads that run one loop iteration -------===//

#include "compiler/Target/CUDA/IterationLanes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace lap::cuda {
namespace {

/// The op that folds loop-carried `arg` into the next value, when the
/// loop's iterations may be summed in any order: an add marked reassoc,
/// or a max or min, of f32, the only use of `arg`, used only as the next
/// value (a running sum is no reduction).
Operation *reductionOf(BlockArgument arg, Value next) {
  Operation *op = next.getDefiningOp();
  if (!arg.getType().isF32() || !arg.hasOneUse() || !next.hasOneUse() || !op ||
      op->getBlock() != arg.getOwner() ||
      !llvm::is_contained(op->getOperands(), arg))
    return nullptr;
  if (auto add = dyn_cast<arith::AddFOp>(op))
    return arith::bitEnumContainsAll(add.getFastmath(),
                                     arith::FastMathFlags::reassoc)
               ? op
               : nullptr;
  return isa<arith::MaximumFOp, arith::MinimumFOp>(op) ? op : nullptr;
}

/// The value reduction `op` starts from: -0 for a sum, -inf for a max,
/// +inf for a min.
Value identityOf(OpBuilder &b, Location loc, Operation *op) {
  float value = isa<arith::AddFOp>(op) ? -0.0f
                : isa<arith::MaximumFOp>(op)
                    ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(value));
}

/// `x` and `y` combined as reduction `op` combines them.
Value combine(OpBuilder &b, Location loc, Operation *op, Value x, Value y) {
  OperationState state(loc, op->getName(), ValueRange{x, y},
                       op->getResultTypes(), op->getAttrs());
  return b.create(state)->getResult(0);
}

/// Whether `index` addresses an element of `loop`'s own step: its
/// induction variable, or that plus a value from outside the loop.
bool ownElement(Value index, scf::ForOp loop) {
  Value iv = loop.getInductionVar();
  if (index == iv)
    return true;
  auto add = index.getDefiningOp<arith::AddIOp>();
  if (!add)
    return false;
  Value other = add.getLhs() == iv   ? add.getRhs()
                : add.getRhs() == iv ? add.getLhs()
                                     : Value();
  return other && loop.isDefinedOutsideOfLoop(other);
}

/// Whether two indices are the same value (or the same sum of values).
bool sameIndex(Value a, Value b) {
  if (a == b)
    return true;
  auto x = a.getDefiningOp<arith::AddIOp>(),
       y = b.getDefiningOp<arith::AddIOp>();
  return x && y &&
         ((x.getLhs() == y.getLhs() && x.getRhs() == y.getRhs()) ||
          (x.getLhs() == y.getRhs() && x.getRhs() == y.getLhs()));
}

/// Whether `op` writes memory (itself or an op inside it).
bool writesMemory(Operation *op) {
  WalkResult found = op->walk([](Operation *inner) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (effects ? effects.hasEffect<MemoryEffects::Write>()
                : !inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
                      !isMemoryEffectFree(inner))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// The buffer memref `m` lies in and its bytes there: a view's source and
/// range where its shift is a constant and its shape static; else all of
/// `m`, or, for a view at an unknown shift, all of its source. Distinct
/// buffers (the entry's arguments) do not overlap.
struct Extent {
  Value buffer;
  int64_t begin = 0, end = INT64_MAX;
};
Extent extentOf(Value m) {
  auto view = m.getDefiningOp<memref::ViewOp>();
  if (!view)
    return {m};
  auto type = cast<MemRefType>(m.getType());
  std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
  if (!shift || !type.hasStaticShape())
    return {view.getSource()};
  return {view.getSource(), *shift,
          *shift + type.getNumElements() * type.getElementTypeBitWidth() / 8};
}
bool overlap(const Extent &a, const Extent &b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

/// Whether the steps of `loop` can run on different lanes: reductions as
/// reductionOf accepts; every store of a memref to one element of its own
/// step, defined outside the loop (the same for every store of it); every
/// load of a memref the loop stores to from that element; and no other
/// memref the loop touches overlapping one it stores to.
bool spreads(scf::ForOp loop) {
  for (auto [arg, next] :
       llvm::zip(loop.getRegionIterArgs(), loop.getYieldedValues()))
    if (!reductionOf(arg, next))
      return false;
  llvm::DenseMap<Value, Value> stored; // memref -> the index it stores at
  llvm::SetVector<Value> touched;
  WalkResult bad = loop.getBody()->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      Value m = store.getMemRef();
      touched.insert(m);
      if (store.getIndices().size() != 1 || !loop.isDefinedOutsideOfLoop(m) ||
          !ownElement(store.getIndices()[0], loop))
        return WalkResult::interrupt();
      auto [at, first] = stored.try_emplace(m, store.getIndices()[0]);
      return first || sameIndex(at->second, store.getIndices()[0])
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    }
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      touched.insert(load.getMemRef());
      return WalkResult::advance();
    }
    if (op->getNumRegions() || !writesMemory(op))
      return WalkResult::advance();
    return WalkResult::interrupt(); // a write other than a store
  });
  if (bad.wasInterrupted())
    return false;
  bad = loop.getBody()->walk([&](memref::LoadOp load) {
    auto at = stored.find(load.getMemRef());
    return at == stored.end() || (load.getIndices().size() == 1 &&
                                  sameIndex(at->second, load.getIndices()[0]))
               ? WalkResult::advance()
               : WalkResult::interrupt();
  });
  if (bad.wasInterrupted())
    return false;
  for (auto [m, index] : stored)
    for (Value other : touched)
      if (other != m && overlap(extentOf(m), extentOf(other)))
        return false;
  return true;
}

/// `value` reduced as `op` reduces across the warp's lanes: a butterfly of
/// shuffles, which leaves every lane the same bits (each step combines the
/// same two values, in either order, and the ops are commutative).
Value acrossWarp(OpBuilder &b, Location loc, Operation *op, Value value) {
  constexpr int32_t warp = int32_t(Lanes::kWarp);
  for (int32_t offset = warp / 2; offset > 0; offset /= 2) {
    Value other = b.create<gpu::ShuffleOp>(loc, value, offset, warp,
                                           gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = combine(b, loc, op, value, other);
  }
  return value;
}

/// A barrier of the lanes: the warp's, or the block's.
void syncLanes(OpBuilder &b, Location loc, Lanes lanes) {
  if (lanes == Lanes::kBlock) {
    b.create<gpu::BarrierOp>(loc);
    return;
  }
  Value all = b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(-1));
  b.create<NVVM::SyncWarpOp>(loc, all);
}

/// `loop` cloned for lane `lane` of `count`: its steps from lb + lane *
/// step by `count` steps, each reduction (a warp's only) from its
/// identity, then combined across the warp and with the loop's initial
/// value.
void cloneSpread(OpBuilder &b, scf::ForOp loop, Value lane, Value count,
                 IRMapping &map) {
  Location loc = loop.getLoc();
  Value step = map.lookupOrDefault(loop.getStep());
  Value lower =
      b.create<arith::AddIOp>(loc, map.lookupOrDefault(loop.getLowerBound()),
                              b.create<arith::MulIOp>(loc, lane, step));
  Value stride = b.create<arith::MulIOp>(loc, step, count);
  SmallVector<Operation *> reductions;
  SmallVector<Value> identities;
  for (auto [arg, next] :
       llvm::zip(loop.getRegionIterArgs(), loop.getYieldedValues())) {
    reductions.push_back(reductionOf(arg, next));
    identities.push_back(identityOf(b, loc, reductions.back()));
  }
  auto spread = b.create<scf::ForOp>(
      loc, lower, map.lookupOrDefault(loop.getUpperBound()), stride, identities,
      [&](OpBuilder &in, Location, Value iv, ValueRange args) {
        map.map(loop.getInductionVar(), iv);
        map.map(loop.getRegionIterArgs(), args);
        for (Operation &op : loop.getBody()->without_terminator())
          in.clone(op, map);
        SmallVector<Value> yields;
        for (Value v : loop.getYieldedValues())
          yields.push_back(map.lookupOrDefault(v));
        in.create<scf::YieldOp>(loc, yields);
      });
  for (auto [k, op] : llvm::enumerate(reductions)) {
    Value total = acrossWarp(b, loc, op, spread.getResult(k));
    map.map(
        loop.getResult(k),
        combine(b, loc, op, map.lookupOrDefault(loop.getInitArgs()[k]), total));
  }
}

} // namespace

Lanes lanesOf(scf::ParallelOp loop) {
  bool sums = false;
  int64_t longest = 0;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto inner = dyn_cast<scf::ForOp>(op)) {
      if (!inner.getLowerBound().getType().isIndex() || !spreads(inner))
        return Lanes::kThread;
      sums |= inner.getNumResults() > 0;
      std::optional<int64_t> trips =
          constantTripCount(getAsOpFoldResult(inner.getLowerBound()),
                            getAsOpFoldResult(inner.getUpperBound()),
                            getAsOpFoldResult(inner.getStep()));
      longest = std::max(longest, trips.value_or(INT64_MAX));
      continue;
    }
    // A value some lane writes would be read by the others; a buffer
    // allocated here, one per lane.
    if ((op.getNumResults() && writesMemory(&op)) ||
        hasEffect<MemoryEffects::Allocate>(&op))
      return Lanes::kThread;
  }
  if (!sums && longest >= 256)
    return Lanes::kBlock;
  return longest >= int64_t(Lanes::kWarp) ? Lanes::kWarp : Lanes::kThread;
}

void cloneOnLanes(OpBuilder &b, scf::ParallelOp loop, Lanes lanes, Value lane,
                  Value count, IRMapping &map) {
  Location loc = loop.getLoc();
  Value laneZero;
  // A write waits for every lane's reads before it, and every lane's reads
  // after it wait for it.
  bool synced = true;
  auto sync = [&] {
    if (!synced)
      syncLanes(b, loc, lanes);
    synced = true;
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    bool writes = writesMemory(&op);
    if (writes)
      sync();
    if (auto inner = dyn_cast<scf::ForOp>(op)) {
      cloneSpread(b, inner, lane, count, map);
    } else if (writes) {
      if (!laneZero)
        laneZero =
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane,
                                    b.create<arith::ConstantIndexOp>(loc, 0));
      auto first = b.create<scf::IfOp>(loc, laneZero, /*withElse=*/false);
      first.getThenBodyBuilder().clone(op, map);
    } else {
      b.clone(op, map);
    }
    synced &= isMemoryEffectFree(&op);
    if (writes)
      sync();
  }
}

} // namespace lap::cuda
