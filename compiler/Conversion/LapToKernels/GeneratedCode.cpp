//===- GeneratedCode.cpp - Loops generated for ops ------------------------===//
//
// Ops that become loops of their own, not kernel calls: loop nests of
// loop-fusible ops and lap.fusion, splat constants, the head layout ops,
// head coefficients, and dropout and drop path outside a training step.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap::kernelform {

/// The loop nest of `ops` (loop-fusible, in order), whose rows have
/// `rowShaped`'s shape; `nest` has their buffers. Tensors without a static
/// last dimension (scalars, [B, T]) are one column of elements.
void Emitter::loopNest(ArrayRef<Operation *> ops, Value rowShaped,
                       LoopNest &nest) {
  nest.ops = ops;
  auto type = cast<ShapedType>(rowShaped.getType());
  unsigned r = type.getRank();
  bool hasRows = r > 0 && !type.isDynamicDim(r - 1);
  int64_t width = hasRows ? type.getDimSize(r - 1) : 1;
  LoopNestShape shape{hasRows ? rows(rowShaped) : numel(rowShaped),
                      width,
                      r > 1 ? product(rowShaped, 1, r - 1) : lb.index(1),
                      kElementGrain,
                      seed,
                      training};
  emitLoopNest(lb, nest, shape);
}

/// Nest value `value` is written to the buffer of op result `result` (a
/// column sum with its partial sums, the scratch beside it).
LogicalResult Emitter::writeOut(LoopNest &nest, Value value, Value result) {
  nest.outputs.push_back({value, buffer(result)});
  if (!value.getDefiningOp<ColumnSumOp>())
    return success();
  FailureOr<Value> partials = scratchOf(result);
  if (failed(partials))
    return failure();
  nest.partials[value] = *partials;
  return success();
}

/// A lap.fusion: its body's arguments read the operands' buffers, the
/// values it yields go to its results' buffers.
LogicalResult Emitter::fusion(FusionOp op) {
  LoopNest nest;
  Block &body = op.getBody().front();
  for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
    nest.inputs[arg] = buffer(input);
  for (auto [value, result] : llvm::zip(
           cast<YieldOp>(body.getTerminator()).getValues(), op.getResults()))
    if (failed(writeOut(nest, value, result)))
      return failure();
  SmallVector<Operation *> ops;
  for (Operation &inner : body.without_terminator())
    ops.push_back(&inner);
  loopNest(ops, rowsOf(ops.front()), nest);
  return success();
}

/// [N, (H + 2 KV) D] <-> q [N, H D], k [N, KV D], v [N, KV D]: one row at a
/// time, copying the three parts between the fused and the split layouts.
void Emitter::copyHeads(Value fused, Value q, Value k, Value v, bool split) {
  int64_t qWidth = headsWidth(q), kvWidth = headsWidth(k);
  int64_t width = qWidth + 2 * kvWidth;
  int64_t sizes[3] = {qWidth, kvWidth, kvWidth},
          starts[3] = {0, qWidth, qWidth + kvWidth};
  Value f = buffer(fused), parts[3] = {buffer(q), buffer(k), buffer(v)};
  lb.parallel(
      rows(fused), std::max<int64_t>(1, kElementGrain / width), [&](Value r) {
        for (int part = 0; part < 3; ++part) {
          Value inFused =
              lb.add(lb.mul(r, lb.index(width)), lb.index(starts[part]));
          Value inPart = lb.mul(r, lb.index(sizes[part]));
          lb.loop(lb.index(sizes[part]), [&](Value j) {
            Value i = lb.add(inFused, j), s = lb.add(inPart, j);
            if (split)
              lb.store(lb.load(f, i), parts[part], s);
            else
              lb.store(lb.load(parts[part], s), f, i);
          });
        }
      });
}

/// [2, H] from the fixed values and the learned [2, N] columns: 2H stores
/// (H is a handful).
void Emitter::headCoefficients(HeadCoefficientsOp op) {
  Value learned = buffer(op.getLearned()), out = buffer(op.getResult());
  const int64_t H = int64_t(op.getAlpha().size()),
                N = int64_t(op.getLearnable().size());
  ArrayRef<float> fixed[2] = {op.getAlpha(), op.getBeta()};
  int64_t column = 0;
  for (int64_t h = 0; h < H; ++h) {
    bool isLearned = column < N && op.getLearnable()[column] == h;
    for (int64_t row = 0; row < 2; ++row) {
      Value v = isLearned ? lb.load(learned, lb.index(row * N + column))
                          : lb.f32(fixed[row][h]);
      lb.store(v, out, lb.index(row * H + h));
    }
    column += isLearned;
  }
}

/// The learned columns of the [2, H] gradient, as [2, N].
void Emitter::headCoefficientsGrad(HeadCoefficientsGradOp op) {
  Value grad = buffer(op.getGradOutput()), out = buffer(op.getGradLearned());
  auto type = cast<ShapedType>(op.getGradOutput().getType());
  const int64_t H = type.getDimSize(1), N = int64_t(op.getLearnable().size());
  for (auto [column, h] : llvm::enumerate(op.getLearnable()))
    for (int64_t row = 0; row < 2; ++row)
      lb.store(lb.load(grad, lb.index(row * H + h)), out,
               lb.index(row * N + int64_t(column)));
}

std::optional<LogicalResult> Emitter::emitGenerated(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](arith::ConstantOp c) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense || !dense.isSplat() ||
            !isa<FloatType>(dense.getElementType()))
          return c.emitError("only splat float tensor constants are "
                             "supported");
        Value y = buffer(c.getResult());
        Value v = lb.f32(dense.getSplatValue<APFloat>().convertToFloat());
        lb.parallel(numel(c.getResult()), kElementGrain,
                    [&](Value i) { lb.store(v, y, i); });
        return success();
      })
      .Case([&](FusionOp a) { return fusion(a); })
      .Case(
          [&](HeadCoefficientsOp a) { return headCoefficients(a), success(); })
      .Case([&](HeadCoefficientsGradOp a) {
        return headCoefficientsGrad(a), success();
      })
      .Case([&](SplitHeadsOp a) {
        copyHeads(a.getInput(), a.getQ(), a.getK(), a.getV(), /*split=*/true);
        return success();
      })
      .Case([&](SplitHeadsGradOp a) {
        copyHeads(a.getGradInput(), a.getGradQ(), a.getGradK(), a.getGradV(),
                  /*split=*/false);
        return success();
      })
      .Case<MergeHeadsOp, MergeHeadsGradOp>([&](Operation *a) {
        // [B, T, H, D] and [B, T, H D] share one layout: usually the plan
        // gives both the same bytes.
        copyUnlessShared(a->getResult(0), a->getOperand(0));
        return success();
      })
      .Case([&](DropoutOp a) {
        if (!training)
          copyUnlessShared(a.getResult(), a.getInput());
        else
          LAP_CALL_IN(isBF16(a.getInput()), dropout, fbuf(a.getResult()),
                      fbuf(a.getInput()), numelArg(a.getInput()),
                      f32(a.getRate()), seedArg(), i64(a.getKey()));
        return success();
      })
      .Case([&](DropPathOp a) {
        if (!training)
          copyUnlessShared(a.getResult(), a.getInput());
        else
          LAP_CALL_IN(isBF16(a.getInput()), drop_path, fbuf(a.getResult()),
                      fbuf(a.getInput()), dimArg(a.getInput(), 0),
                      productArg(a.getInput(), 1, rank(a.getInput())),
                      f32(a.getRate()), seedArg(), i64(a.getKey()));
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace lap::kernelform
