//===- AttentionCalls.cpp - Attention as kernel calls ---------------------===//
//
// lap.attention, its gradient and cached (decoding) attention: the fused
// flash-attention kernels, every head kind by its (alpha, beta); the
// document starts their masks read, and the targets padding leaves out.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap::kernelform {

std::optional<LogicalResult> Emitter::emitAttention(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](AttentionOp a) -> LogicalResult {
        FailureOr<F32Buffer> lse = logsumexpOf(a);
        if (failed(lse))
          return failure();
        LAP_CALL_IN(
            isBF16(a.getQ()), attention_forward, fbuf(a.getResult()), *lse,
            fbuf(a.getQ()), fbuf(a.getK()), fbuf(a.getV()), coefficientsOf(a),
            ioptional(a.getStarts()), ioptional(a.getLengths()),
            dimArg(a.getQ(), 0), dimArg(a.getQ(), 1), dimArg(a.getK(), 1),
            i64(a.getNumHeads()), i64(a.getNumKvHeads()), dimArg(a.getQ(), 3),
            f32(a.getScale()), i32(a.getCausal()), i64(a.getWindow()));
        return success();
      })
      .Case([&](CachedAttentionOp a) {
        LAP_CALL(attention_decode, buf(a.getResult()), buf(a.getKCache()),
                 buf(a.getVCache()), buf(a.getQ()), buf(a.getK()),
                 buf(a.getV()), coefficientsOf(a), dimArg(a.getQ(), 0),
                 dimArg(a.getQ(), 1), I64{buffer(a.getFirst())},
                 i64(a.getSlots(maxSeq)), i64(a.getNumHeads()),
                 i64(a.getNumKvHeads()), dimArg(a.getQ(), 3), f32(a.getScale()),
                 i64(a.getWindow()));
        return success();
      })
      .Case([&](AttentionGradOp a) -> LogicalResult {
        auto forward = a.getOutput().getDefiningOp<AttentionOp>();
        if (!forward)
          return a.emitError("the output operand must come from lap.attention");
        FailureOr<F32Buffer> lse = logsumexpOf(forward);
        if (failed(lse))
          return failure();
        LAP_CALL_IN(isBF16(a.getQ()), attention_backward, fbuf(a.getGradQ()),
                    fbuf(a.getGradK()), fbuf(a.getGradV()),
                    optional(a.getGradCoefficients()), fbuf(a.getGradOutput()),
                    fbuf(a.getQ()), fbuf(a.getK()), fbuf(a.getV()),
                    fbuf(a.getOutput()), *lse, coefficientsOf(forward),
                    ioptional(a.getStarts()), ioptional(a.getLengths()),
                    dimArg(a.getQ(), 0), dimArg(a.getQ(), 1),
                    dimArg(a.getK(), 1), i64(forward.getNumHeads()),
                    i64(forward.getNumKvHeads()), dimArg(a.getQ(), 3),
                    f32(a.getScale()), i32(a.getCausal()), i64(a.getWindow()));
        return success();
      })
      .Case([&](DocumentStartsOp d) {
        LAP_CALL(document_starts, ibuf(d.getResult()), ibuf(d.getTokens()),
                 dimArg(d.getTokens(), 0), dimArg(d.getTokens(), 1),
                 i64(d.getBosAttr().getInt()));
        return success();
      })
      .Case([&](PadTargetsOp p) {
        LAP_CALL(pad_targets, ibuf(p.getResult()), ibuf(p.getTargets()),
                 ibuf(p.getLengths()), dimArg(p.getTargets(), 0),
                 dimArg(p.getTargets(), 1));
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace lap::kernelform
