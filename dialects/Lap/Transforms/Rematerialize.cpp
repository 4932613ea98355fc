//===- Rematerialize.cpp - Recompute cheap values for late readers -*- C++ -*-===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace lap {
#define GEN_PASS_DEF_LAPREMATERIALIZE
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// Ops worth computing again rather than keeping: elementwise or row-wise,
/// from operands a training step keeps anyway.
bool cheap(Operation *op) {
  return isa<ReLU2Op, GeluOp, GeluTanhOp, RMSNormOp, LayerNormOp>(op);
}

void rematerialize(Block &body) {
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body)
    position[&op] = position.size();
  auto lastRead = [&](Value v) {
    int64_t last = -1;
    for (Operation *user : v.getUsers())
      last = std::max(last, position.lookup(user));
    return last;
  };
  SmallVector<Operation *> candidates;
  for (Operation &op : body)
    if (cheap(&op) && op.getNumResults() == 1)
      candidates.push_back(&op);
  for (Operation *op : candidates) {
    Value result = op->getResult(0);
    SmallVector<Operation *> readers(result.getUsers().begin(),
                                     result.getUsers().end());
    llvm::sort(readers, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    for (Operation *reader : llvm::drop_begin(readers)) {
      int64_t at = position.lookup(reader);
      bool operandsLive = llvm::all_of(op->getOperands(), [&](Value v) {
        return isa<BlockArgument>(v) || lastRead(v) > at;
      });
      if (!operandsLive || isa<func::ReturnOp>(reader))
        continue;
      OpBuilder b(reader);
      Operation *copy = b.clone(*op);
      position[copy] = at; // as its reader, for later liveness checks
      reader->replaceUsesOfWith(result, copy->getResult(0));
    }
  }
}

struct Rematerialize : lap::impl::LapRematerializeBase<Rematerialize> {
  void runOnOperation() override {
    getOperation()->walk([](func::FuncOp func) {
      if (func.getBody().hasOneBlock())
        rematerialize(func.getBody().front());
    });
  }
};

} // namespace
