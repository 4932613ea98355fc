//===- ThreadIterations.cpp - Several loop iterations on one thread -------===//

#include "compiler/Target/CUDA/ThreadIterations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>

using namespace mlir;

namespace lap::cuda {

int64_t iterationsPerThread(scf::ParallelOp loop) {
  std::optional<int64_t> trips = getConstantIntValue(loop.getUpperBound()[0]);
  if (trips && *trips <= 1)
    return 1;
  unsigned narrowest = 0;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return 1;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      Type element = load.getType();
      unsigned bits =
          element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
      narrowest = narrowest ? std::min(narrowest, bits) : bits;
    } else if (!isa<memref::StoreOp>(op) && !isPure(&op)) {
      return 1;
    }
  }
  if (!narrowest)
    return 1;
  return narrowest <= 16 ? 8 : 4;
}

void cloneIterations(OpBuilder &b, scf::ParallelOp loop, int64_t count,
                     Value first, Value stride, Value n, const IRMapping &map) {
  Location loc = loop.getLoc();
  Block *body = loop.getBody();
  auto ops = body->without_terminator();
  auto firstStore = llvm::find_if(
      ops, [](Operation &op) { return isa<memref::StoreOp>(op); });
  Value last =
      b.create<arith::SubIOp>(loc, n, b.create<arith::ConstantIndexOp>(loc, 1));
  // The iterations' indices; each loads through its own, or, beyond n,
  // through n - 1 (a real iteration, so every address is one it reads).
  SmallVector<Value> indices;
  SmallVector<IRMapping> maps(count, map);
  for (int64_t k = 0; k < count; ++k) {
    Value i =
        k == 0
            ? first
            : b.create<arith::AddIOp>(
                  loc, first,
                  b.create<arith::MulIOp>(
                      loc, stride, b.create<arith::ConstantIndexOp>(loc, k)));
    indices.push_back(i);
    maps[k].map(loop.getInductionVars()[0],
                k == 0 ? i : b.create<arith::MinUIOp>(loc, i, last));
    for (Operation &op : llvm::make_range(ops.begin(), firstStore))
      b.clone(op, maps[k]);
  }
  if (firstStore == ops.end())
    return;
  for (int64_t k = 0; k < count; ++k) {
    OpBuilder rest = b;
    if (k > 0) {
      auto inRange = b.create<scf::IfOp>(
          loc,
          b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, indices[k],
                                  n),
          /*withElseRegion=*/false);
      rest = inRange.getThenBodyBuilder();
    }
    for (Operation &op : llvm::make_range(firstStore, ops.end()))
      rest.clone(op, maps[k]);
  }
}

} // namespace lap::cuda
