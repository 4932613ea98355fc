//===- LapToKernels.cpp - Planned lap functions to the kernel form -*- C++ -*-===//
//
// Walks each planned function's single block in order and emits, into a new
// function on flat buffers, either a loop nest (elementwise work, generated
// here) or a lapk.call of a library kernel for each op. Tensors become
// buffers: parameters and intermediates are views of the parameter and
// workspace buffers at their offsets, batch tensors and outputs are buffers
// of their own. Dynamic sizes are the B and T arguments; an i64 argument
// (@decode's first position) is the `first` argument. Which op becomes what,
// with which arguments, is decided here once for every target.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/FusedLoops.h"
#include "compiler/Conversion/LapToKernels/Loops.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Memory/Layout.h"
#include "compiler/Memory/MemoryPlan.h"
#include "dialects/Lap/IR/LapDialect.h"
#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lapk/IR/KernelTable.h"
#include "dialects/Lapk/IR/LapkOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <map>

namespace lap {
#define GEN_PASS_DEF_LAPTOKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;
using lapk::KernelArg;

namespace {

/// A kernel argument of kind K: the C++ type carries the kind, so that
/// LAP_CALL checks each call against the kernel's prototype when this file
/// compiles.
template <KernelArg K> struct Arg {
  Value value;
  static constexpr bool fits(KernelArg kind) { return kind == K; }
};
/// A float tensor's buffer where a kernel takes f32 and its `_bf16` variant
/// bf16 (LAP_CALL_IN): either kind of buffer, which lapk.call's verifier
/// then holds to the buffer's element type.
struct Floats {
  Value value;
  static constexpr bool fits(KernelArg kind) {
    return kind == KernelArg::F32Buffer || kind == KernelArg::BF16Buffer;
  }
};
using F32Buffer = Arg<KernelArg::F32Buffer>;
using BF16Buffer = Arg<KernelArg::BF16Buffer>;
using I32Buffer = Arg<KernelArg::I32Buffer>;
using I64 = Arg<KernelArg::I64>;
using I64Buffer = Arg<KernelArg::I64Buffer>;
using I32 = Arg<KernelArg::I32>;
using F32 = Arg<KernelArg::F32>;

/// lapk.call of kernel `name` of Kernels.def, checked against its prototype.
#define LAP_CALL(name, ...) callKernel<lapk::kernel::name>(#name, __VA_ARGS__)
/// lapk.call of `name` on f32 tensors, or of `name`_bf16 when `bf16`, with
/// the same arguments (Floats where the two take the model's precision).
#define LAP_CALL_IN(bf16, name, ...)                                           \
  ((bf16) ? LAP_CALL(name##_bf16, __VA_ARGS__) : LAP_CALL(name, __VA_ARGS__))

/// Elements per chunk of an elementwise loop: below twice this, one thread.
constexpr int64_t kElementGrain = 1 << 14;

int64_t headsWidth(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getDimSize(2) * type.getDimSize(3);
}

/// The kernels' name for the loss of a row-loss op.
lap_row_loss rowLossKind(StringRef loss) {
  if (loss == "soft_cross_entropy")
    return LAP_ROW_LOSS_SOFT_CROSS_ENTROPY;
  if (loss == "bce_with_logits")
    return LAP_ROW_LOSS_BCE_WITH_LOGITS;
  return LAP_ROW_LOSS_DINO;
}

class Emitter {
public:
  using Constants = std::map<std::vector<float>, std::string>;

  Emitter(func::FuncOp source, func::FuncOp target, ModuleOp module,
          Constants &constants, bool profile)
      : source(source), module(module), constants(constants),
        b(target.getBody()), lb(b, source.getLoc()),
        training(isTrainStep(source.getName())), profile(profile) {
    maxBatch = source->getAttrOfType<IntegerAttr>(kMaxBatchAttr).getInt();
    maxSeq = source->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
    auto precision = module->getAttrOfType<StringAttr>(kMatmulPrecisionAttr);
    matmul = precision && precision.getValue() == "bf16" ? LAP_MATMUL_BF16
                                                         : LAP_MATMUL_FP32;
    Block &entry = target.getBody().front();
    unsigned n = entry.getNumArguments();
    params = entry.getArgument(0);
    workspace = entry.getArgument(1);
    for (unsigned i = 2; i < n - 4; ++i)
      buffers.push_back(entry.getArgument(i));
    batchSize = entry.getArgument(n - 4);
    seqLen = entry.getArgument(n - 3);
    seed = entry.getArgument(n - 2);
    first = entry.getArgument(n - 1);
    b.setInsertionPointToStart(&entry);
  }

  /// Fills the target; `offsets` are the parameters' (parameterOffsets).
  LogicalResult emit(ArrayRef<int64_t> offsets) {
    unsigned param = 0, input = 0;
    for (unsigned i = 0; i < source.getNumArguments(); ++i) {
      Value arg = source.getArgument(i);
      if (arg.getType().isInteger(64))
        bufs[arg] = first;
      else if (isParameter(source, i))
        bufs[arg] = view(params, offsets[param++] * 4, arg);
      else
        bufs[arg] = buffers[input++];
    }
    outputs = ArrayRef<Value>(buffers).drop_front(input);
    for (Operation &op : source.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        emitReturn(ret);
        continue;
      }
      assignResults(&op);
      std::string label = profile ? profileLabel(&op) : "";
      if (profile)
        b.create<lapk::ProfileBeginOp>(loc(), label);
      if (failed(emitOp(&op)))
        return failure();
      if (profile)
        b.create<lapk::ProfileEndOp>(loc(), label);
    }
    b.create<func::ReturnOp>(source.getLoc());
    return success();
  }

private:
  //--- Buffers -------------------------------------------------------------
  Value buffer(Value v) { return bufs.lookup(v); }

  /// A view of `bytes` (params or workspace) at `offset` for tensor `v`.
  Value view(Value bytes, int64_t offset, Value v) {
    return b.create<memref::ViewOp>(loc(), flatType(v.getType()), bytes,
                                    lb.index(offset), ValueRange{});
  }

  void assignResults(Operation *op) {
    auto slots = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      int64_t slot = slots ? slots[i] : kUnused;
      if (slot >= 0)
        bufs[result] = view(workspace, slot, result);
      else if (slot == kUnused)
        bufs[result] =
            b.create<lapk::NullOp>(loc(), flatType(result.getType()));
      else
        bufs[result] = outputs[outputIndex(slot)];
      offsetsOf[result] = slot;
    }
  }

  /// The buffer type of a tensor type: flat, at the compiled maxima.
  MemRefType flatType(Type type) {
    return flatBufferType(type, maxBatch, maxSeq);
  }

  /// Dimension i of v's type at run time (index).
  Value dim(Value v, unsigned i) {
    auto type = cast<ShapedType>(v.getType());
    if (!type.isDynamicDim(i))
      return lb.index(type.getDimSize(i));
    return i == 0 ? batchSize : seqLen;
  }
  Value product(Value v, unsigned from, unsigned to) {
    Value n = lb.index(1);
    for (unsigned i = from; i < to; ++i)
      n = lb.mul(n, dim(v, i));
    return n;
  }
  Value numel(Value v) { return product(v, 0, rank(v)); }
  Value rows(Value v) { return product(v, 0, rank(v) - 1); }
  Value last(Value v) { return dim(v, rank(v) - 1); }
  unsigned rank(Value v) { return cast<ShapedType>(v.getType()).getRank(); }
  bool isBF16(Value v) { return getElementTypeOrSelf(v.getType()).isBF16(); }
  /// Copies tensor `from` to buffer `to`: the copy kernel, or a loop for
  /// bf16 (the kernels are f32).
  void copy(Value to, Value from) {
    if (!isBF16(from))
      return LAP_CALL(copy, F32Buffer{to}, buf(from), numelArg(from));
    Value source = buffer(from);
    lb.parallel(numel(from), kElementGrain,
                [&](Value i) { lb.store(lb.load(source, i), to, i); });
  }
  /// Copies `from` into result `to`, unless the memory plan gave both the
  /// same workspace bytes (a layout-only op).
  void copyUnlessShared(Value to, Value from) {
    auto slot = offsetsOf.find(from);
    if (slot != offsetsOf.end() && slot->second >= 0 &&
        slot->second == offsetsOf.lookup(to))
      return;
    copy(buffer(to), from);
  }

  //--- Kernel arguments ----------------------------------------------------
  F32Buffer buf(Value v) { return {buffer(v)}; }
  BF16Buffer bbuf(Value v) { return {buffer(v)}; }
  I32Buffer ibuf(Value v) { return {buffer(v)}; }
  /// An optional tensor: its buffer, or none.
  F32Buffer optional(Value v) {
    return v ? buf(v) : F32Buffer{null(b.getF32Type())};
  }
  BF16Buffer boptional(Value v) {
    return v ? bbuf(v) : BF16Buffer{null(b.getBF16Type())};
  }
  Floats fbuf(Value v) { return {buffer(v)}; }
  /// An optional tensor of a model computing in bf16 or not.
  Floats foptional(Value v, bool bf16) {
    return {v ? buffer(v) : null(bf16 ? b.getBF16Type() : b.getF32Type())};
  }
  Value null(Type element) {
    return b.create<lapk::NullOp>(loc(), MemRefType::get({0}, element));
  }
  I64 i64(int64_t v) { return {lb.i64(v)}; }
  I64 size(Value index) { return {lb.toI64(index)}; }
  I64 dimArg(Value v, unsigned i) { return size(dim(v, i)); }
  I64 productArg(Value v, unsigned from, unsigned to) {
    return size(product(v, from, to));
  }
  I64 numelArg(Value v) { return size(numel(v)); }
  I64 rowsArg(Value v) { return size(rows(v)); }
  I64 lastArg(Value v) { return size(last(v)); }
  I64Buffer seedArg() { return {seed}; }
  /// An optional first position: the argument, or 0.
  I64 firstOr0(Value v) { return v ? I64{buffer(v)} : i64(0); }
  I32 i32(bool v) { return {lb.i32(v ? 1 : 0)}; }
  I32 i32(int32_t v) { return {lb.i32(v)}; }
  /// The GEMM kernels' precision argument.
  I32 matmulArg() { return i32(int32_t(matmul)); }
  F32 f32(APFloat v) { return {lb.f32(v.convertToFloat())}; }
  F32 f32(double v) { return {lb.f32(float(v))}; }

  template <typename Function, typename... Args>
  void callKernel(StringRef name, Args... args) {
    static_assert(lapk::KernelArgs<Function, Args...>::ok);
    b.create<lapk::CallOp>(loc(), name, ValueRange{args.value...});
  }

  /// A constant f32 array (per-head coefficients), one global per distinct
  /// array in the module.
  F32Buffer coefficients(ArrayRef<float> values) {
    std::string &name =
        constants[std::vector<float>(values.begin(), values.end())];
    auto type = MemRefType::get({int64_t(values.size())}, b.getF32Type());
    if (name.empty()) {
      name = "lap_coefficients_" + std::to_string(constants.size() - 1);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto data = DenseElementsAttr::get(
          RankedTensorType::get({int64_t(values.size())}, b.getF32Type()),
          values);
      b.create<memref::GlobalOp>(loc(), name, b.getStringAttr("private"), type,
                                 data, /*constant=*/true,
                                 /*alignment=*/IntegerAttr());
    }
    return {b.create<memref::GetGlobalOp>(loc(), type, name)};
  }

  /// The [2, H] coefficients of `attention` (alpha, then beta): its
  /// operand's buffer, or a constant array for fixed kinds.
  template <typename AttentionLike>
  F32Buffer coefficientsOf(AttentionLike attention) {
    if (Value operand = attention.getCoefficients())
      return buf(operand);
    SmallVector<float> alpha, beta;
    for (auto [a, c] : attention.getFixedCoefficients()) {
      alpha.push_back(a);
      beta.push_back(c);
    }
    alpha.append(beta);
    return coefficients(alpha);
  }

  /// The row logsumexp [B, H, T] of `attention`: the plan puts it right
  /// after the output, sized for the largest batch and sequence.
  FailureOr<F32Buffer> logsumexpOf(AttentionOp attention) {
    FailureOr<Value> lse = scratchOf(attention.getResult());
    if (failed(lse))
      return failure();
    return F32Buffer{*lse};
  }

  /// The scratch the plan puts after `result` in its slot (scratchBytes):
  /// an attention's logsumexp, a column sum's partial sums.
  FailureOr<Value> scratchOf(Value result) {
    int64_t slot = offsetsOf.lookup(result);
    if (slot < 0)
      return emitError(result.getLoc(), "the memory plan gave this result "
                                        "no workspace for its scratch");
    return Value(b.create<memref::ViewOp>(
        loc(),
        MemRefType::get({scratchBytes(result, maxBatch, maxSeq) / 4},
                        b.getF32Type()),
        workspace, lb.index(slot + scratchOffset(result, maxBatch, maxSeq)),
        ValueRange{}));
  }

  /// "lap.linear blocks.0.attn", for the profiler.
  std::string profileLabel(Operation *op) {
    std::string text = op->getName().getStringRef().str();
    if (std::string part = partName(op->getLoc()); !part.empty())
      text += " " + part;
    return text;
  }

  //--- Ops -------------------------------------------------------------------
  LogicalResult emitOp(Operation *op);
  void emitReturn(func::ReturnOp ret);
  void loopNest(ArrayRef<Operation *> ops, Value rowShaped, LoopNest &nest);
  LogicalResult writeOut(LoopNest &nest, Value value, Value result);
  LogicalResult fusion(FusionOp op);
  void copyHeads(Value fused, Value q, Value k, Value v, bool split);
  void headCoefficients(HeadCoefficientsOp op);
  void headCoefficientsGrad(HeadCoefficientsGradOp op);

  Location loc() { return source.getLoc(); }

  func::FuncOp source;
  ModuleOp module;
  Constants &constants;
  OpBuilder b;
  LoopBuilder lb;
  bool training, profile;
  lap_matmul matmul;
  int64_t maxBatch, maxSeq;
  Value params, workspace, batchSize, seqLen, seed, first;
  SmallVector<Value> buffers; ///< the batch tensors', then the outputs'
  ArrayRef<Value> outputs;
  DenseMap<Value, Value> bufs;
  DenseMap<Value, int64_t> offsetsOf;
};

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

void Emitter::emitReturn(func::ReturnOp ret) {
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    auto slots =
        v.getDefiningOp()
            ? v.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr)
            : DenseI64ArrayAttr();
    if (slots && slots[cast<OpResult>(v).getResultNumber()] == outputSlot(k))
      continue;
    copy(outputs[k], v);
  }
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (isLoopFusible(op)) {
    LoopNest nest;
    for (Value operand : op->getOperands())
      nest.inputs[operand] = buffer(operand);
    if (failed(writeOut(nest, op->getResult(0), op->getResult(0))))
      return failure();
    return loopNest(op, rowsOf(op), nest), success();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      //--- Generated -----------------------------------------------------------
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
      //--- Kernel library ------------------------------------------------------
      .Case([&](AttentionOp a) -> LogicalResult {
        FailureOr<F32Buffer> lse = logsumexpOf(a);
        if (failed(lse))
          return failure();
        LAP_CALL_IN(isBF16(a.getQ()), attention_forward, fbuf(a.getResult()),
                    *lse, fbuf(a.getQ()), fbuf(a.getK()), fbuf(a.getV()),
                    coefficientsOf(a), dimArg(a.getQ(), 0), dimArg(a.getQ(), 1),
                    dimArg(a.getK(), 1), i64(a.getNumHeads()),
                    i64(a.getNumKvHeads()), dimArg(a.getQ(), 3),
                    f32(a.getScale()), i32(a.getCausal()));
        return success();
      })
      .Case([&](CachedAttentionOp a) {
        LAP_CALL(attention_decode, buf(a.getResult()), buf(a.getKCache()),
                 buf(a.getVCache()), buf(a.getQ()), buf(a.getK()),
                 buf(a.getV()), coefficientsOf(a), dimArg(a.getQ(), 0),
                 dimArg(a.getQ(), 1), I64{buffer(a.getFirst())}, i64(maxSeq),
                 i64(a.getNumHeads()), i64(a.getNumKvHeads()),
                 dimArg(a.getQ(), 3), f32(a.getScale()));
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
                    dimArg(a.getQ(), 0), dimArg(a.getQ(), 1),
                    dimArg(a.getK(), 1), i64(forward.getNumHeads()),
                    i64(forward.getNumKvHeads()), dimArg(a.getQ(), 3),
                    f32(a.getScale()), i32(a.getCausal()));
        return success();
      })
      .Case([&](LinearOp a) {
        if (isBF16(a.getResult())) {
          LAP_CALL(linear_forward_bf16, bbuf(a.getResult()), bbuf(a.getInput()),
                   bbuf(a.getWeight()), boptional(a.getBias()),
                   rowsArg(a.getInput()), lastArg(a.getInput()),
                   lastArg(a.getResult()));
          return success();
        }
        LAP_CALL(linear_forward, buf(a.getResult()), buf(a.getInput()),
                 buf(a.getWeight()), optional(a.getBias()),
                 rowsArg(a.getInput()), lastArg(a.getInput()),
                 lastArg(a.getResult()), matmulArg());
        return success();
      })
      .Case([&](LinearGradOp a) {
        if (isBF16(a.getGradOutput())) {
          LAP_CALL(linear_backward_bf16, bbuf(a.getGradInput()),
                   bbuf(a.getGradWeight()), bbuf(a.getGradBias()),
                   bbuf(a.getGradOutput()), bbuf(a.getInput()),
                   bbuf(a.getWeight()), rowsArg(a.getInput()),
                   lastArg(a.getInput()), lastArg(a.getGradOutput()));
          return success();
        }
        LAP_CALL(linear_backward, buf(a.getGradInput()), buf(a.getGradWeight()),
                 buf(a.getGradBias()), buf(a.getGradOutput()),
                 buf(a.getInput()), buf(a.getWeight()), rowsArg(a.getInput()),
                 lastArg(a.getInput()), lastArg(a.getGradOutput()),
                 matmulArg());
        return success();
      })
      .Case([&](LinearGeluOp a) {
        if (isBF16(a.getResult())) {
          LAP_CALL(linear_gelu_forward_bf16, bbuf(a.getResult()),
                   bbuf(a.getPre()), bbuf(a.getInput()), bbuf(a.getWeight()),
                   boptional(a.getBias()), rowsArg(a.getInput()),
                   lastArg(a.getInput()), lastArg(a.getResult()));
          return success();
        }
        LAP_CALL(linear_gelu_forward, buf(a.getResult()), buf(a.getPre()),
                 buf(a.getInput()), buf(a.getWeight()), optional(a.getBias()),
                 rowsArg(a.getInput()), lastArg(a.getInput()),
                 lastArg(a.getResult()), matmulArg());
        return success();
      })
      .Case([&](GeluLinearGradOp a) {
        if (isBF16(a.getPre())) {
          LAP_CALL(gelu_linear_backward_bf16, bbuf(a.getGradPre()),
                   bbuf(a.getGradBias()), bbuf(a.getGradOutput()),
                   bbuf(a.getWeight()), bbuf(a.getPre()), rowsArg(a.getPre()),
                   lastArg(a.getPre()), lastArg(a.getGradOutput()));
          return success();
        }
        LAP_CALL(gelu_linear_backward, buf(a.getGradPre()),
                 buf(a.getGradBias()), buf(a.getGradOutput()),
                 buf(a.getWeight()), buf(a.getPre()), rowsArg(a.getPre()),
                 lastArg(a.getPre()), lastArg(a.getGradOutput()), matmulArg());
        return success();
      })
      .Case([&](LinearHeadsOp a) {
        if (isBF16(a.getQ())) {
          LAP_CALL(linear_heads_forward_bf16, bbuf(a.getQ()), bbuf(a.getK()),
                   bbuf(a.getV()), bbuf(a.getInput()), bbuf(a.getWeight()),
                   boptional(a.getBias()), rowsArg(a.getInput()),
                   lastArg(a.getInput()), i64(headsWidth(a.getQ())),
                   i64(headsWidth(a.getK())));
          return success();
        }
        LAP_CALL(linear_heads_forward, buf(a.getQ()), buf(a.getK()),
                 buf(a.getV()), buf(a.getInput()), buf(a.getWeight()),
                 optional(a.getBias()), rowsArg(a.getInput()),
                 lastArg(a.getInput()), i64(headsWidth(a.getQ())),
                 i64(headsWidth(a.getK())), matmulArg());
        return success();
      })
      .Case([&](LinearHeadsGradOp a) {
        if (isBF16(a.getGradQ())) {
          LAP_CALL(linear_heads_backward_bf16, bbuf(a.getGradInput()),
                   bbuf(a.getGradWeight()), bbuf(a.getGradBias()),
                   bbuf(a.getGradQ()), bbuf(a.getGradK()), bbuf(a.getGradV()),
                   bbuf(a.getInput()), bbuf(a.getWeight()),
                   rowsArg(a.getInput()), lastArg(a.getInput()),
                   i64(headsWidth(a.getGradQ())),
                   i64(headsWidth(a.getGradK())));
          return success();
        }
        LAP_CALL(linear_heads_backward, buf(a.getGradInput()),
                 buf(a.getGradWeight()), buf(a.getGradBias()),
                 buf(a.getGradQ()), buf(a.getGradK()), buf(a.getGradV()),
                 buf(a.getInput()), buf(a.getWeight()), rowsArg(a.getInput()),
                 lastArg(a.getInput()), i64(headsWidth(a.getGradQ())),
                 i64(headsWidth(a.getGradK())), matmulArg());
        return success();
      })
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
      .Default([&](Operation *a) {
        return a->emitError("no lowering to kernels for '")
               << a->getName() << "'";
      });
}

struct LapToKernelsPass : lap::impl::LapToKernelsBase<LapToKernelsPass> {
  using LapToKernelsBase::LapToKernelsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> planned;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kWorkspaceAttr))
        planned.push_back(func);
    Emitter::Constants constants;
    for (func::FuncOp source : planned) {
      if (failed(lower(source, module, constants)))
        return signalPassFailure();
      source.erase();
    }
  }

  /// Creates @lap_gen_<name> for `source`, with its signature, and fills it.
  LogicalResult lower(func::FuncOp source, ModuleOp module,
                      Emitter::Constants &constants) {
    MLIRContext *context = &getContext();
    // Generated loops compute at either precision, the library's kernels
    // at f32 but where they have a bf16 variant.
    for (Operation &op : source.getBody().front())
      if (needsWidening(&op))
        return op.emitError("computes in bf16, but its kernel takes f32; run "
                            "--lap-widen-kernels first");
    int64_t maxBatch =
        source->getAttrOfType<IntegerAttr>(kMaxBatchAttr).getInt();
    int64_t maxSeq = source->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
    auto bytes = [&](int64_t n) {
      return MemRefType::get({n}, IntegerType::get(context, 8));
    };
    int64_t floats = 0;
    SmallVector<int64_t> offsets = parameterOffsets(source, floats);
    SmallVector<Type> args = {
        bytes(floats * 4),
        bytes(source->getAttrOfType<IntegerAttr>(kWorkspaceAttr).getInt())};
    int64_t inputs = 0;
    for (unsigned i = 0; i < source.getNumArguments(); ++i) {
      Type type = source.getArgument(i).getType();
      if (!isParameter(source, i) && !type.isInteger(64)) {
        args.push_back(flatBufferType(type, maxBatch, maxSeq));
        ++inputs;
      }
    }
    for (Type type : source.getResultTypes())
      args.push_back(flatBufferType(type, maxBatch, maxSeq));
    // B, T, the step's seed (read through a pointer where it is used, so
    // that a captured step draws new masks when its seed changes) and the
    // first position.
    Type index = IndexType::get(context), i64 = IntegerType::get(context, 64);
    args.append({index, index, MemRefType::get({1}, i64), i64});
    OpBuilder b(source);
    auto target = b.create<func::FuncOp>(source.getLoc(),
                                         ("lap_gen_" + source.getName()).str(),
                                         FunctionType::get(context, args, {}));
    target.addEntryBlock();
    for (StringRef attr : {kWorkspaceAttr, kMaxBatchAttr, kMaxSeqAttr})
      target->setAttr(attr, source->getAttr(attr));
    // The entry's value: how many batch tensors precede the outputs.
    target->setAttr(lapk::kEntryAttr, b.getI64IntegerAttr(inputs));
    return Emitter(source, target, module, constants, profile).emit(offsets);
  }
};

} // namespace
