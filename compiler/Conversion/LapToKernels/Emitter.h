//===- Emitter.h - Building the kernel form of a planned function -*- C++ -*-===//
//
// The call builder of --lap-to-kernels (LapToKernels.cpp): the buffers of a
// planned function's tensors, kernel arguments checked against Kernels.def's
// prototypes when this compiles (LAP_CALL), and the loops generated here.
// Each family of ops is emitted by a file of its own (GeneratedCode.cpp,
// AttentionCalls.cpp, LinearCalls.cpp, TokenCalls.cpp, NormCalls.cpp,
// LossCalls.cpp), which emitOp tries in turn.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_CONVERSION_LAPTOKERNELS_EMITTER_H
#define LAP_COMPILER_CONVERSION_LAPTOKERNELS_EMITTER_H

#include "compiler/Conversion/LapToKernels/FusedLoops.h"
#include "compiler/Conversion/LapToKernels/Loops.h"
#include "compiler/Memory/Layout.h"
#include "compiler/Memory/MemoryPlan.h"
#include "dialects/Lap/IR/LapDialect.h"
#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lapk/IR/KernelTable.h"
#include "dialects/Lapk/IR/LapkOps.h"

#include <map>
#include <optional>

namespace lap::kernelform {

using namespace mlir;
using lapk::KernelArg;

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

inline int64_t headsWidth(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getDimSize(2) * type.getDimSize(3);
}

/// The kernels' name for the loss of a row-loss op.
inline lap_row_loss rowLossKind(StringRef loss) {
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
  I32Buffer ioptional(Value v) {
    return v ? ibuf(v) : I32Buffer{null(b.getI32Type())};
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
  /// The ops of one family (a file each): emitted, or none when `op` is of
  /// another family.
  std::optional<LogicalResult> emitGenerated(Operation *op);
  std::optional<LogicalResult> emitAttention(Operation *op);
  std::optional<LogicalResult> emitLinear(Operation *op);
  std::optional<LogicalResult> emitTokens(Operation *op);
  std::optional<LogicalResult> emitNorms(Operation *op);
  std::optional<LogicalResult> emitLosses(Operation *op);
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

} // namespace lap::kernelform

#endif // LAP_COMPILER_CONVERSION_LAPTOKERNELS_EMITTER_H
