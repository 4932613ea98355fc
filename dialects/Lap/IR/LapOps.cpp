//===- LapOps.cpp - lap dialect ops: verifiers and helpers ------*- C++ -*-===//

#include "dialects/Lap/IR/LapOps.h"

#include "dsl/HeadKinds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace lap;

/// Whether `v` is an attention's [2, H] coefficients or their gradient:
/// per-head scalars, f32 at every precision (the attention verifiers say
/// so).
static bool isCoefficients(Operation *op, Value v) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return v == a.getCoefficients();
  if (auto a = dyn_cast<AttentionGradOp>(op))
    return v == a.getCoefficients() || v == a.getGradCoefficients();
  if (auto a = dyn_cast<CachedAttentionOp>(op))
    return v == a.getCoefficients();
  return false;
}

LogicalResult lap::OpTrait::verifyElementTypes(Operation *op) {
  Type shared;
  auto check = [&](Value v) -> LogicalResult {
    if (isCoefficients(op, v))
      return success();
    auto tensor = dyn_cast<RankedTensorType>(v.getType());
    if (!tensor || !isa<FloatType>(tensor.getElementType()))
      return success();
    Type element = tensor.getElementType();
    if (tensor.getRank() == 0) {
      if (!element.isF32())
        return op->emitOpError("has a scalar of ")
               << element << "; scalars (losses) are f32 at every precision";
      return success();
    }
    if (!element.isF32() && !element.isBF16())
      return op->emitOpError("computes in ")
             << element << "; lap's precisions are f32 and bf16";
    if (shared && element != shared)
      return op->emitOpError("mixes ")
             << shared << " and " << element
             << " tensors; an op computes in one precision";
    shared = element;
    return success();
  };
  for (Value v : op->getOperands())
    if (failed(check(v)))
      return failure();
  for (Value v : op->getResults())
    if (failed(check(v)))
      return failure();
  return success();
}

namespace {

/// Two dimension sizes that may still turn out equal.
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// "[?, ?, 4, 64]" for messages.
std::string shapeString(RankedTensorType type) {
  std::string out = "[";
  llvm::raw_string_ostream os(out);
  llvm::interleaveComma(type.getShape(), os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return out;
}

/// Checks that `vector` is [size] where size is the last dimension of `of`.
LogicalResult verifyFeatureVector(Operation *op, Value vector, StringRef name,
                                  RankedTensorType of) {
  auto type = cast<RankedTensorType>(vector.getType());
  int64_t features = of.getShape().back();
  if (type.getRank() != 1 || !compatible(type.getDimSize(0), features))
    return op->emitOpError() << name << " must be [" << features << "], got "
                             << shapeString(type);
  return success();
}

LogicalResult verifyNorm(Operation *op, Value input, Value weight, Value bias,
                         Value result, FloatAttr eps) {
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() < 1 || ShapedType::isDynamic(type.getShape().back()))
    return op->emitOpError("normalises over a static last dimension, got ")
           << shapeString(type);
  if (result.getType() != input.getType())
    return op->emitOpError("result type must equal the input type");
  if (eps.getValueAsDouble() <= 0)
    return op->emitOpError("eps must be positive");
  if (weight && failed(verifyFeatureVector(op, weight, "weight", type)))
    return failure();
  if (bias && failed(verifyFeatureVector(op, bias, "bias", type)))
    return failure();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// Per-head (alpha, beta) from kind names or coefficient arrays; (1, 0) for
/// every head of plain attention.
static SmallVector<std::pair<float, float>>
coefficientsOf(int64_t heads, std::optional<ArrayAttr> kinds,
               std::optional<ArrayRef<float>> alpha,
               std::optional<ArrayRef<float>> beta) {
  SmallVector<std::pair<float, float>> out;
  if (kinds) {
    for (Attribute kind : *kinds) {
      auto id = dsl::findHeadKind(cast<StringAttr>(kind).getValue());
      const dsl::HeadKind &k = dsl::headKinds()[id ? *id : 0];
      out.push_back({float(k.alpha), float(k.beta)});
    }
  } else if (alpha && beta) {
    for (int64_t h = 0; h < heads; ++h)
      out.push_back({(*alpha)[h], (*beta)[h]});
  } else {
    out.assign(size_t(heads), {1.0f, 0.0f});
  }
  return out;
}

/// The checks lap.attention and lap.attention_grad share: shapes, head
/// groups, the kinds or coefficients, and square self-attention for kinds
/// that add the query's own value (and for coefficients given as a tensor,
/// which may).
static LogicalResult verifyAttention(Operation *op, RankedTensorType q,
                                     RankedTensorType k, RankedTensorType v,
                                     Value coefficients, float scale,
                                     bool cross, std::optional<ArrayAttr> kinds,
                                     std::optional<ArrayRef<float>> alpha,
                                     std::optional<ArrayRef<float>> beta) {
  if (q.getRank() != 4 || k.getRank() != 4)
    return op->emitOpError(
               "expects q [B, T, H, D] and k, v [B, S, KV, D], got ")
           << shapeString(q) << " and " << shapeString(k);
  if (k != v)
    return op->emitOpError("k and v must have the same type");
  int64_t heads = q.getDimSize(2), kvHeads = k.getDimSize(2);
  int64_t headDim = q.getDimSize(3);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads) ||
      ShapedType::isDynamic(headDim) || ShapedType::isDynamic(k.getDimSize(3)))
    return op->emitOpError("head counts and head_dim must be static");
  if (heads < 1 || kvHeads < 1 || headDim < 1)
    return op->emitOpError("head counts and head_dim must be positive");
  if (k.getDimSize(3) != headDim)
    return op->emitOpError("q has head_dim ")
           << headDim << " but k has " << k.getDimSize(3);
  if (heads % kvHeads != 0)
    return op->emitOpError("kv heads (")
           << kvHeads << ") must divide query heads (" << heads << ")";
  if (!compatible(q.getDimSize(0), k.getDimSize(0)))
    return op->emitOpError("q and k have different batch sizes");
  if (scale <= 0)
    return op->emitOpError("scale must be positive");

  if (kinds && (alpha || beta))
    return op->emitOpError("gives head kinds both by name and as coefficients");
  if (coefficients) {
    if (kinds || alpha || beta)
      return op->emitOpError("gives head kinds both as a coefficients operand "
                             "and as attributes");
    auto type = cast<RankedTensorType>(coefficients.getType());
    if (type.getRank() != 2 || type.getDimSize(0) != 2 ||
        type.getDimSize(1) != heads)
      return op->emitOpError("coefficients must be [2, ")
             << heads << "] (alpha, then beta, per head), got "
             << shapeString(type);
    if (!type.getElementType().isF32())
      return op->emitOpError("coefficients must be f32 (per-head scalars "
                             "stay f32 in a bf16 model)");
    int64_t T = q.getDimSize(1), S = k.getDimSize(1);
    if (cross ||
        (!ShapedType::isDynamic(T) && !ShapedType::isDynamic(S) && T != S))
      return op->emitOpError("coefficients given as a tensor may add the "
                             "query's own value and need square "
                             "self-attention");
    return success();
  }
  if (bool(alpha) != bool(beta))
    return op->emitOpError("alpha and beta come together");
  if (kinds) {
    if (int64_t(kinds->size()) != heads)
      return op->emitOpError("has ")
             << kinds->size() << " head kinds for " << heads << " heads";
    for (Attribute kind : *kinds) {
      StringRef name = cast<StringAttr>(kind).getValue();
      if (!dsl::findHeadKind(name)) {
        InFlightDiagnostic error = op->emitOpError("unknown head kind '")
                                   << name << "' (kinds: ";
        llvm::interleaveComma(
            dsl::headKindNames(), error,
            [&](std::string_view k) { error << "'" << k << "'"; });
        return error << ")";
      }
      if (dsl::headKinds()[*dsl::findHeadKind(name)].learnable)
        return op->emitOpError("head kind '")
               << name << "' is learned: give the layer's coefficients as "
               << "a tensor operand (lap.head_coefficients)";
    }
  }
  if (alpha &&
      (int64_t(alpha->size()) != heads || int64_t(beta->size()) != heads))
    return op->emitOpError("alpha and beta must have one entry per head (")
           << heads << ")";

  for (auto [head, coefficients] :
       llvm::enumerate(coefficientsOf(heads, kinds, alpha, beta))) {
    if (coefficients.second == 0)
      continue;
    if (cross)
      return op->emitOpError("head ")
             << head
             << " adds the query's own value (beta = " << coefficients.second
             << ") and needs square self-attention, but this "
                "is cross-attention";
    int64_t T = q.getDimSize(1), S = k.getDimSize(1);
    if (!ShapedType::isDynamic(T) && !ShapedType::isDynamic(S) && T != S)
      return op->emitOpError("head ")
             << head << " adds the query's own value and needs "
             << "square self-attention, but queries are " << T
             << " tokens and keys " << S;
  }
  return success();
}

/// A sliding window and documents refine a causal mask: query t sees keys
/// t - window < s <= t, from its document's start, starts [B, T]; any mask
/// takes the sequences' lengths [B].
static LogicalResult verifyMask(Operation *op, int64_t window, bool causal,
                                RankedTensorType q, Value starts,
                                Value lengths) {
  if (lengths) {
    auto type = cast<RankedTensorType>(lengths.getType());
    if (type.getRank() != 1 || !compatible(type.getDimSize(0), q.getDimSize(0)))
      return op->emitOpError("lengths must be [B] like q's first dimension, "
                             "got ")
             << shapeString(type);
  }
  if (window < 0)
    return op->emitOpError("window must be 0 (none) or positive, got ")
           << window;
  if (window > 0 && !causal)
    return op->emitOpError("a window needs causal attention");
  if (!starts)
    return success();
  if (!causal)
    return op->emitOpError("documents (starts) need causal attention");
  auto type = cast<RankedTensorType>(starts.getType());
  if (type.getRank() != 2 || !compatible(type.getDimSize(0), q.getDimSize(0)) ||
      !compatible(type.getDimSize(1), q.getDimSize(1)))
    return op->emitOpError("starts must be [B, T] like q's first two "
                           "dimensions, got ")
           << shapeString(type);
  return success();
}

LogicalResult PadTargetsOp::verify() {
  auto targets = getTargets().getType(), lengths = getLengths().getType();
  if (targets.getRank() != 2 || lengths.getRank() != 1 ||
      !compatible(targets.getDimSize(0), lengths.getDimSize(0)))
    return emitOpError("takes targets [B, T] and lengths [B], got ")
           << shapeString(targets) << " and " << shapeString(lengths);
  return success();
}

LogicalResult DocumentStartsOp::verify() {
  if (getTokens().getType().getRank() != 2)
    return emitOpError("tokens must be [B, T], got ")
           << shapeString(getTokens().getType());
  const int64_t bos = getBosAttr().getInt();
  if (bos < 0 || bos > std::numeric_limits<int32_t>::max())
    return emitOpError("bos must be a token id, got ") << bos;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (getResult().getType() != getQ().getType())
    return emitOpError("result type must equal the type of q");
  if (failed(verifyMask(*this, getWindow(), getCausal(), getQ().getType(),
                        getStarts(), getLengths())))
    return failure();
  return verifyAttention(*this, getQ().getType(), getK().getType(),
                         getV().getType(), getCoefficients(),
                         getScale().convertToFloat(), getCross(), getKinds(),
                         getAlpha(), getBeta());
}

LogicalResult AttentionGradOp::verify() {
  if (bool(getCoefficients()) != bool(getGradCoefficients()))
    return emitOpError("has a coefficients gradient exactly when it has "
                       "coefficients");
  if (getCoefficients() &&
      getCoefficients().getType() != getGradCoefficients().getType())
    return emitOpError("grad_coefficients must have the coefficients' type");
  if (failed(verifyMask(*this, getWindow(), getCausal(), getQ().getType(),
                        getStarts(), getLengths())))
    return failure();
  return verifyAttention(*this, getQ().getType(), getK().getType(),
                         getV().getType(), getCoefficients(),
                         getScale().convertToFloat(), getCross(), getKinds(),
                         getAlpha(), getBeta());
}

SmallVector<std::pair<float, float>> AttentionOp::getFixedCoefficients() {
  return coefficientsOf(getNumHeads(), getKinds(), getAlpha(), getBeta());
}

LogicalResult CachedAttentionOp::verify() {
  RankedTensorType k = getK().getType(), cache = getKCache().getType();
  if (cache.getRank() != 4 ||
      !compatible(cache.getDimSize(0), k.getDimSize(0)) ||
      cache.getDimSize(2) != k.getDimSize(2) ||
      cache.getDimSize(3) != k.getDimSize(3))
    return emitOpError("caches must be [B, slots, KV, D] like k ")
           << shapeString(k) << ", got " << shapeString(cache);
  if (failed(verifyMask(*this, getWindow(), /*causal=*/true, getQ().getType(),
                        Value(), Value())))
    return failure();
  return verifyAttention(*this, getQ().getType(), k, getV().getType(),
                         getCoefficients(), getScale().convertToFloat(),
                         /*cross=*/false, getKinds(), getAlpha(), getBeta());
}

SmallVector<std::pair<float, float>> CachedAttentionOp::getFixedCoefficients() {
  return coefficientsOf(getNumHeads(), getKinds(), getAlpha(), getBeta());
}

/// `learnable`: one head index per learned column, ascending, below
/// `heads`.
static LogicalResult verifyLearnable(Operation *op, ArrayRef<int64_t> learnable,
                                     int64_t columns, int64_t heads) {
  if (columns != int64_t(learnable.size()))
    return op->emitOpError("learns ") << learnable.size() << " heads but has "
                                      << columns << " learned columns";
  for (size_t i = 0; i < learnable.size(); ++i)
    if (learnable[i] < 0 || learnable[i] >= heads ||
        (i > 0 && learnable[i] <= learnable[i - 1]))
      return op->emitOpError("learnable must list ascending heads below ")
             << heads;
  return success();
}

/// `type` is [2, n] with static n; returns n, or -1.
static int64_t coefficientColumns(RankedTensorType type) {
  if (type.getRank() != 2 || type.getDimSize(0) != 2 ||
      ShapedType::isDynamic(type.getDimSize(1)))
    return -1;
  return type.getDimSize(1);
}

LogicalResult HeadCoefficientsOp::verify() {
  int64_t learned = coefficientColumns(getLearned().getType()),
          heads = coefficientColumns(getResult().getType());
  if (learned < 0 || heads < 0)
    return emitOpError("takes [2, N] learned coefficients to [2, H]");
  if (failed(verifyLearnable(*this, getLearnable(), learned, heads)))
    return failure();
  if (int64_t(getAlpha().size()) != heads || int64_t(getBeta().size()) != heads)
    return emitOpError("alpha and beta must have one entry per head (")
           << heads << ")";
  for (int64_t h : getLearnable())
    if (getAlpha()[h] != 0 || getBeta()[h] != 0)
      return emitOpError("head ")
             << h << " is learned; its fixed entries must be 0";
  return success();
}

LogicalResult HeadCoefficientsGradOp::verify() {
  int64_t heads = coefficientColumns(getGradOutput().getType()),
          learned = coefficientColumns(getGradLearned().getType());
  if (learned < 0 || heads < 0)
    return emitOpError("takes a [2, H] gradient to [2, N]");
  return verifyLearnable(*this, getLearnable(), learned, heads);
}

//===----------------------------------------------------------------------===//
// Linear layers, embeddings, norms
//===----------------------------------------------------------------------===//

/// y = x W^T (+ b): x [..., K], a static W [N, K], b [N], y [..., N].
static LogicalResult verifyLinear(Operation *op, Value x, Value w, Value bias,
                                  Value y) {
  auto input = cast<RankedTensorType>(x.getType()),
       weight = cast<RankedTensorType>(w.getType()),
       result = cast<RankedTensorType>(y.getType());
  if (weight.getRank() != 2 || weight.isDynamicDim(0) || weight.isDynamicDim(1))
    return op->emitOpError("weight must be a static [N, K] matrix, got ")
           << shapeString(weight);
  int64_t n = weight.getDimSize(0), k = weight.getDimSize(1);
  if (input.getRank() < 1 || !compatible(input.getShape().back(), k))
    return op->emitOpError("input ")
           << shapeString(input) << " does not end in K = " << k;
  if (result.getRank() != input.getRank() || result.getShape().back() != n)
    return op->emitOpError("result must be ")
           << shapeString(input) << " with the last dimension " << n << ", got "
           << shapeString(result);
  for (int64_t d = 0; d + 1 < input.getRank(); ++d)
    if (!compatible(input.getDimSize(d), result.getDimSize(d)))
      return op->emitOpError("result dimension ")
             << d << " differs from the input's";
  if (bias && failed(verifyFeatureVector(op, bias, "bias", result)))
    return failure();
  return success();
}

LogicalResult LinearOp::verify() {
  return verifyLinear(*this, getInput(), getWeight(), getBias(), getResult());
}

LogicalResult LinearGeluOp::verify() {
  if (getPre().getType() != getResult().getType())
    return emitOpError("pre and result must have one type");
  return verifyLinear(*this, getInput(), getWeight(), getBias(), getResult());
}

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = getTable().getType(), ids = getIndices().getType(),
                   result = getResult().getType();
  if (table.getRank() != 2 || table.isDynamicDim(1))
    return emitOpError("table must be [V, C] with static C, got ")
           << shapeString(table);
  if (result.getRank() != ids.getRank() + 1 ||
      result.getShape().back() != table.getDimSize(1))
    return emitOpError("result must be the index shape ")
           << shapeString(ids) << " followed by C = " << table.getDimSize(1);
  for (int64_t d = 0; d < ids.getRank(); ++d)
    if (!compatible(ids.getDimSize(d), result.getDimSize(d)))
      return emitOpError("result dimension ")
             << d << " differs from the indices'";
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(), getBias(), getResult(),
                    getEpsAttr());
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(), Value(), getResult(),
                    getEpsAttr());
}

bool lap::isLoopFusible(Operation *op) {
  return op->hasTrait<OpTrait::LoopFusible>();
}

bool lap::isGenerated(Operation *op) {
  return isLoopFusible(op) || op->hasTrait<OpTrait::Generated>() ||
         isa<arith::ConstantOp>(op);
}

bool lap::hasBF16Kernel(Operation *op) {
  return op->hasTrait<OpTrait::BF16Kernel>();
}

bool lap::needsWidening(Operation *op) {
  if (op->hasTrait<mlir::OpTrait::IsTerminator>() || isGenerated(op) ||
      hasBF16Kernel(op))
    return false;
  auto bf16 = [](Type type) { return getElementTypeOrSelf(type).isBF16(); };
  return llvm::any_of(op->getOperandTypes(), bf16) ||
         llvm::any_of(op->getResultTypes(), bf16);
}

bool lap::isRowReduction(Operation *op) {
  return isa<LayerNormOp, RMSNormOp>(op);
}

Value lap::rowsOf(Operation *op) {
  return isa<ColumnSumOp>(op) ? op->getOperand(0) : op->getResult(0);
}

RankedTensorType FusionOp::getRowType() {
  Block &body = getBody().front();
  Operation *first = &body.front();
  return cast<RankedTensorType>(first == body.getTerminator()
                                    ? getResult(0).getType()
                                    : rowsOf(first).getType());
}

LogicalResult ColumnSumOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1) ||
      result.getRank() != 1 || result.getDimSize(0) != input.getShape().back())
    return emitOpError("sums [..., C] to [C], got ")
           << shapeString(input) << " -> " << shapeString(result);
  return success();
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("needs one body argument of the same type per input");
  if (getNumResults() == 0)
    return emitOpError("must yield at least one value");
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield.getValues().getTypes() != getResultTypes())
    return emitOpError("must end in a lap.yield of its result types");
  if (body.without_terminator().empty())
    return emitOpError("computes nothing");
  RankedTensorType rows = getRowType();
  if (rows.getRank() < 2 || rows.isDynamicDim(rows.getRank() - 1))
    return emitOpError("computes rows [..., C] with a static C, got ")
           << shapeString(rows);
  int64_t width = rows.getShape().back();
  // Shapes only: a lap.convert in the body makes values of both precisions.
  auto isRow = [&](Type type) {
    return cast<RankedTensorType>(type).getShape() == rows.getShape();
  };
  auto fits = [&](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return isRow(type) ||
           (tensor.getRank() == 1 && tensor.getDimSize(0) == width);
  };
  for (Type type : getInputs().getTypes())
    if (!fits(type))
      return emitOpError("reads ")
             << shapeString(cast<RankedTensorType>(type)) << "; its values are "
             << shapeString(rows) << " or [" << width << "] per column";
  for (Operation &op : body.without_terminator()) {
    if (!isLoopFusible(&op))
      return emitOpError("cannot compute '") << op.getName() << "' in its loop";
    if (!isRow(rowsOf(&op).getType()))
      return emitOpError("holds an op on rows that are not ")
             << shapeString(rows);
    for (Type type : op.getOperandTypes())
      if (!fits(type))
        return emitOpError("holds an op with an operand of shape ")
               << shapeString(cast<RankedTensorType>(type));
  }
  for (Value value : yield.getValues())
    if (!isRow(value.getType()) && !value.getDefiningOp<ColumnSumOp>())
      return emitOpError("yields a value that is neither ")
             << shapeString(rows) << " nor a column sum";
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type.getRank() != 4 || type.isDynamicDim(3) ||
      type.getDimSize(3) % 2 != 0)
    return emitOpError("rotates [B, T, H, D] with a static, even D, got ")
           << shapeString(type);
  if (getBase().convertToFloat() <= 0)
    return emitOpError("base must be positive");
  return success();
}

/// The width (H + 2 KV) D of the fused projection that q [B, T, H, D] and
/// k, v [B, T, KV, D] come from.
static FailureOr<int64_t> headsWidth(Operation *op, RankedTensorType q,
                                     RankedTensorType k, RankedTensorType v) {
  if (q.getRank() != 4 || k.getRank() != 4 || k != v)
    return op->emitOpError(
        "heads must be q [B, T, H, D] and k, v [B, T, KV, D]");
  if (q.isDynamicDim(2) || q.isDynamicDim(3) || k.isDynamicDim(2) ||
      q.getDimSize(3) != k.getDimSize(3))
    return op->emitOpError("head counts and head_dim must be static and agree");
  return (q.getDimSize(2) + 2 * k.getDimSize(2)) * q.getDimSize(3);
}

/// Rows [B, T, C] and heads with the same batch and sequence.
static LogicalResult verifyHeadsRows(Operation *op, RankedTensorType rows,
                                     int64_t width, RankedTensorType q,
                                     RankedTensorType k, StringRef what) {
  if (rows.getRank() != 3 || rows.isDynamicDim(2) ||
      (width >= 0 && rows.getShape().back() != width))
    return op->emitOpError()
           << what << " must be [B, T, "
           << (width >= 0 ? "(H + 2 KV) D] = [?, ?, " + std::to_string(width)
                          : std::string("C"))
           << "], got " << shapeString(rows);
  for (int64_t d = 0; d < 2; ++d)
    if (!compatible(rows.getDimSize(d), q.getDimSize(d)) ||
        !compatible(rows.getDimSize(d), k.getDimSize(d)))
      return op->emitOpError("heads must keep the ")
             << what << "'s batch and sequence";
  return success();
}

/// The fused projection's weight [(H + 2 KV) D, C] for rows of width C.
static LogicalResult verifyHeadsWeight(Operation *op, RankedTensorType weight,
                                       int64_t width, RankedTensorType rows) {
  if (weight.getRank() != 2 || weight.getDimSize(0) != width ||
      weight.getDimSize(1) != rows.getShape().back())
    return op->emitOpError("weight must be [(H + 2 KV) D, C] = [")
           << width << ", " << rows.getShape().back() << "], got "
           << shapeString(weight);
  return success();
}

LogicalResult SplitHeadsOp::verify() {
  FailureOr<int64_t> width =
      headsWidth(*this, getQ().getType(), getK().getType(), getV().getType());
  if (failed(width))
    return failure();
  return verifyHeadsRows(*this, getInput().getType(), *width, getQ().getType(),
                         getK().getType(), "input");
}

LogicalResult LinearHeadsOp::verify() {
  RankedTensorType input = getInput().getType();
  FailureOr<int64_t> width =
      headsWidth(*this, getQ().getType(), getK().getType(), getV().getType());
  if (failed(width) ||
      failed(verifyHeadsRows(*this, input, -1, getQ().getType(),
                             getK().getType(), "input")) ||
      failed(verifyHeadsWeight(*this, getWeight().getType(), *width, input)))
    return failure();
  if (getBias())
    return verifyFeatureVector(
        *this, getBias(), "bias",
        RankedTensorType::get({*width}, input.getElementType()));
  return success();
}

LogicalResult LinearHeadsGradOp::verify() {
  RankedTensorType input = getInput().getType();
  FailureOr<int64_t> width = headsWidth(
      *this, getGradQ().getType(), getGradK().getType(), getGradV().getType());
  if (failed(width) ||
      failed(verifyHeadsRows(*this, input, -1, getGradQ().getType(),
                             getGradK().getType(), "input")) ||
      failed(verifyHeadsWeight(*this, getWeight().getType(), *width, input)))
    return failure();
  return verifyFeatureVector(
      *this, getGradBias(), "grad_bias",
      RankedTensorType::get({*width}, input.getElementType()));
}

LogicalResult MergeHeadsOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (input.getRank() != 4 || input.isDynamicDim(2) || input.isDynamicDim(3))
    return emitOpError("input must be [B, T, H, D] with static H and D");
  if (result.getRank() != 3 ||
      result.getDimSize(2) != input.getDimSize(2) * input.getDimSize(3) ||
      !compatible(result.getDimSize(0), input.getDimSize(0)) ||
      !compatible(result.getDimSize(1), input.getDimSize(1)))
    return emitOpError("result must be [B, T, H D], got ")
           << shapeString(result);
  return success();
}

LogicalResult AddPositionsOp::verify() {
  RankedTensorType input = getInput().getType(), table = getTable().getType();
  if (input.getRank() != 3 || table.getRank() != 2 || table.isDynamicDim(0) ||
      table.getDimSize(1) != input.getDimSize(2))
    return emitOpError("expects x [B, T, C] and a static table [P, C], got ")
           << shapeString(input) << " and " << shapeString(table);
  int64_t offset = getOffset();
  if (offset < 0)
    return emitOpError("offset must not be negative");
  if (!input.isDynamicDim(1) &&
      offset + table.getDimSize(0) < input.getDimSize(1))
    return emitOpError("the table's ")
           << table.getDimSize(0) << " positions do not cover tokens " << offset
           << ".." << input.getDimSize(1) - 1;
  return success();
}

/// Dropout rates: a probability below 1 (1 would divide by zero).
static LogicalResult verifyRate(Operation *op, APFloat rate) {
  float r = rate.convertToFloat();
  if (r < 0 || r >= 1)
    return op->emitOpError("rate must be in [0, 1), got ") << r;
  return success();
}

LogicalResult DropoutOp::verify() { return verifyRate(*this, getRate()); }
LogicalResult DropPathOp::verify() { return verifyRate(*this, getRate()); }

LogicalResult PatchifyOp::verify() {
  RankedTensorType images = getImages().getType(),
                   result = getResult().getType();
  int64_t p = getPatch();
  if (images.getRank() != 4 || images.isDynamicDim(1) ||
      images.isDynamicDim(2) || images.isDynamicDim(3))
    return emitOpError("images must be [B, C, H, W] with static C, H, W, got ")
           << shapeString(images);
  if (p < 1 || images.getDimSize(2) % p || images.getDimSize(3) % p)
    return emitOpError("patch ")
           << p << " must divide the image size " << images.getDimSize(2) << "x"
           << images.getDimSize(3);
  int64_t patches = (images.getDimSize(2) / p) * (images.getDimSize(3) / p);
  int64_t features = images.getDimSize(1) * p * p;
  if (result.getRank() != 3 || result.getDimSize(1) != patches ||
      result.getDimSize(2) != features ||
      !compatible(result.getDimSize(0), images.getDimSize(0)))
    return emitOpError("result must be [B, ")
           << patches << ", " << features << "], got " << shapeString(result);
  return success();
}

LogicalResult PrependTokensOp::verify() {
  RankedTensorType input = getInput().getType(), tokens = getTokens().getType(),
                   result = getResult().getType();
  if (input.getRank() != 3 || tokens.getRank() != 2 || tokens.isDynamicDim(0) ||
      tokens.getDimSize(1) != input.getDimSize(2))
    return emitOpError("expects x [B, N, C] and static tokens [k, C], got ")
           << shapeString(input) << " and " << shapeString(tokens);
  int64_t n = input.getDimSize(1);
  int64_t expected = ShapedType::isDynamic(n) ? n : n + tokens.getDimSize(0);
  if (result.getRank() != 3 || result.getDimSize(1) != expected ||
      result.getDimSize(2) != input.getDimSize(2) ||
      !compatible(result.getDimSize(0), input.getDimSize(0)))
    return emitOpError("result must be [B, k + N, C], got ")
           << shapeString(result);
  return success();
}

LogicalResult LayerScaleOp::verify() {
  return verifyFeatureVector(*this, getGamma(), "gamma", getInput().getType());
}

LogicalResult AddBiasOp::verify() {
  return verifyFeatureVector(*this, getBias(), "bias", getInput().getType());
}

/// [B, T, C] -> [B, C] with `first` tokens before the ones read.
static LogicalResult verifyTokenPooling(Operation *op, RankedTensorType input,
                                        RankedTensorType result,
                                        int64_t first) {
  if (input.getRank() != 3 || result.getRank() != 2 ||
      result.getDimSize(1) != input.getDimSize(2) ||
      !compatible(result.getDimSize(0), input.getDimSize(0)))
    return op->emitOpError("pools [B, T, C] to [B, C], got ")
           << shapeString(input) << " -> " << shapeString(result);
  if (first < 0 || (!input.isDynamicDim(1) && first >= input.getDimSize(1)))
    return op->emitOpError("token ") << first << " is outside the sequence";
  return success();
}

LogicalResult TakeTokenOp::verify() {
  return verifyTokenPooling(*this, getInput().getType(), getResult().getType(),
                            getIndex());
}

LogicalResult MeanTokensOp::verify() {
  return verifyTokenPooling(*this, getInput().getType(), getResult().getType(),
                            getSkip());
}

LogicalResult WeightNormOp::verify() {
  RankedTensorType v = getDirection().getType(), g = getMagnitude().getType();
  if (v.getRank() != 2 || g.getRank() != 2 || g.getDimSize(1) != 1 ||
      !compatible(g.getDimSize(0), v.getDimSize(0)))
    return emitOpError("expects v [K, D] and g [K, 1], got ")
           << shapeString(v) << " and " << shapeString(g);
  return success();
}

LogicalResult ResidualAddOp::verify() {
  if (getGamma() && failed(verifyFeatureVector(*this, getGamma(), "gamma",
                                               getInput().getType())))
    return failure();
  return verifyRate(*this, getDropRate());
}

LogicalResult SoftcapOp::verify() {
  if (getCap().convertToFloat() <= 0)
    return emitOpError("cap must be positive");
  return success();
}

LogicalResult ConvertOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (input.getRank() == 0)
    return emitOpError("converts tensors of rank >= 1; scalars (losses) are "
                       "f32 at every precision");
  if (input.getElementType() == result.getElementType())
    return emitOpError("converts between f32 and bf16, got ")
           << input.getElementType() << " to " << result.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The checks of a cross-entropy over the rows of `rows` [..., K] (`name`,
/// e.g. "logits'", whose last dimension is the `last`): targets [...] of
/// the same leading shape, label smoothing in [0, 1], a softcap >= 0.
static LogicalResult verifyCrossEntropy(Operation *op, RankedTensorType rows,
                                        RankedTensorType targets,
                                        StringRef name, StringRef last,
                                        FloatAttr smoothing,
                                        FloatAttr softcap) {
  if (rows.getRank() != targets.getRank() + 1)
    return op->emitOpError("targets ")
           << shapeString(targets) << " must be the " << name << " shape "
           << shapeString(rows) << " without the " << last;
  for (int64_t d = 0; d < targets.getRank(); ++d)
    if (!compatible(rows.getDimSize(d), targets.getDimSize(d)))
      return op->emitOpError("targets dimension ")
             << d << " differs from the " << name;
  float s = smoothing.getValueAsDouble();
  if (s < 0 || s > 1)
    return op->emitOpError("label_smoothing must be in [0, 1]");
  if (softcap.getValueAsDouble() < 0)
    return op->emitOpError("softcap must not be negative");
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return verifyCrossEntropy(*this, getLogits().getType(),
                            getTargets().getType(), "logits'", "classes",
                            getLabelSmoothingAttr(), getSoftcapAttr());
}

//===----------------------------------------------------------------------===//
// Gradient ops: each result has the shape of what it is the gradient of.
//===----------------------------------------------------------------------===//

/// The gradients of y = x W^T (+ b) from dy [..., N]: x [..., K] (called
/// `name`) and W [N, K]; grad_bias [N] of a linear layer, [K] of the one
/// before (lap.gelu_linear_grad), the last dimension of `biasOf`.
static LogicalResult verifyLinearGrad(Operation *op, Value dyValue,
                                      Value xValue, StringRef name,
                                      Value wValue, Value gradBias,
                                      RankedTensorType biasOf) {
  auto dy = cast<RankedTensorType>(dyValue.getType()),
       x = cast<RankedTensorType>(xValue.getType()),
       w = cast<RankedTensorType>(wValue.getType());
  if (w.getRank() != 2 || dy.getRank() != x.getRank() ||
      !compatible(dy.getShape().back(), w.getDimSize(0)) ||
      !compatible(x.getShape().back(), w.getDimSize(1)))
    return op->emitOpError("expects dy [..., N], ")
           << name << " [..., K] and W [N, K], got " << shapeString(dy) << ", "
           << shapeString(x) << " and " << shapeString(w);
  return verifyFeatureVector(op, gradBias, "grad_bias", biasOf);
}

LogicalResult LinearGradOp::verify() {
  return verifyLinearGrad(*this, getGradOutput(), getInput(), "x", getWeight(),
                          getGradBias(), getGradOutput().getType());
}

LogicalResult GeluLinearGradOp::verify() {
  return verifyLinearGrad(*this, getGradOutput(), getPre(), "pre", getWeight(),
                          getGradBias(), getPre().getType());
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType dy = getGradOutput().getType(), ids = getIndices().getType(),
                   table = getGradTable().getType();
  if (table.getRank() != 2 || table.isDynamicDim(0) ||
      dy.getRank() != ids.getRank() + 1 ||
      dy.getShape().back() != table.getDimSize(1))
    return emitOpError("expects dy [..., C] over the indices and a static "
                       "table [V, C], got ")
           << shapeString(dy) << " and " << shapeString(table);
  return success();
}

int64_t lap::positionGridSide(Type table, int64_t keep) {
  auto t = dyn_cast<RankedTensorType>(table);
  if (!t || t.getRank() != 2 || !t.hasStaticShape() || t.getDimSize(0) <= keep)
    return 0;
  auto side = int64_t(std::lround(std::sqrt(double(t.getDimSize(0) - keep))));
  return side * side == t.getDimSize(0) - keep ? side : 0;
}

/// Position tables of two square patch grids: from [keep + G*G, C] to
/// [keep + g*g, C], both static.
static LogicalResult verifyPositionGrids(Operation *op, RankedTensorType from,
                                         RankedTensorType to, int64_t keep) {
  if (keep < 0)
    return op->emitOpError("keep must not be negative");
  if (!positionGridSide(from, keep) || !positionGridSide(to, keep) ||
      from.getDimSize(1) != to.getDimSize(1))
    return op->emitOpError("expects static tables [")
           << keep << " + G*G, C] and [" << keep << " + g*g, C], got "
           << shapeString(from) << " and " << shapeString(to);
  return success();
}

LogicalResult InterpolatePositionsOp::verify() {
  return verifyPositionGrids(*this, getInput().getType(), getResult().getType(),
                             getKeep());
}

LogicalResult InterpolatePositionsGradOp::verify() {
  return verifyPositionGrids(*this, getGradInput().getType(),
                             getGradOutput().getType(), getKeep());
}

LogicalResult AddPositionsGradOp::verify() {
  RankedTensorType dy = getGradOutput().getType(),
                   table = getGradTable().getType();
  if (dy.getRank() != 3 || table.getRank() != 2 || table.isDynamicDim(0) ||
      table.getDimSize(1) != dy.getDimSize(2))
    return emitOpError("expects dy [B, T, C] and a static table [P, C], got ")
           << shapeString(dy) << " and " << shapeString(table);
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType x = getInput().getType();
  if (failed(verifyFeatureVector(*this, getGradWeight(), "grad_weight", x)) ||
      failed(verifyFeatureVector(*this, getGradBias(), "grad_bias", x)))
    return failure();
  return getWeight() ? verifyFeatureVector(*this, getWeight(), "weight", x)
                     : success();
}

LogicalResult RMSNormGradOp::verify() {
  RankedTensorType x = getInput().getType();
  if (failed(verifyFeatureVector(*this, getGradWeight(), "grad_weight", x)))
    return failure();
  return getWeight() ? verifyFeatureVector(*this, getWeight(), "weight", x)
                     : success();
}

LogicalResult SplitHeadsGradOp::verify() {
  RankedTensorType dq = getGradQ().getType(), dk = getGradK().getType(),
                   dx = getGradInput().getType();
  if (dq.getRank() != 4 || dk.getRank() != 4 ||
      dq.getDimSize(3) != dk.getDimSize(3) || dx.getRank() != 3 ||
      dx.getDimSize(2) !=
          (dq.getDimSize(2) + 2 * dk.getDimSize(2)) * dq.getDimSize(3))
    return emitOpError(
               "expects dq [B, T, H, D], dk, dv [B, T, KV, D] and a result "
               "[B, T, (H + 2 KV) D], got ")
           << shapeString(dq) << ", " << shapeString(dk) << " -> "
           << shapeString(dx);
  return success();
}

LogicalResult MergeHeadsGradOp::verify() {
  RankedTensorType dy = getGradOutput().getType(),
                   dx = getGradInput().getType();
  if (dx.getRank() != 4 || dy.getRank() != 3 ||
      dy.getDimSize(2) != dx.getDimSize(2) * dx.getDimSize(3))
    return emitOpError("expects dy [B, T, H D] and a result [B, T, H, D], got ")
           << shapeString(dy) << " -> " << shapeString(dx);
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  RankedTensorType logits = getLogits().getType(),
                   targets = getTargets().getType();
  if (logits.getRank() != targets.getRank() + 1)
    return emitOpError("targets ")
           << shapeString(targets) << " must be the logits' shape "
           << shapeString(logits) << " without the classes";
  return success();
}

LogicalResult LinearCrossEntropyOp::verify() {
  RankedTensorType input = getInput().getType(), weight = getWeight().getType(),
                   targets = getTargets().getType();
  if (weight.getRank() != 2 || input.getRank() < 1 ||
      input.isDynamicDim(input.getRank() - 1) ||
      weight.getDimSize(1) != input.getShape().back())
    return emitOpError("expects input [..., C] and weight [V, C], got ")
           << shapeString(input) << " and " << shapeString(weight);
  return verifyCrossEntropy(*this, input, targets, "input's", "features",
                            getLabelSmoothingAttr(), getSoftcapAttr());
}

LogicalResult PatchifyGradOp::verify() {
  RankedTensorType dy = getGradOutput().getType(),
                   images = getGradImages().getType();
  int64_t p = getPatch();
  if (images.getRank() != 4 || dy.getRank() != 3 || p < 1 ||
      images.isDynamicDim(2) || images.isDynamicDim(3) ||
      images.getDimSize(2) % p || images.getDimSize(3) % p ||
      dy.getDimSize(1) !=
          (images.getDimSize(2) / p) * (images.getDimSize(3) / p) ||
      dy.getDimSize(2) != images.getDimSize(1) * p * p)
    return emitOpError(
               "expects patch gradients [B, (H/p)(W/p), C p p] for images "
               "[B, C, H, W], got ")
           << shapeString(dy) << " -> " << shapeString(images);
  return success();
}

LogicalResult PrependTokensGradOp::verify() {
  RankedTensorType dy = getGradOutput().getType(),
                   dx = getGradInput().getType(),
                   dt = getGradTokens().getType();
  if (dy.getRank() != 3 || dx.getRank() != 3 || dt.getRank() != 2 ||
      dt.getDimSize(1) != dy.getDimSize(2) ||
      dx.getDimSize(2) != dy.getDimSize(2) ||
      (!dy.isDynamicDim(1) && !dx.isDynamicDim(1) &&
       dy.getDimSize(1) != dx.getDimSize(1) + dt.getDimSize(0)))
    return emitOpError("expects dy [B, k + N, C] -> [B, N, C] and [k, C], got ")
           << shapeString(dy) << " -> " << shapeString(dx) << " and "
           << shapeString(dt);
  return success();
}

LogicalResult ActivationGradOp::verify() {
  StringRef name = getActivation();
  if (name != "gelu_tanh" && name != "gelu" && name != "relu2")
    return emitOpError("unknown activation '")
           << name << "' (gelu_tanh, gelu or relu2)";
  return success();
}

LogicalResult RowLossGradOp::verify() {
  StringRef loss = getLoss();
  if (loss != "soft_cross_entropy" && loss != "bce_with_logits" &&
      loss != "dino_loss")
    return emitOpError("unknown loss '")
           << loss << "' (soft_cross_entropy, bce_with_logits or dino_loss)";
  if (getTemperature().convertToFloat() <= 0)
    return emitOpError("temperature must be positive");
  return success();
}

/// Losses over [B, K] rows with targets of the same shape.
static LogicalResult verifyRowLoss(Operation *op, Value logits, Value targets) {
  auto l = cast<RankedTensorType>(logits.getType()),
       t = cast<RankedTensorType>(targets.getType());
  if (l.getRank() != 2 || t.getRank() != 2 ||
      !compatible(l.getDimSize(0), t.getDimSize(0)) ||
      !compatible(l.getDimSize(1), t.getDimSize(1)))
    return op->emitOpError(
               "expects [B, K] logits and targets of the same shape, got ")
           << shapeString(l) << " and " << shapeString(t);
  return success();
}

LogicalResult SoftCrossEntropyOp::verify() {
  return verifyRowLoss(*this, getLogits(), getTargets());
}

LogicalResult BCEWithLogitsOp::verify() {
  return verifyRowLoss(*this, getLogits(), getTargets());
}

LogicalResult DinoLossOp::verify() {
  if (getTemperature().convertToFloat() <= 0)
    return emitOpError("temperature must be positive");
  return verifyRowLoss(*this, getStudent(), getTeacher());
}

#define GET_OP_CLASSES
#include "dialects/Lap/IR/LapOps.cpp.inc"
