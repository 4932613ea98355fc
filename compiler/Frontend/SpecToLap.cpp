//===- SpecToLap.cpp - A verified spec as lap IR ----------------*- C++ -*-===//
//
// One builder walks the model the way a PyTorch module's forward would:
// embedding, blocks (pre-norm attention and MLP, residuals), final norm,
// head, loss. Parameters are the function's leading arguments, created up
// front from dsl::parameterTable so the order is the checkpoint order.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/SpecToLap.h"

#include "dialects/Lap/IR/LapOps.h"
#include "dsl/ParameterTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace lap;

namespace {

constexpr int64_t kDynamic = ShapedType::kDynamic;

class ForwardBuilder {
public:
  ForwardBuilder(const dsl::Spec &spec, MLIRContext &context)
      : spec(spec), m(spec.model), context(context), b(&context) {}

  OwningOpRef<ModuleOp> build();

private:
  /// The location of spec setting `path`, named after module `scope`.
  Location loc(const std::string &path, const std::string &scope = "") {
    dsl::Loc l = spec.locationOf(path);
    Location file = l.line ? Location(FileLineColLoc::get(&context, l.file, l.line, l.col))
                           : Location(UnknownLoc::get(&context));
    return scope.empty() ? file : NameLoc::get(b.getStringAttr(scope), file);
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  /// [B, T, features...]
  RankedTensorType activations(ArrayRef<int64_t> features) {
    SmallVector<int64_t> shape = {kDynamic, kDynamic};
    shape.append(features.begin(), features.end());
    return f32(shape);
  }

  /// The parameter named `name`, or a null value when the model has none.
  Value param(const std::string &name) {
    auto it = params.find(name);
    return it == params.end() ? Value() : it->second;
  }

  Value norm(Value x, const std::string &name);
  Value block(Value x, int64_t layer);
  Value attention(Value h, const std::string &prefix, int64_t layer);
  Value mlp(Value h, const std::string &prefix);
  Value linear(Value x, const std::string &name, int64_t out, Location where);
  Value dropout(Value x, Location where);

  const dsl::Spec &spec;
  const dsl::ModelSpec &m;
  MLIRContext &context;
  OpBuilder b;
  std::map<std::string, Value> params;
};

Value ForwardBuilder::norm(Value x, const std::string &name) {
  Location where = loc("model.norm", name);
  FloatAttr eps = b.getF32FloatAttr(float(m.norm.eps));
  if (m.norm.type == dsl::NormType::LayerNorm)
    return b.create<LayerNormOp>(where, x.getType(), x, param(name + ".weight"),
                                 param(name + ".bias"), eps);
  return b.create<RMSNormOp>(where, x.getType(), x, param(name + ".weight"), eps);
}

Value ForwardBuilder::linear(Value x, const std::string &name, int64_t out,
                             Location where) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = out;
  return b.create<LinearOp>(where, f32(shape), x, param(name + ".weight"),
                            param(name + ".bias"));
}

Value ForwardBuilder::dropout(Value x, Location where) {
  if (m.dropout == 0)
    return x;
  return b.create<DropoutOp>(where, x, b.getF32FloatAttr(float(m.dropout)));
}

Value ForwardBuilder::attention(Value h, const std::string &prefix, int64_t layer) {
  const int64_t heads = m.heads, kvHeads = m.kvHeads, d = m.headDim;
  std::string scope = prefix + ".attn";
  Location where = loc("model.heads", scope);
  Value qkv = linear(h, scope + ".qkv", (heads + 2 * kvHeads) * d, where);
  auto split = b.create<SplitHeadsOp>(where, activations({heads, d}),
                                      activations({kvHeads, d}),
                                      activations({kvHeads, d}), qkv);
  Value q = split.getQ(), k = split.getK(), v = split.getV();
  if (m.qkNorm) {
    q = norm(q, scope + ".q_norm");
    k = norm(k, scope + ".k_norm");
  }
  if (m.positions.type == dsl::PositionType::Rope) {
    Location rope = loc("model.positions", scope);
    FloatAttr base = b.getF32FloatAttr(float(m.positions.ropeBase));
    q = b.create<RopeOp>(rope, q, base);
    k = b.create<RopeOp>(rope, k, base);
  }
  SmallVector<StringRef> kinds;
  for (dsl::HeadKindId id : spec.attention.layers[size_t(layer)])
    kinds.push_back(dsl::headKinds()[id].name);
  std::string placement = spec.given("attention.laplacian_heads") ? "attention.laplacian_heads"
                          : spec.given("attention.kinds")         ? "attention.kinds"
                                                                  : "model.heads";
  Value o = b.create<AttentionOp>(
      loc(placement, scope), q.getType(), q, k, v,
      b.getF32FloatAttr(float(1.0 / std::sqrt(double(d)))),
      m.family == dsl::Family::GPT ? b.getUnitAttr() : UnitAttr(), UnitAttr(),
      b.getStrArrayAttr(kinds), DenseF32ArrayAttr(), DenseF32ArrayAttr());
  Value merged = b.create<MergeHeadsOp>(where, activations({heads * d}), o);
  return dropout(linear(merged, scope + ".proj", m.width, where), where);
}

Value ForwardBuilder::mlp(Value h, const std::string &prefix) {
  std::string scope = prefix + ".mlp";
  Location where = loc("model.mlp_ratio", scope);
  Value x = linear(h, scope + ".fc1", m.mlpHidden, where);
  Location act = loc("model.activation", scope);
  switch (m.activation) {
  case dsl::Activation::GeluTanh:
    x = b.create<GeluTanhOp>(act, x);
    break;
  case dsl::Activation::Gelu:
    x = b.create<GeluOp>(act, x);
    break;
  case dsl::Activation::ReLU2:
    x = b.create<ReLU2Op>(act, x);
    break;
  }
  return dropout(linear(x, scope + ".fc2", m.width, where), where);
}

Value ForwardBuilder::block(Value x, int64_t layer) {
  std::string prefix = "blocks." + std::to_string(layer);
  Location residual = loc("model.layers", prefix);
  Value a = attention(norm(x, prefix + ".norm1"), prefix, layer);
  x = b.create<AddOp>(residual, x, a);
  Value f = mlp(norm(x, prefix + ".norm2"), prefix);
  return b.create<AddOp>(residual, x, f);
}

OwningOpRef<ModuleOp> ForwardBuilder::build() {
  Location top = loc("model", spec.name);
  OwningOpRef<ModuleOp> module = ModuleOp::create(top, spec.name);
  if (m.family != dsl::Family::GPT) {
    emitError(loc("model.family"), "the compiler builds the gpt family so far; ")
        << "vit and dino are next";
    return nullptr;
  }
  b.setInsertionPointToEnd(module->getBody());
  auto func = b.create<func::FuncOp>(top, "forward", b.getFunctionType({}, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  std::vector<dsl::Parameter> table = dsl::parameterTable(spec);
  for (const dsl::Parameter &p : table)
    params[p.name] = body->addArgument(f32(p.shape), loc("model", p.name));
  auto i32Batch = RankedTensorType::get({kDynamic, kDynamic}, b.getI32Type());
  Value tokens = body->addArgument(i32Batch, loc("model.vocab", "tokens"));
  Value targets = body->addArgument(i32Batch, loc("model.vocab", "targets"));

  Value x = b.create<EmbeddingOp>(loc("model.vocab", "wte"), activations({m.width}),
                                  param("wte.weight"), tokens);
  if (Value wpe = param("wpe.weight"))
    x = b.create<AddPositionsOp>(loc("model.positions", "wpe"), x, wpe,
                                 b.getI64IntegerAttr(0));
  x = dropout(x, loc("model.dropout"));
  if (m.embeddingNorm)
    x = norm(x, "embedding_norm");
  for (int64_t l = 0; l < m.layers; ++l)
    x = block(x, l);
  if (m.finalNorm)
    x = norm(x, "norm");
  Location head = loc("model.vocab", "lm_head");
  Value logits = b.create<LinearOp>(
      head, activations({m.vocab}), x,
      m.tiedEmbeddings ? param("wte.weight") : param("lm_head.weight"), Value());
  if (m.logitSoftcap > 0)
    logits = b.create<SoftcapOp>(loc("model.logit_softcap", "lm_head"), logits,
                                 b.getF32FloatAttr(float(m.logitSoftcap)));
  Value loss = b.create<CrossEntropyOp>(loc("model.family", "loss"),
                                        RankedTensorType::get({}, b.getF32Type()),
                                        logits, targets, b.getF32FloatAttr(0));
  b.create<func::ReturnOp>(top, ValueRange{loss, logits});

  func.setType(b.getFunctionType(body->getArgumentTypes(),
                                 TypeRange{loss.getType(), logits.getType()}));
  for (size_t i = 0; i < table.size(); ++i)
    func.setArgAttr(unsigned(i), "lap.name", b.getStringAttr(table[i].name));
  func.setArgAttr(unsigned(table.size()), "lap.name", b.getStringAttr("tokens"));
  func.setArgAttr(unsigned(table.size() + 1), "lap.name", b.getStringAttr("targets"));
  func.setResultAttr(0, "lap.name", b.getStringAttr("loss"));
  func.setResultAttr(1, "lap.name", b.getStringAttr("logits"));
  return module;
}

} // namespace

OwningOpRef<ModuleOp> lap::buildForward(const dsl::Spec &spec, MLIRContext &context) {
  context.loadDialect<LapDialect, func::FuncDialect>();
  return ForwardBuilder(spec, context).build();
}
