//===- Fuse.cpp - Fuse op chains into one op --------------------*- C++ -*-===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace lap {
#define GEN_PASS_DEF_LAPFUSE
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// softcap -> cross_entropy (and softcap_grad(cross_entropy_grad)) becomes
/// cross-entropy with a `softcap` attribute.
struct FuseSoftcapIntoCrossEntropy : OpRewritePattern<SoftcapOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftcapOp softcap,
                                PatternRewriter &rewriter) const override {
    Value capped = softcap.getResult();
    SmallVector<CrossEntropyOp> losses;
    SmallVector<std::pair<CrossEntropyGradOp, SoftcapGradOp>> grads;
    for (OpOperand &use : capped.getUses()) {
      Operation *user = use.getOwner();
      if (auto loss = dyn_cast<CrossEntropyOp>(user);
          loss && use.getOperandNumber() == 0 && loss.getSoftcap().isZero()) {
        losses.push_back(loss);
        continue;
      }
      auto grad = dyn_cast<CrossEntropyGradOp>(user);
      if (!grad || use.getOperandNumber() != 1 || !grad.getSoftcap().isZero() ||
          !grad->hasOneUse())
        return failure();
      auto capGrad = dyn_cast<SoftcapGradOp>(*grad->getUsers().begin());
      if (!capGrad || capGrad.getInput() != softcap.getInput() ||
          capGrad.getCap() != softcap.getCap())
        return failure();
      grads.push_back({grad, capGrad});
    }
    if (losses.empty() && grads.empty())
      return failure();
    FloatAttr cap = softcap.getCapAttr();
    for (CrossEntropyOp loss : losses)
      rewriter.modifyOpInPlace(loss, [&] {
        loss.getLogitsMutable().assign(softcap.getInput());
        loss.setSoftcapAttr(cap);
      });
    for (auto [grad, capGrad] : grads) {
      rewriter.setInsertionPoint(capGrad);
      rewriter.replaceOpWithNewOp<CrossEntropyGradOp>(
          capGrad, grad.getGradLoss(), softcap.getInput(), grad.getTargets(),
          grad.getLabelSmoothingAttr(), cap);
      rewriter.eraseOp(grad);
    }
    rewriter.eraseOp(softcap);
    return success();
  }
};

/// add(x, drop_path(layer_scale(y, g))) and its shorter forms become one
/// lap.residual_add, when the branch's intermediates have no other use.
struct FuseResidualBranch : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (unsigned side = 0; side < 2; ++side) {
      Value branch = add->getOperand(side), input = add->getOperand(1 - side);
      FloatAttr rate = rewriter.getF32FloatAttr(0);
      IntegerAttr key = rewriter.getI64IntegerAttr(0);
      Value gamma;
      bool fused = false;
      if (auto drop = branch.getDefiningOp<DropPathOp>();
          drop && drop->hasOneUse()) {
        rate = drop.getRateAttr();
        key = drop.getKeyAttr();
        branch = drop.getInput();
        fused = true;
      }
      if (auto scale = branch.getDefiningOp<LayerScaleOp>();
          scale && scale->hasOneUse()) {
        gamma = scale.getGamma();
        branch = scale.getInput();
        fused = true;
      }
      if (!fused)
        continue;
      rewriter.replaceOpWithNewOp<ResidualAddOp>(add, input, branch, gamma,
                                                 rate, key);
      return success();
    }
    return failure();
  }
};

/// In a training step, an output layer whose logits feed only a
/// cross-entropy and its gradient, lap.linear (no bias) -> lap.cross_entropy
/// with lap.cross_entropy_grad -> lap.linear_grad, becomes one
/// lap.linear_cross_entropy at the place of the linear_grad, so that the
/// logits are never whole in memory. The loss must not be read before it.
struct FuseLinearIntoCrossEntropy : OpRewritePattern<LinearGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearGradOp grad,
                                PatternRewriter &rewriter) const override {
    auto lossGrad = grad.getGradOutput().getDefiningOp<CrossEntropyGradOp>();
    if (!lossGrad || !lossGrad->hasOneUse() || !grad.getGradBias().use_empty())
      return failure();
    auto linear = lossGrad.getLogits().getDefiningOp<LinearOp>();
    if (!linear || linear.getBias() || linear.getInput() != grad.getInput() ||
        linear.getWeight() != grad.getWeight())
      return failure();
    CrossEntropyOp loss;
    for (Operation *user : linear->getUsers()) {
      if (user == lossGrad)
        continue;
      auto ce = dyn_cast<CrossEntropyOp>(user);
      if (!ce || loss || ce.getTargets() != lossGrad.getTargets() ||
          ce.getLabelSmoothing() != lossGrad.getLabelSmoothing() ||
          ce.getSoftcap() != lossGrad.getSoftcap())
        return failure();
      loss = ce;
    }
    if (!loss || llvm::any_of(loss->getUsers(), [&](Operation *user) {
          return !grad->isBeforeInBlock(user);
        }))
      return failure();
    rewriter.setInsertionPoint(grad);
    auto fused = rewriter.create<LinearCrossEntropyOp>(
        grad.getLoc(), loss.getLoss().getType(), grad.getGradInput().getType(),
        grad.getGradWeight().getType(), lossGrad.getGradLoss(),
        linear.getInput(), linear.getWeight(), loss.getTargets(),
        loss.getLabelSmoothingAttr(), loss.getSoftcapAttr());
    rewriter.replaceAllUsesWith(loss.getLoss(), fused.getLoss());
    rewriter.replaceAllUsesWith(grad.getGradInput(), fused.getGradInput());
    rewriter.replaceAllUsesWith(grad.getGradWeight(), fused.getGradWeight());
    rewriter.eraseOp(grad);
    rewriter.eraseOp(lossGrad);
    rewriter.eraseOp(loss);
    rewriter.eraseOp(linear);
    return success();
  }
};

/// The fused query/key/value projection split into heads,
/// lap.split_heads(lap.linear(x, W, b)), becomes one lap.linear_heads whose
/// GEMMs write the heads: no [B, T, (H + 2 KV) D] tensor, no copy.
struct FuseLinearIntoSplitHeads : OpRewritePattern<SplitHeadsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SplitHeadsOp split,
                                PatternRewriter &rewriter) const override {
    auto linear = split.getInput().getDefiningOp<LinearOp>();
    if (!linear || !linear->hasOneUse())
      return failure();
    rewriter.setInsertionPoint(split);
    rewriter.replaceOpWithNewOp<LinearHeadsOp>(
        split, split.getResultTypes(), linear.getInput(), linear.getWeight(),
        linear.getBias());
    rewriter.eraseOp(linear);
    return success();
  }
};

/// Its gradient, lap.linear_grad(lap.split_heads_grad(dq, dk, dv), x, W),
/// becomes one lap.linear_heads_grad.
struct FuseSplitHeadsGradIntoLinearGrad : OpRewritePattern<LinearGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearGradOp grad,
                                PatternRewriter &rewriter) const override {
    auto merge = grad.getGradOutput().getDefiningOp<SplitHeadsGradOp>();
    if (!merge || !merge->hasOneUse())
      return failure();
    rewriter.replaceOpWithNewOp<LinearHeadsGradOp>(
        grad, grad.getResultTypes(), merge.getGradQ(), merge.getGradK(),
        merge.getGradV(), grad.getInput(), grad.getWeight());
    rewriter.eraseOp(merge);
    return success();
  }
};

struct Fuse : lap::impl::LapFuseBase<Fuse> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseSoftcapIntoCrossEntropy, FuseResidualBranch,
                 FuseLinearIntoCrossEntropy, FuseLinearIntoSplitHeads,
                 FuseSplitHeadsGradIntoLinearGrad>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
