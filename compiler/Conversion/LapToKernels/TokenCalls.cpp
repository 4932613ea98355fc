//===- TokenCalls.cpp - Token and position ops as kernel calls ------------===//
//
// Embeddings, learned and resampled positions, RoPE, patches and the
// class-token ops (prepend, take, mean), with their gradients.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap::kernelform {

std::optional<LogicalResult> Emitter::emitTokens(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](EmbeddingOp a) {
        auto table = cast<ShapedType>(a.getTable().getType());
        LAP_CALL_IN(isBF16(a.getTable()), embedding_forward,
                    fbuf(a.getResult()), fbuf(a.getTable()),
                    ibuf(a.getIndices()), numelArg(a.getIndices()),
                    i64(table.getDimSize(0)), i64(table.getDimSize(1)));
        return success();
      })
      .Case([&](EmbeddingGradOp a) {
        auto table = cast<ShapedType>(a.getGradTable().getType());
        LAP_CALL_IN(isBF16(a.getGradTable()), embedding_backward,
                    fbuf(a.getGradTable()), fbuf(a.getGradOutput()),
                    ibuf(a.getIndices()), numelArg(a.getIndices()),
                    i64(table.getDimSize(0)), i64(table.getDimSize(1)));
        return success();
      })
      .Case([&](AddPositionsOp a) {
        LAP_CALL_IN(isBF16(a.getInput()), add_positions_forward,
                    fbuf(a.getResult()), fbuf(a.getInput()), fbuf(a.getTable()),
                    dimArg(a.getInput(), 0), dimArg(a.getInput(), 1),
                    lastArg(a.getInput()), i64(a.getOffset()),
                    firstOr0(a.getFirst()));
        return success();
      })
      .Case([&](AddPositionsGradOp a) {
        auto table = cast<ShapedType>(a.getGradTable().getType());
        LAP_CALL_IN(isBF16(a.getGradOutput()), add_positions_backward,
                    fbuf(a.getGradTable()), fbuf(a.getGradOutput()),
                    dimArg(a.getGradOutput(), 0), dimArg(a.getGradOutput(), 1),
                    lastArg(a.getGradOutput()), i64(a.getOffset()),
                    i64(table.getDimSize(0)));
        return success();
      })
      .Case([&](InterpolatePositionsOp a) {
        LAP_CALL(interpolate_positions_forward, buf(a.getResult()),
                 buf(a.getInput()), i64(a.getKeep()),
                 i64(positionGridSide(a.getInput().getType(), a.getKeep())),
                 i64(positionGridSide(a.getResult().getType(), a.getKeep())),
                 lastArg(a.getInput()));
        return success();
      })
      .Case([&](InterpolatePositionsGradOp a) {
        LAP_CALL(
            interpolate_positions_backward, buf(a.getGradInput()),
            buf(a.getGradOutput()), i64(a.getKeep()),
            i64(positionGridSide(a.getGradInput().getType(), a.getKeep())),
            i64(positionGridSide(a.getGradOutput().getType(), a.getKeep())),
            lastArg(a.getGradOutput()));
        return success();
      })
      .Case<RopeOp, RopeGradOp>([&](Operation *a) {
        Value x = a->getOperand(0);
        auto base = a->getAttrOfType<FloatAttr>("base");
        auto rope = dyn_cast<RopeOp>(a);
        I64 first = rope ? firstOr0(rope.getFirst()) : i64(0);
        F32 angleBase = f32(base.getValueAsDouble());
        Value y = a->getResult(0);
        if (rope)
          LAP_CALL_IN(isBF16(x), rope_forward, fbuf(y), fbuf(x), dimArg(x, 0),
                      dimArg(x, 1), dimArg(x, 2), dimArg(x, 3), angleBase,
                      first);
        else
          LAP_CALL_IN(isBF16(x), rope_backward, fbuf(y), fbuf(x), dimArg(x, 0),
                      dimArg(x, 1), dimArg(x, 2), dimArg(x, 3), angleBase,
                      first);
        return success();
      })
      .Case([&](PatchifyOp a) {
        Value x = a.getImages();
        LAP_CALL(patchify_forward, buf(a.getResult()), buf(x), dimArg(x, 0),
                 dimArg(x, 1), dimArg(x, 2), dimArg(x, 3), i64(a.getPatch()));
        return success();
      })
      .Case([&](PatchifyGradOp a) {
        Value x = a.getGradImages();
        LAP_CALL(patchify_backward, buf(x), buf(a.getGradOutput()),
                 dimArg(x, 0), dimArg(x, 1), dimArg(x, 2), dimArg(x, 3),
                 i64(a.getPatch()));
        return success();
      })
      .Case([&](PrependTokensOp a) {
        LAP_CALL_IN(isBF16(a.getInput()), prepend_tokens_forward,
                    fbuf(a.getResult()), fbuf(a.getInput()),
                    fbuf(a.getTokens()), dimArg(a.getInput(), 0),
                    dimArg(a.getInput(), 1), dimArg(a.getTokens(), 0),
                    lastArg(a.getInput()));
        return success();
      })
      .Case([&](PrependTokensGradOp a) {
        LAP_CALL_IN(isBF16(a.getGradOutput()), prepend_tokens_backward,
                    fbuf(a.getGradInput()), fbuf(a.getGradTokens()),
                    fbuf(a.getGradOutput()), dimArg(a.getGradInput(), 0),
                    dimArg(a.getGradInput(), 1), dimArg(a.getGradTokens(), 0),
                    lastArg(a.getGradInput()));
        return success();
      })
      .Case([&](TakeTokenOp a) {
        LAP_CALL_IN(isBF16(a.getInput()), take_token_forward,
                    fbuf(a.getResult()), fbuf(a.getInput()),
                    dimArg(a.getInput(), 0), dimArg(a.getInput(), 1),
                    lastArg(a.getInput()), i64(a.getIndex()));
        return success();
      })
      .Case([&](TakeTokenGradOp a) {
        LAP_CALL_IN(isBF16(a.getInput()), take_token_backward,
                    fbuf(a.getGradInput()), fbuf(a.getGradOutput()),
                    dimArg(a.getInput(), 0), dimArg(a.getInput(), 1),
                    lastArg(a.getInput()), i64(a.getIndex()));
        return success();
      })
      .Case([&](MeanTokensOp a) {
        LAP_CALL_IN(isBF16(a.getInput()), mean_tokens_forward,
                    fbuf(a.getResult()), fbuf(a.getInput()),
                    dimArg(a.getInput(), 0), dimArg(a.getInput(), 1),
                    lastArg(a.getInput()), i64(a.getSkip()));
        return success();
      })
      .Case([&](MeanTokensGradOp a) {
        LAP_CALL_IN(isBF16(a.getInput()), mean_tokens_backward,
                    fbuf(a.getGradInput()), fbuf(a.getGradOutput()),
                    dimArg(a.getInput(), 0), dimArg(a.getInput(), 1),
                    lastArg(a.getInput()), i64(a.getSkip()));
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace lap::kernelform
