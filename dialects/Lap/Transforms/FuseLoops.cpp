//===- FuseLoops.cpp - Producer-consumer fusion of generated loops -*- C++ -*-===//
//
// Groups chains of loop-fusible ops (elementwise ops and the norms they
// feed) into lap.fusion ops, which code generation computes as one loop
// nest: a residual add and the norm after it, the sums of gradients, an
// activation and what follows it, a linear layer's bias and what reads the
// layer's output, a bias gradient and the op that makes its dY. Greedy, in
// program order: each op joins the groups of its operands' producers when the
// fused op can take the consumer's place.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

#include <list>

namespace lap {
#define GEN_PASS_DEF_LAPFUSELOOPS
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// Whether `v` is [..., C] rows with a static C.
bool rowShaped(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() >= 2 && !type.isDynamicDim(type.getRank() - 1);
}

/// Ops cheap enough to compute again in each pass a norm makes over its
/// input row, rather than keeping their result.
bool cheapForNorms(Operation *op) {
  return isa<AddOp, AddBiasOp, ResidualAddOp, LayerScaleOp, ReLU2Op>(op);
}

/// A linear layer with a bias whose output a generated loop reads runs its
/// GEMM without the bias; a lap.add_bias right before its first reader
/// adds it, and joins that loop.
void splitBiases(Block &body) {
  SmallVector<LinearOp> linears;
  for (LinearOp linear : body.getOps<LinearOp>())
    if (linear.getBias() && llvm::any_of(linear->getUsers(), isLoopFusible))
      linears.push_back(linear);
  for (LinearOp linear : linears) {
    Operation *first =
        *llvm::min_element(linear->getUsers(), [](Operation *a, Operation *b) {
          return a->isBeforeInBlock(b);
        });
    OpBuilder b(linear);
    auto bare =
        b.create<LinearOp>(linear.getLoc(), linear.getType(), linear.getInput(),
                           linear.getWeight(), Value());
    b.setInsertionPoint(first);
    auto biased = b.create<AddBiasOp>(linear.getLoc(), linear.getType(), bare,
                                      linear.getBias());
    linear.replaceAllUsesWith(biased.getResult());
    linear.erase();
  }
}

/// A linear layer's bias gradient, when a generated loop makes the layer's
/// output gradient dY: a lap.column_sum of dY right after that loop's op,
/// which joins it, instead of a pass of the GEMM kernel over dY.
void splitBiasGradients(Block &body) {
  SmallVector<LinearGradOp> grads;
  for (LinearGradOp grad : body.getOps<LinearGradOp>()) {
    Operation *producer = grad.getGradOutput().getDefiningOp();
    if (!grad.getGradBias().use_empty() && producer &&
        isLoopFusible(producer) && !isa<ColumnSumOp>(producer) &&
        rowShaped(grad.getGradOutput()))
      grads.push_back(grad);
  }
  for (LinearGradOp grad : grads) {
    OpBuilder b(grad.getContext());
    b.setInsertionPointAfterValue(grad.getGradOutput());
    auto sum = b.create<ColumnSumOp>(
        grad.getLoc(), grad.getGradBias().getType(), grad.getGradOutput());
    grad.getGradBias().replaceAllUsesWith(sum.getResult());
  }
}

/// Rows of either precision fuse (a lap.convert reads one, makes the other).
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

class LoopFusion {
public:
  explicit LoopFusion(Block &body) {
    for (Operation &op : body)
      position[&op] = position.size();
  }

  void run(Block &body) {
    for (Operation &op : body)
      if (isLoopFusible(&op) && rowShaped(rowsOf(&op)))
        join(&op);
    for (Group &group : groups)
      if (group.size() > 1)
        fuse(group);
  }

private:
  using Group = SmallVector<Operation *>; ///< members in program order

  bool inGroup(Operation *op, Group *group) {
    return op && groupOf.lookup(op) == group;
  }

  /// `op` gets a group of its own, then takes in its producers' groups.
  void join(Operation *op) {
    Group *group = &groups.emplace_back(Group{op});
    groupOf[op] = group;
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      // A column sum is whole only after the nest: nothing in it reads one.
      Group *from = producer && !isa<ColumnSumOp>(producer)
                        ? groupOf.lookup(producer)
                        : nullptr;
      if (!from || from == group ||
          shapeOf(rowsOf(producer)) != shapeOf(rowsOf(op)) ||
          (isRowReduction(op) && !cheapForNorms(producer)) ||
          !canMove(*from, group, op))
        continue;
      for (Operation *member : *from)
        groupOf[member] = group;
      group->append(from->begin(), from->end());
      llvm::sort(*group, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      from->clear();
    }
  }

  /// Whether group `from` can be computed at `consumer`, in `into`: nothing
  /// outside the two reads its results before, and its inputs live until
  /// `consumer` anyway (or nothing runs in between), so fusing never
  /// lengthens a value's life.
  bool canMove(Group &from, Group *into, Operation *consumer) {
    int64_t at = position.lookup(consumer);
    int64_t last = position.lookup(from.back());
    for (Operation *member : from) {
      for (Operation *user : member->getResult(0).getUsers())
        if (!inGroup(user, &from) && !inGroup(user, into) &&
            position.lookup(user) < at)
          return false;
      for (Value input : member->getOperands()) {
        if (isa<BlockArgument>(input) ||
            inGroup(input.getDefiningOp(), &from) || at - last <= 1)
          continue;
        bool readLater = llvm::any_of(input.getUsers(), [&](Operation *user) {
          return position.lookup(user) >= at;
        });
        if (!readLater)
          return false;
      }
    }
    return true;
  }

  /// Replaces the members of `group` by one lap.fusion at the last one's
  /// place, yielding the values read outside the group.
  void fuse(const Group &group) {
    DenseSet<Operation *> members(group.begin(), group.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Value> escaping;
    SmallVector<Location> locations;
    for (Operation *op : group) {
      locations.push_back(op->getLoc());
      for (Value v : op->getOperands())
        if (!members.contains(v.getDefiningOp()))
          inputs.insert(v);
      Value result = op->getResult(0);
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !members.contains(user);
          }))
        escaping.push_back(result);
    }
    if (escaping.empty()) // dead code: not this pass's to remove
      return;
    OpBuilder b(group.back());
    Location loc = b.getFusedLoc(locations);
    auto fusion = b.create<FusionOp>(loc, ValueRange(escaping).getTypes(),
                                     inputs.getArrayRef());
    Block *body = b.createBlock(&fusion.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
    for (Operation *op : group)
      b.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (Value v : escaping)
      yielded.push_back(mapping.lookup(v));
    b.create<YieldOp>(loc, yielded);
    for (auto [value, result] : llvm::zip(escaping, fusion.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !members.contains(use.getOwner());
      });
    for (Operation *op : llvm::reverse(group))
      op->erase();
  }

  DenseMap<Operation *, int64_t> position;
  DenseMap<Operation *, Group *> groupOf;
  std::list<Group> groups; ///< stable addresses
};

struct FuseLoops : lap::impl::LapFuseLoopsBase<FuseLoops> {
  using LapFuseLoopsBase::LapFuseLoopsBase;

  void runOnOperation() override {
    getOperation()->walk([&](func::FuncOp func) {
      if (!func.getBody().hasOneBlock())
        return;
      Block &body = func.getBody().front();
      if (biasesInLoops) {
        splitBiases(body);
        splitBiasGradients(body);
      }
      LoopFusion(body).run(body);
    });
  }
};

} // namespace
