//===- LossCalls.cpp - Losses as kernel calls -----------------------------===//
//
// Cross-entropy (alone, or fused with the lm_head GEMM) and the row losses
// of image models and DINO, with their gradients.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap::kernelform {

std::optional<LogicalResult> Emitter::emitLosses(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](CrossEntropyOp a) {
        LAP_CALL_IN(isBF16(a.getLogits()), cross_entropy_forward,
                    buf(a.getLoss()), fbuf(a.getLogits()), ibuf(a.getTargets()),
                    rowsArg(a.getLogits()), lastArg(a.getLogits()),
                    f32(a.getLabelSmoothing()), f32(a.getSoftcap()));
        return success();
      })
      .Case([&](CrossEntropyGradOp a) {
        LAP_CALL_IN(isBF16(a.getLogits()), cross_entropy_backward,
                    fbuf(a.getGradLogits()), buf(a.getGradLoss()),
                    fbuf(a.getLogits()), ibuf(a.getTargets()),
                    rowsArg(a.getLogits()), lastArg(a.getLogits()),
                    f32(a.getLabelSmoothing()), f32(a.getSoftcap()));
        return success();
      })
      .Case([&](LinearCrossEntropyOp a) {
        auto weight = cast<ShapedType>(a.getWeight().getType());
        if (isBF16(a.getInput())) {
          LAP_CALL(linear_cross_entropy_bf16, buf(a.getLoss()),
                   bbuf(a.getGradInput()), bbuf(a.getGradWeight()),
                   buf(a.getGradLoss()), bbuf(a.getInput()),
                   bbuf(a.getWeight()), ibuf(a.getTargets()),
                   rowsArg(a.getInput()), lastArg(a.getInput()),
                   i64(weight.getDimSize(0)), f32(a.getLabelSmoothing()),
                   f32(a.getSoftcap()));
          return success();
        }
        LAP_CALL(linear_cross_entropy, buf(a.getLoss()), buf(a.getGradInput()),
                 buf(a.getGradWeight()), buf(a.getGradLoss()),
                 buf(a.getInput()), buf(a.getWeight()), ibuf(a.getTargets()),
                 rowsArg(a.getInput()), lastArg(a.getInput()),
                 i64(weight.getDimSize(0)), f32(a.getLabelSmoothing()),
                 f32(a.getSoftcap()), matmulArg());
        return success();
      })
      .Case<SoftCrossEntropyOp, BCEWithLogitsOp, DinoLossOp>([&](Operation *a) {
        lap_row_loss kind = rowLossKind(a->getName().stripDialect());
        auto temperature = a->getAttrOfType<FloatAttr>("temperature");
        Value logits = a->getOperand(0);
        LAP_CALL(row_loss_forward, buf(a->getResult(0)), buf(logits),
                 buf(a->getOperand(1)), rowsArg(logits), lastArg(logits),
                 i32(kind),
                 f32(temperature ? temperature.getValueAsDouble() : 1.0));
        return success();
      })
      .Case([&](RowLossGradOp a) {
        lap_row_loss kind = rowLossKind(a.getLoss());
        LAP_CALL(row_loss_backward, buf(a.getGradLogits()),
                 buf(a.getGradLoss()), buf(a.getLogits()), buf(a.getTargets()),
                 rowsArg(a.getLogits()), lastArg(a.getLogits()), i32(kind),
                 f32(a.getTemperature()));
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace lap::kernelform
