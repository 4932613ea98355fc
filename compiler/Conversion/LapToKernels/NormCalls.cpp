//===- NormCalls.cpp - Norm gradients as kernel calls ---------------------===//
//
// The norms' gradients (the forward norms are generated loops), l2
// normalisation, weight norm and LayerScale's gradient.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap::kernelform {

std::optional<LogicalResult> Emitter::emitNorms(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](LayerNormGradOp a) {
        const bool bf16 = isBF16(a.getInput());
        LAP_CALL_IN(bf16, layer_norm_backward, fbuf(a.getGradInput()),
                    fbuf(a.getGradWeight()), fbuf(a.getGradBias()),
                    fbuf(a.getGradOutput()), fbuf(a.getInput()),
                    foptional(a.getWeight(), bf16), rowsArg(a.getInput()),
                    lastArg(a.getInput()), f32(a.getEps()));
        return success();
      })
      .Case([&](RMSNormGradOp a) {
        const bool bf16 = isBF16(a.getInput());
        LAP_CALL_IN(bf16, rms_norm_backward, fbuf(a.getGradInput()),
                    fbuf(a.getGradWeight()), fbuf(a.getGradOutput()),
                    fbuf(a.getInput()), foptional(a.getWeight(), bf16),
                    rowsArg(a.getInput()), lastArg(a.getInput()),
                    f32(a.getEps()));
        return success();
      })
      .Case([&](L2NormalizeOp a) {
        LAP_CALL(l2_normalize_forward, buf(a.getResult()), buf(a.getInput()),
                 rowsArg(a.getInput()), lastArg(a.getInput()), f32(a.getEps()));
        return success();
      })
      .Case([&](L2NormalizeGradOp a) {
        LAP_CALL(l2_normalize_backward, buf(a.getGradInput()),
                 buf(a.getGradOutput()), buf(a.getInput()),
                 rowsArg(a.getInput()), lastArg(a.getInput()), f32(a.getEps()));
        return success();
      })
      .Case([&](WeightNormOp a) {
        LAP_CALL(weight_norm_forward, buf(a.getResult()), buf(a.getDirection()),
                 buf(a.getMagnitude()), dimArg(a.getDirection(), 0),
                 dimArg(a.getDirection(), 1));
        return success();
      })
      .Case([&](WeightNormGradOp a) {
        LAP_CALL(weight_norm_backward, buf(a.getGradDirection()),
                 buf(a.getGradMagnitude()), buf(a.getGradOutput()),
                 buf(a.getDirection()), buf(a.getMagnitude()),
                 dimArg(a.getDirection(), 0), dimArg(a.getDirection(), 1));
        return success();
      })
      .Case([&](LayerScaleGradOp a) {
        LAP_CALL_IN(
            isBF16(a.getInput()), layer_scale_backward, fbuf(a.getGradInput()),
            fbuf(a.getGradGamma()), fbuf(a.getGradOutput()), fbuf(a.getInput()),
            fbuf(a.getGamma()), rowsArg(a.getInput()), lastArg(a.getInput()));
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace lap::kernelform
