//===- FuseEpilogues.cpp - A tanh GELU into the GEMMs around it -*- C++ -*-===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace lap {
#define GEN_PASS_DEF_LAPFUSEEPILOGUES
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// Whether the layer of v fuses: f32 elements, or bf16 ones (the kernels'
/// `_bf16` forms) where `bf16`. Each op computes in one precision (the
/// ops' verifiers), so one value of a layer tells for all of them.
bool fuses(Value v, bool bf16) {
  Type element = getElementTypeOrSelf(v.getType());
  return element.isF32() || (bf16 && element.isBF16());
}

/// The reader of `v` that comes first in the block, or null.
Operation *firstReader(Value v) {
  Operation *first = nullptr;
  for (Operation *user : v.getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  return first;
}

/// lap.linear then lap.gelu_tanh as its first reader: one lap.linear_gelu
/// at the linear's place, so no input lives longer.
void fuseForward(Block &body, bool bf16) {
  SmallVector<std::pair<LinearOp, GeluTanhOp>> pairs;
  for (LinearOp linear : body.getOps<LinearOp>())
    if (auto gelu = dyn_cast_or_null<GeluTanhOp>(firstReader(linear));
        gelu && fuses(linear.getResult(), bf16))
      pairs.push_back({linear, gelu});
  for (auto [linear, gelu] : pairs) {
    OpBuilder b(linear);
    auto fused = b.create<LinearGeluOp>(
        b.getFusedLoc({linear.getLoc(), gelu.getLoc()}), linear.getType(),
        linear.getType(), linear.getInput(), linear.getWeight(),
        linear.getBias());
    gelu.replaceAllUsesWith(fused.getResult());
    gelu.erase();
    linear.replaceAllUsesWith(fused.getPre());
    linear.erase();
  }
}

/// lap.activation_grad of gelu_tanh over a lap.linear_grad's input
/// gradient, read by nothing else: one lap.gelu_linear_grad right after the
/// linear_grad (its operands are live there: the activation_grad reads the
/// pre-activation later), whose column sum is the bias gradient of the
/// linear layers the result flows back through.
void fuseBackward(Block &body, bool bf16) {
  SmallVector<ActivationGradOp> grads;
  for (ActivationGradOp grad : body.getOps<ActivationGradOp>()) {
    Value dx = grad.getGradOutput();
    auto linear = dx.getDefiningOp<LinearGradOp>();
    if (grad.getActivation() == "gelu_tanh" && dx.hasOneUse() && linear &&
        cast<OpResult>(dx).getResultNumber() == 0 && fuses(dx, bf16))
      grads.push_back(grad);
  }
  for (ActivationGradOp grad : grads) {
    auto linear = grad.getGradOutput().getDefiningOp<LinearGradOp>();
    OpBuilder b(linear->getNextNode());
    auto pre = cast<RankedTensorType>(grad.getInput().getType());
    auto fused = b.create<GeluLinearGradOp>(
        b.getFusedLoc({linear.getLoc(), grad.getLoc()}), pre,
        RankedTensorType::get({pre.getShape().back()}, pre.getElementType()),
        linear.getGradOutput(), linear.getWeight(), grad.getInput());
    grad.replaceAllUsesWith(fused.getGradPre());
    grad.erase();
    for (Operation *user : fused.getGradPre().getUsers())
      if (auto next = dyn_cast<LinearGradOp>(user);
          next && next.getGradOutput() == fused.getGradPre())
        next.getGradBias().replaceAllUsesWith(fused.getGradBias());
  }
}

struct FuseEpilogues : lap::impl::LapFuseEpiloguesBase<FuseEpilogues> {
  using LapFuseEpiloguesBase::LapFuseEpiloguesBase;

  void runOnOperation() override {
    getOperation()->walk([&](func::FuncOp func) {
      if (!func.getBody().hasOneBlock())
        return;
      fuseForward(func.getBody().front(), bf16);
      fuseBackward(func.getBody().front(), bf16);
    });
  }
};

} // namespace
