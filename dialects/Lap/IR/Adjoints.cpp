//===- Adjoints.cpp - DifferentiableOp for the lap ops ----------*- C++ -*-===//
//
// Each adjoint maps the gradients of an op's results to the gradients of its
// operands, with one lap gradient op (the kernels implement those) or by
// passing the gradient through. Operand gradients are returned in operand
// order; indices get none.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lap/IR/LapOps.h"

using namespace mlir;
using namespace lap;

namespace {

/// The 1-D type [n] for a bias or norm gradient.
RankedTensorType vectorType(Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  return RankedTensorType::get({type.getShape().back()}, type.getElementType());
}

} // namespace

LogicalResult AttentionOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                        SmallVectorImpl<Value> &dOperands) {
  Value coefficients = getCoefficients();
  auto grad = b.create<AttentionGradOp>(
      getLoc(), getQ().getType(), getK().getType(), getV().getType(),
      coefficients ? coefficients.getType() : Type(), dResults[0], getQ(),
      getK(), getV(), getResult(), coefficients, getStarts(), getLengths(),
      getScaleAttr(), getCausalAttr(), getCrossAttr(), getKindsAttr(),
      getAlphaAttr(), getBetaAttr(), getWindowAttr());
  dOperands.append({grad.getGradQ(), grad.getGradK(), grad.getGradV()});
  if (coefficients)
    dOperands.push_back(grad.getGradCoefficients());
  if (getStarts()) // positions, not differentiable
    dOperands.push_back(Value());
  if (getLengths()) // sizes, not differentiable
    dOperands.push_back(Value());
  return success();
}

LogicalResult
HeadCoefficientsOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                 SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<HeadCoefficientsGradOp>(
      getLoc(), getLearned().getType(), dResults[0], getLearnableAttr()));
  return success();
}

LogicalResult LinearOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                     SmallVectorImpl<Value> &dOperands) {
  auto grad = b.create<LinearGradOp>(
      getLoc(), getInput().getType(), getWeight().getType(),
      vectorType(getResult()), dResults[0], getInput(), getWeight());
  dOperands.append({grad.getGradInput(), grad.getGradWeight()});
  if (getBias())
    dOperands.push_back(grad.getGradBias());
  return success();
}

LogicalResult EmbeddingOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                        SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<EmbeddingGradOp>(getLoc(), getTable().getType(),
                                                dResults[0], getIndices()));
  dOperands.push_back(Value()); // indices
  return success();
}

LogicalResult AddPositionsOp::buildAdjoint(OpBuilder &b,
                                           ArrayRef<Value> dResults,
                                           SmallVectorImpl<Value> &dOperands) {
  if (getFirst())
    return emitOpError(
        "with a first position belongs to decoding and has no gradient");
  dOperands.push_back(dResults[0]);
  dOperands.push_back(b.create<AddPositionsGradOp>(
      getLoc(), getTable().getType(), dResults[0], getOffsetAttr()));
  return success();
}

LogicalResult
InterpolatePositionsOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                     SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<InterpolatePositionsGradOp>(
      getLoc(), getInput().getType(), dResults[0], getKeepAttr()));
  return success();
}

LogicalResult LayerNormOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                        SmallVectorImpl<Value> &dOperands) {
  auto grad = b.create<LayerNormGradOp>(getLoc(), getInput().getType(),
                                        vectorType(getInput()),
                                        vectorType(getInput()), dResults[0],
                                        getInput(), getWeight(), getEpsAttr());
  dOperands.push_back(grad.getGradInput());
  if (getWeight())
    dOperands.push_back(grad.getGradWeight());
  if (getBias())
    dOperands.push_back(grad.getGradBias());
  return success();
}

LogicalResult RMSNormOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                      SmallVectorImpl<Value> &dOperands) {
  auto grad = b.create<RMSNormGradOp>(getLoc(), getInput().getType(),
                                      vectorType(getInput()), dResults[0],
                                      getInput(), getWeight(), getEpsAttr());
  dOperands.push_back(grad.getGradInput());
  if (getWeight())
    dOperands.push_back(grad.getGradWeight());
  return success();
}

LogicalResult RopeOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                   SmallVectorImpl<Value> &dOperands) {
  if (getFirst())
    return emitOpError(
        "with a first position belongs to decoding and has no gradient");
  dOperands.push_back(
      b.create<RopeGradOp>(getLoc(), dResults[0], getBaseAttr()));
  return success();
}

LogicalResult SplitHeadsOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                         SmallVectorImpl<Value> &dOperands) {
  if (llvm::is_contained(dResults, Value()))
    return emitOpError(
        "needs gradients for q, k and v (one of them is unused)");
  dOperands.push_back(b.create<SplitHeadsGradOp>(
      getLoc(), getInput().getType(), dResults[0], dResults[1], dResults[2]));
  return success();
}

LogicalResult MergeHeadsOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                         SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(
      b.create<MergeHeadsGradOp>(getLoc(), getInput().getType(), dResults[0]));
  return success();
}

/// dy * f'(x) for the activation `op` (a lap.gelu_tanh, lap.gelu or lap.relu2).
static LogicalResult activationAdjoint(Operation *op, OpBuilder &b,
                                       ArrayRef<Value> dResults,
                                       SmallVectorImpl<Value> &dOperands) {
  StringRef name = op->getName().stripDialect();
  dOperands.push_back(b.create<ActivationGradOp>(
      op->getLoc(), dResults[0], op->getOperand(0), b.getStringAttr(name)));
  return success();
}

LogicalResult GeluTanhOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                       SmallVectorImpl<Value> &dOperands) {
  return activationAdjoint(*this, b, dResults, dOperands);
}
LogicalResult GeluOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                   SmallVectorImpl<Value> &dOperands) {
  return activationAdjoint(*this, b, dResults, dOperands);
}
LogicalResult ReLU2Op::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                    SmallVectorImpl<Value> &dOperands) {
  return activationAdjoint(*this, b, dResults, dOperands);
}

LogicalResult AddOp::buildAdjoint(OpBuilder &, ArrayRef<Value> dResults,
                                  SmallVectorImpl<Value> &dOperands) {
  dOperands.append({dResults[0], dResults[0]});
  return success();
}

LogicalResult ConvertOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                      SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(
      b.create<ConvertOp>(getLoc(), getInput().getType(), dResults[0]));
  return success();
}

LogicalResult ScaleOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                    SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(
      b.create<ScaleOp>(getLoc(), dResults[0], getFactorAttr()));
  return success();
}

LogicalResult SoftcapOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                      SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(
      b.create<SoftcapGradOp>(getLoc(), dResults[0], getInput(), getCapAttr()));
  return success();
}

LogicalResult CrossEntropyOp::buildAdjoint(OpBuilder &b,
                                           ArrayRef<Value> dResults,
                                           SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<CrossEntropyGradOp>(
      getLoc(), dResults[0], getLogits(), getTargets(), getLabelSmoothingAttr(),
      getSoftcapAttr()));
  dOperands.push_back(Value()); // targets
  return success();
}

LogicalResult PatchifyOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                       SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<PatchifyGradOp>(getLoc(), getImages().getType(),
                                               dResults[0], getPatchAttr()));
  return success();
}

LogicalResult PrependTokensOp::buildAdjoint(OpBuilder &b,
                                            ArrayRef<Value> dResults,
                                            SmallVectorImpl<Value> &dOperands) {
  auto grad = b.create<PrependTokensGradOp>(getLoc(), getInput().getType(),
                                            getTokens().getType(), dResults[0]);
  dOperands.append({grad.getGradInput(), grad.getGradTokens()});
  return success();
}

LogicalResult LayerScaleOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                         SmallVectorImpl<Value> &dOperands) {
  auto grad =
      b.create<LayerScaleGradOp>(getLoc(), dResults[0], getInput(), getGamma());
  dOperands.append({grad.getGradInput(), grad.getGradGamma()});
  return success();
}

LogicalResult TakeTokenOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                        SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<TakeTokenGradOp>(getLoc(), dResults[0],
                                                getInput(), getIndexAttr()));
  return success();
}

LogicalResult MeanTokensOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                         SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<MeanTokensGradOp>(getLoc(), dResults[0],
                                                 getInput(), getSkipAttr()));
  return success();
}

LogicalResult L2NormalizeOp::buildAdjoint(OpBuilder &b,
                                          ArrayRef<Value> dResults,
                                          SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(b.create<L2NormalizeGradOp>(getLoc(), dResults[0],
                                                  getInput(), getEpsAttr()));
  return success();
}

LogicalResult WeightNormOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                         SmallVectorImpl<Value> &dOperands) {
  auto grad = b.create<WeightNormGradOp>(getLoc(), dResults[0], getDirection(),
                                         getMagnitude());
  dOperands.append({grad.getGradDirection(), grad.getGradMagnitude()});
  return success();
}

/// The adjoint of dropout is the same dropout (same key, so the same mask)
/// applied to the gradient.
LogicalResult DropoutOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                      SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(
      b.create<DropoutOp>(getLoc(), dResults[0], getRateAttr(), getKeyAttr()));
  return success();
}

LogicalResult DropPathOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                       SmallVectorImpl<Value> &dOperands) {
  dOperands.push_back(
      b.create<DropPathOp>(getLoc(), dResults[0], getRateAttr(), getKeyAttr()));
  return success();
}

/// Row losses: the logits get a gradient, the targets (data) none.
static LogicalResult rowLossAdjoint(Operation *op, OpBuilder &b, Value dLoss,
                                    float temperature,
                                    SmallVectorImpl<Value> &dOperands) {
  Value logits = op->getOperand(0), targets = op->getOperand(1);
  dOperands.push_back(b.create<RowLossGradOp>(
      op->getLoc(), logits.getType(), dLoss, logits, targets,
      b.getStringAttr(op->getName().stripDialect()),
      b.getF32FloatAttr(temperature)));
  dOperands.push_back(Value());
  return success();
}

LogicalResult
SoftCrossEntropyOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                 SmallVectorImpl<Value> &dOperands) {
  return rowLossAdjoint(*this, b, dResults[0], 1.0f, dOperands);
}

LogicalResult BCEWithLogitsOp::buildAdjoint(OpBuilder &b,
                                            ArrayRef<Value> dResults,
                                            SmallVectorImpl<Value> &dOperands) {
  return rowLossAdjoint(*this, b, dResults[0], 1.0f, dOperands);
}

LogicalResult DinoLossOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dResults,
                                       SmallVectorImpl<Value> &dOperands) {
  return rowLossAdjoint(*this, b, dResults[0],
                        getTemperature().convertToFloat(), dOperands);
}
