//===- SpecToLap.cpp - A verified spec as lap IR ----------------*- C++ -*-===//
//
// One builder walks the model the way a PyTorch module's forward would:
// embedding, blocks (pre-norm attention and MLP, residuals), final norm,
// head, loss. Parameters are the function's leading arguments, created up
// front from dsl::parameterTable so the order is the checkpoint order.
// Language models get @decode: the same walk over new tokens only, with
// attention against a key/value cache and no loss. Every model gets
// @features: the walk up to the last block, returning the residual stream
// after the embedding and after each block (what the geometry analyses
// measure). Image models get @embed: the pooled, normalised backbone
// features (what k-NN and linear probes read). A DINO model trained on
// local crops gets @forward_local too: the same walk on images of the local
// crop size, its learned positions interpolated to the smaller patch grid.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/SpecToLap.h"

#include "dialects/Lap/IR/LapDialect.h"
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
    Location file =
        l.line ? Location(FileLineColLoc::get(&context, l.file, l.line, l.col))
               : Location(UnknownLoc::get(&context));
    return scope.empty() ? file : NameLoc::get(b.getStringAttr(scope), file);
  }

  /// A tensor of the spec's precision (train.precision): what the model
  /// computes on. Its edges are f32 at either precision: parameters (the
  /// master weights), float batch tensors, key/value caches and outputs.
  RankedTensorType floats(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element());
  }
  Type element() { return bf16() ? Type(b.getBF16Type()) : b.getF32Type(); }
  bool bf16() { return spec.train.precision == dsl::Precision::BF16; }
  /// `v` (f32 or bf16) in element type `element`, converted if need be.
  Value convert(Value v, Type element) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element)
      return v;
    return b.create<ConvertOp>(v.getLoc(), type.clone(element), v);
  }
  /// An f32 edge value in the model's precision, and back.
  Value enter(Value v) { return convert(v, element()); }
  Value leave(Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() > 0 && isa<FloatType>(type.getElementType())
               ? convert(v, b.getF32Type())
               : v;
  }
  /// [B, T, features...]
  RankedTensorType activations(ArrayRef<int64_t> features) {
    SmallVector<int64_t> shape = {kDynamic, sequence};
    shape.append(features.begin(), features.end());
    return floats(shape);
  }

  /// The parameter named `name`, or a null value when the model has none.
  /// In the model's precision: a bf16 model converts each parameter where
  /// it is first read.
  Value param(const std::string &name) {
    Value f32 = master(name);
    if (!f32)
      return Value();
    Value &entered = enteredParams[name];
    if (!entered)
      entered = enter(f32);
    return entered;
  }
  /// The parameter named `name` as it is, f32 (the master weights), or a
  /// null value.
  Value master(const std::string &name) {
    auto it = params.find(name);
    return it == params.end() ? Value() : it->second;
  }

  OwningOpRef<ModuleOp> failAt(const std::string &path, const Twine &message) {
    emitError(loc(path), message);
    return nullptr;
  }

  /// A function `name` whose leading arguments are the parameters.
  func::FuncOp beginFunction(StringRef name, Location where);
  /// Names the arguments after the parameters and `inputNames`, and the
  /// results after `outputNames`, then fixes the function's type.
  void endFunction(func::FuncOp func, ArrayRef<Value> results,
                   ArrayRef<std::string> inputNames,
                   ArrayRef<std::string> outputNames);

  /// The body of @forward per family: the batch arguments, then the ops;
  /// returns the loss and the logits.
  std::pair<Value, Value> gptForward(Block *body);
  /// The body of @decode: tokens, their first position and the caches in;
  /// the logits of the tokens out.
  Value gptDecode(Block *body);
  /// The batch arguments of @forward, and the embedded tokens [B, T, width].
  Value inputs(Block *body);
  Value gptEmbed(Value tokens);
  /// The blocks; with `streams` set, each block's output is appended to it.
  Value blocks(Value x);
  /// Final norm, lm_head and softcap: the logits.
  Value gptHead(Value x);
  std::pair<Value, Value> imageForward(Block *body);
  /// Blocks, final norm and pooling: [B, width].
  Value imageFeatures(Block *body);
  /// Patch embedding, learned tokens and positions: [B, T, width].
  Value imageTokens(Value images);

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
  std::vector<dsl::Parameter> table;
  std::map<std::string, Value> params;
  std::map<std::string, Value> enteredParams; ///< params, as param() gives
  std::vector<std::string> batchNames;        ///< Names of the batch arguments.
  /// In @decode: the position of the first new token, and each layer's key
  /// and value caches.
  Value first;
  std::vector<std::pair<Value, Value>> caches;
  /// train.data.packing: documents: where each token's document starts
  /// (lap.document_starts of the tokens), for every layer's attention.
  Value starts;
  /// train.data.packing: padded: each sequence's length (the batch's
  /// `lengths`), past which every layer's attention sees no key.
  Value lengths;
  /// gpt: the batch's targets.
  Value targets;
  /// In @features: the residual stream after the embedding and each block.
  std::vector<Value> *streams = nullptr;
  /// T: dynamic for text, static for images of the compiled size.
  int64_t sequence = kDynamic;
  /// The side of the images of the function being built: image_size, or
  /// the local crop size in @forward_local.
  int64_t imageSize = 0;
  /// The next random-mask key of a dropout or drop-path op.
  int64_t nextKey = 0;
};

Value ForwardBuilder::norm(Value x, const std::string &name) {
  Location where = loc("model.norm", name);
  FloatAttr eps = b.getF32FloatAttr(float(m.norm.eps));
  if (m.norm.type == dsl::NormType::LayerNorm)
    return b.create<LayerNormOp>(where, x.getType(), x, param(name + ".weight"),
                                 param(name + ".bias"), eps);
  return b.create<RMSNormOp>(where, x.getType(), x, param(name + ".weight"),
                             eps);
}

Value ForwardBuilder::linear(Value x, const std::string &name, int64_t out,
                             Location where) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = out;
  Value y = b.create<LinearOp>(where, floats(shape), x, param(name + ".weight"),
                               param(name + ".bias"));
  Value down = param(name + dsl::kLoraDown);
  if (!down)
    return y;
  // train.lora: + (x A^T) B^T alpha / rank, beside the frozen layer.
  const dsl::LoraSpec &lora = spec.train.lora;
  Location adapter = loc("train.lora", name);
  SmallVector<int64_t> rankShape(type.getShape());
  rankShape.back() = lora.rank;
  Value low = b.create<LinearOp>(adapter, floats(rankShape), x, down, Value());
  Value up = b.create<LinearOp>(adapter, floats(shape), low,
                                param(name + dsl::kLoraUp), Value());
  Value scaled =
      b.create<ScaleOp>(adapter, up, b.getF32FloatAttr(float(lora.scale())));
  return b.create<AddOp>(adapter, y, scaled);
}

Value ForwardBuilder::dropout(Value x, Location where) {
  if (m.dropout == 0)
    return x;
  return b.create<DropoutOp>(where, x, b.getF32FloatAttr(float(m.dropout)),
                             b.getI64IntegerAttr(nextKey++));
}

Value ForwardBuilder::attention(Value h, const std::string &prefix,
                                int64_t layer) {
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
    q = b.create<RopeOp>(rope, q, first, base);
    k = b.create<RopeOp>(rope, k, first, base);
  }
  // Built-in kinds by name; a layer with a kind the spec defines by its
  // heads' coefficients (what --lap-lower-head-kinds makes of names); a
  // layer with learned kinds by a [2, H] tensor of its fixed and learned
  // coefficients.
  const dsl::AttentionSpec &a = spec.attention;
  const auto &ids = a.layers[size_t(layer)];
  std::vector<int64_t> learned = a.learnedHeads(size_t(layer));
  std::string placement = spec.given("attention.laplacian_heads")
                              ? "attention.laplacian_heads"
                          : spec.given("attention.kinds") ? "attention.kinds"
                                                          : "model.heads";
  ArrayAttr kinds;
  DenseF32ArrayAttr alpha, beta;
  Value coefficients;
  if (!learned.empty() ||
      llvm::any_of(ids, [&](dsl::HeadKindId id) { return a.isDefined(id); })) {
    SmallVector<float> alphas, betas;
    for (dsl::HeadKindId id : ids) {
      bool fixed = !a.kind(id).learnable;
      alphas.push_back(fixed ? float(a.kind(id).alpha) : 0.0f);
      betas.push_back(fixed ? float(a.kind(id).beta) : 0.0f);
    }
    alpha = b.getDenseF32ArrayAttr(alphas);
    beta = b.getDenseF32ArrayAttr(betas);
  } else {
    SmallVector<StringRef> names;
    for (dsl::HeadKindId id : ids)
      names.push_back(a.kind(id).name);
    kinds = b.getStrArrayAttr(names);
  }
  if (!learned.empty()) {
    // Per-head scalars: f32 at either precision, read from the master
    // weights themselves.
    coefficients = b.create<HeadCoefficientsOp>(
        loc(placement, scope),
        RankedTensorType::get({2, heads}, b.getF32Type()),
        master(scope + ".coefficients"), alpha, beta,
        b.getDenseI64ArrayAttr(learned));
    alpha = beta = DenseF32ArrayAttr();
  }
  FloatAttr scale = b.getF32FloatAttr(float(1.0 / std::sqrt(double(d))));
  const int64_t window = a.windows.empty() ? 0 : a.windows[size_t(layer)];
  Value o;
  if (first) {
    // Decoding attends in f32, the precision of the caches.
    auto f32 = [&](Value v) { return v ? convert(v, b.getF32Type()) : v; };
    q = f32(q);
    o = enter(b.create<CachedAttentionOp>(
        loc(placement, scope), cast<RankedTensorType>(q.getType()), q, f32(k),
        f32(v), caches[size_t(layer)].first, caches[size_t(layer)].second,
        first, f32(coefficients), scale, kinds, alpha, beta,
        b.getI64IntegerAttr(window)));
  } else {
    o = b.create<AttentionOp>(
        loc(placement, scope), q.getType(), q, k, v, coefficients, starts,
        lengths, scale,
        m.family == dsl::Family::GPT ? b.getUnitAttr() : UnitAttr(), UnitAttr(),
        kinds, alpha, beta, b.getI64IntegerAttr(window));
  }
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
  // Stochastic depth grows linearly to drop_path at the last layer (timm).
  double dropPath =
      m.layers > 1 ? m.dropPath * double(layer) / double(m.layers - 1) : 0;
  auto branch = [&](Value y, const std::string &gamma) {
    if (Value g = param(prefix + "." + gamma))
      y = b.create<LayerScaleOp>(loc("model.layer_scale", prefix), y, g);
    if (dropPath > 0)
      y = b.create<DropPathOp>(loc("model.drop_path", prefix), y,
                               b.getF32FloatAttr(float(dropPath)),
                               b.getI64IntegerAttr(nextKey++));
    return y;
  };
  Value a = branch(attention(norm(x, prefix + ".norm1"), prefix, layer), "ls1");
  x = b.create<AddOp>(residual, x, a);
  Value f = branch(mlp(norm(x, prefix + ".norm2"), prefix), "ls2");
  return b.create<AddOp>(residual, x, f);
}

Value ForwardBuilder::gptEmbed(Value tokens) {
  Value x =
      b.create<EmbeddingOp>(loc("model.vocab", "wte"), activations({m.width}),
                            param("wte.weight"), tokens);
  if (Value wpe = param("wpe.weight"))
    x = b.create<AddPositionsOp>(loc("model.positions", "wpe"), x, wpe, first,
                                 b.getI64IntegerAttr(0));
  x = dropout(x, loc("model.dropout"));
  return m.embeddingNorm ? norm(x, "embedding_norm") : x;
}

Value ForwardBuilder::blocks(Value x) {
  if (streams)
    streams->push_back(x);
  for (int64_t l = 0; l < m.layers; ++l) {
    x = block(x, l);
    if (streams)
      streams->push_back(x);
  }
  return x;
}

Value ForwardBuilder::gptHead(Value x) {
  if (m.finalNorm)
    x = norm(x, "norm");
  Location head = loc("model.vocab", "lm_head");
  Value logits = b.create<LinearOp>(head, activations({m.vocab}), x,
                                    m.tiedEmbeddings ? param("wte.weight")
                                                     : param("lm_head.weight"),
                                    Value());
  if (m.logitSoftcap > 0)
    logits = b.create<SoftcapOp>(loc("model.logit_softcap", "lm_head"), logits,
                                 b.getF32FloatAttr(float(m.logitSoftcap)));
  return logits;
}

Value ForwardBuilder::inputs(Block *body) {
  if (m.family != dsl::Family::GPT) {
    int64_t side = imageSize / m.patch, compiled = m.imageSize / m.patch;
    sequence = spec.derived.tokens + side * side - compiled * compiled;
    auto images = RankedTensorType::get(
        {kDynamic, m.channels, imageSize, imageSize}, b.getF32Type());
    Value input = body->addArgument(images, loc("model.image_size", "images"));
    bool dino = m.family == dsl::Family::DINO;
    int64_t outputs = dino ? m.dinoHead.prototypes : m.classes;
    body->addArgument(
        RankedTensorType::get({kDynamic, outputs}, b.getF32Type()),
        loc(dino ? "train.dino" : "model.classes",
            dino ? "teacher" : "targets"));
    batchNames = {"images", dino ? "teacher" : "targets"};
    return imageTokens(input);
  }
  auto i32Batch = RankedTensorType::get({kDynamic, kDynamic}, b.getI32Type());
  Value tokens = body->addArgument(i32Batch, loc("model.vocab", "tokens"));
  targets = body->addArgument(i32Batch, loc("model.vocab", "targets"));
  batchNames = {"tokens", "targets"};
  lengths = Value();
  if (spec.train.data.packing == dsl::Packing::Padded) {
    lengths =
        body->addArgument(RankedTensorType::get({kDynamic}, b.getI32Type()),
                          loc("train.data.packing", "lengths"));
    batchNames.push_back("lengths");
  }
  starts = spec.train.data.packing == dsl::Packing::Documents
               ? b.create<DocumentStartsOp>(
                      loc("train.data.packing", "tokens"), tokens,
                      b.getI64IntegerAttr(spec.train.data.bos))
                     .getResult()
               : Value();
  return gptEmbed(tokens);
}

std::pair<Value, Value> ForwardBuilder::gptForward(Block *body) {
  Value logits = gptHead(blocks(inputs(body)));
  // With padding, the targets past each sequence's length do not count.
  Value counted = targets;
  if (lengths)
    counted = b.create<PadTargetsOp>(loc("train.data.packing", "targets"),
                                     targets.getType(), targets, lengths);
  Value loss = b.create<CrossEntropyOp>(
      loc("model.family", "loss"), RankedTensorType::get({}, b.getF32Type()),
      logits, counted, b.getF32FloatAttr(0), b.getF32FloatAttr(0));
  return {loss, logits};
}

Value ForwardBuilder::gptDecode(Block *body) {
  auto i32Batch = RankedTensorType::get({kDynamic, kDynamic}, b.getI32Type());
  Value tokens = body->addArgument(i32Batch, loc("model.vocab", "tokens"));
  first = body->addArgument(b.getI64Type(), loc("model.context", "first"));
  batchNames = {"tokens", "first"};
  starts = Value(); // a prompt and what follows it are one document
  lengths = Value(); // and has no padding
  // [B, capacity, KV, D]: the capacity is the compiled maximum sequence.
  auto cacheType = RankedTensorType::get(
      {kDynamic, kDynamic, m.kvHeads, m.headDim}, b.getF32Type());
  for (int64_t l = 0; l < m.layers; ++l) {
    std::string layer = std::to_string(l);
    Location where = loc("model.context", "blocks." + layer + ".attn");
    caches.emplace_back(body->addArgument(cacheType, where),
                        body->addArgument(cacheType, where));
    batchNames.push_back("k_cache." + layer);
    batchNames.push_back("v_cache." + layer);
  }
  Value logits = gptHead(blocks(gptEmbed(tokens)));
  first = Value();
  caches.clear();
  return logits;
}

Value ForwardBuilder::imageTokens(Value images) {
  int64_t side = imageSize / m.patch, patches = side * side;
  Location embed = loc("model.patch", "patch_embed");
  // The f32 images enter the model's precision as patches: patchify only
  // moves them.
  Value x = enter(b.create<PatchifyOp>(
      embed,
      RankedTensorType::get({kDynamic, patches, m.channels * m.patch * m.patch},
                            b.getF32Type()),
      images, b.getI64IntegerAttr(m.patch)));
  x = linear(x, "patch_embed", m.width, embed);
  // Token order: [registers, CLS, patches]; positions cover CLS and patches
  // unless they are patches-only (DeiT-3). Registers never get positions.
  Value pos = master("pos_embed");
  Location positions = loc("model.positions", "pos_embed");
  if (pos && imageSize != m.imageSize) {
    // DINO's interpolate_pos_encoding: the CLS position stays, the patch
    // grid's are resampled to this image's grid, from the f32 table.
    int64_t keep = !m.positions.patchesOnly && m.clsToken ? 1 : 0;
    pos = enter(b.create<InterpolatePositionsOp>(
        loc("train.dino.local_crop_size", "pos_embed"),
        RankedTensorType::get({keep + patches, m.width}, b.getF32Type()), pos,
        b.getI64IntegerAttr(keep)));
  } else if (pos) {
    pos = param("pos_embed");
  }
  auto prepend = [&](Value tokens, const char *path, const char *name) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t k = cast<RankedTensorType>(tokens.getType()).getDimSize(0);
    x = b.create<PrependTokensOp>(
        loc(path, name), floats({kDynamic, type.getDimSize(1) + k, m.width}), x,
        tokens);
  };
  if (pos && m.positions.patchesOnly)
    x = b.create<AddPositionsOp>(positions, x, pos, Value(),
                                 b.getI64IntegerAttr(0));
  if (Value cls = param("cls_token"))
    prepend(cls, "model.cls_token", "cls_token");
  if (pos && !m.positions.patchesOnly)
    x = b.create<AddPositionsOp>(positions, x, pos, Value(),
                                 b.getI64IntegerAttr(0));
  if (Value registers = param("registers"))
    prepend(registers, "model.registers", "registers");
  x = dropout(x, loc("model.dropout"));
  return m.embeddingNorm ? norm(x, "embedding_norm") : x;
}

Value ForwardBuilder::imageFeatures(Block *body) {
  Value x = blocks(inputs(body));
  if (m.finalNorm)
    x = norm(x, "norm");
  Location pool = loc("model.pool", "pool");
  auto rowType = floats({kDynamic, m.width});
  Value features =
      m.pool == dsl::Pool::Cls
          ? b.create<TakeTokenOp>(pool, rowType, x,
                                  b.getI64IntegerAttr(m.registers))
                .getResult()
          : b.create<MeanTokensOp>(
                 pool, rowType, x,
                 b.getI64IntegerAttr(m.registers + (m.clsToken ? 1 : 0)))
                .getResult();
  return features;
}

std::pair<Value, Value> ForwardBuilder::imageForward(Block *body) {
  Value features = imageFeatures(body);
  // The targets (probabilities) are f32: the loss reads f32 logits.
  Value targets = body->getArguments().back();
  bool dino = m.family == dsl::Family::DINO;
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  if (!dino) {
    Location head = loc("model.classes", "head");
    Value logits = linear(features, "head", m.classes, head);
    Location lossLoc = loc("train.loss", "loss");
    Value loss =
        spec.hasTrain && spec.train.loss == dsl::SupervisedLoss::BCE
            ? b.create<BCEWithLogitsOp>(lossLoc, scalar, leave(logits), targets)
                  .getResult()
            : b.create<SoftCrossEntropyOp>(lossLoc, scalar, leave(logits),
                                           targets)
                  .getResult();
    return {loss, logits};
  }
  const dsl::DinoHeadSpec &h = m.dinoHead;
  Location head = loc("model.dino_head", "dino_head");
  Value z = features;
  for (int64_t i = 0; i < h.layers; ++i) {
    bool last = i + 1 == h.layers;
    z = linear(z, "dino_head.mlp." + std::to_string(i),
               last ? h.bottleneck : h.hidden, head);
    if (!last)
      z = b.create<GeluOp>(head, z);
  }
  z = b.create<L2NormalizeOp>(head, z, b.getF32FloatAttr(1e-12f));
  // A transform of the parameters: from the f32 master weights, in f32.
  Value w = enter(
      b.create<WeightNormOp>(head, master("dino_head.last_layer.weight_v"),
                             master("dino_head.last_layer.weight_g")));
  Value logits =
      b.create<LinearOp>(head, floats({kDynamic, h.prototypes}), z, w, Value());
  float temperature = float(spec.hasTrain ? spec.train.dino.studentTemp : 0.1);
  Value loss = b.create<DinoLossOp>(loc("train.dino.student_temp", "loss"),
                                    scalar, leave(logits), targets,
                                    b.getF32FloatAttr(temperature));
  return {loss, logits};
}

func::FuncOp ForwardBuilder::beginFunction(StringRef name, Location where) {
  auto func = b.create<func::FuncOp>(where, name, b.getFunctionType({}, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  params.clear();
  enteredParams.clear();
  nextKey = 0;
  for (const dsl::Parameter &p : table)
    params[p.name] = body->addArgument(
        RankedTensorType::get(p.shape, b.getF32Type()), loc("model", p.name));
  return func;
}

void ForwardBuilder::endFunction(func::FuncOp func, ArrayRef<Value> results,
                                 ArrayRef<std::string> inputNames,
                                 ArrayRef<std::string> outputNames) {
  SmallVector<Value> outputs;
  for (Value result : results)
    outputs.push_back(leave(result));
  b.create<func::ReturnOp>(func.getLoc(), outputs);
  Block &body = func.getBody().front();
  func.setType(b.getFunctionType(body.getArgumentTypes(),
                                 ValueRange(outputs).getTypes()));
  // All at once: setArgAttr rebuilds the whole list each time, which is
  // quadratic in the parameter count (a 2048-layer model ran out of memory).
  auto named = [&](StringRef name, bool parameter, bool frozen = false) {
    NamedAttrList attrs;
    attrs.append("lap.name", b.getStringAttr(name));
    if (parameter)
      attrs.append("lap.parameter", b.getUnitAttr());
    if (frozen)
      attrs.append("lap.frozen", b.getUnitAttr());
    return attrs.getDictionary(b.getContext());
  };
  SmallVector<DictionaryAttr> args, outs;
  for (const dsl::Parameter &p : table)
    args.push_back(named(p.name, true, !p.trainable));
  for (const std::string &name : inputNames)
    args.push_back(named(name, false));
  for (const std::string &name : outputNames)
    outs.push_back(named(name, false));
  args.resize(func.getNumArguments(), b.getDictionaryAttr({}));
  outs.resize(func.getNumResults(), b.getDictionaryAttr({}));
  func.setAllArgAttrs(args);
  func.setAllResultAttrs(outs);
  b.setInsertionPointAfter(func);
}

OwningOpRef<ModuleOp> ForwardBuilder::build() {
  if (m.pool == dsl::Pool::Attentive)
    return failAt("model.pool", "attentive pooling is not compiled yet; use "
                                "pool: cls or mean");
  if (m.family == dsl::Family::DINO && m.classes > 0)
    return failAt("model.classes", "a dino model with a classifier is not "
                                   "compiled yet; set classes: 0");
  Location top = loc("model", spec.name);
  OwningOpRef<ModuleOp> module = ModuleOp::create(top, spec.name);
  // A bf16 model's products multiply bf16 values too: its GEMMs may take
  // the bf16 paths (the same products, faster).
  if (bf16() || spec.train.matmulPrecision == dsl::Precision::BF16)
    (*module)->setAttr(kMatmulPrecisionAttr, b.getStringAttr("bf16"));
  b.setInsertionPointToEnd(module->getBody());
  table = dsl::parameterTable(spec);
  imageSize = m.imageSize;

  func::FuncOp forward = beginFunction("forward", top);
  Block *body = &forward.getBody().front();
  auto [loss, logits] =
      m.family == dsl::Family::GPT ? gptForward(body) : imageForward(body);
  endFunction(forward, {loss, logits}, batchNames, {"loss", "logits"});

  const dsl::DinoSpec &dino = spec.train.dino;
  if (m.family == dsl::Family::DINO && spec.hasTrain &&
      spec.train.regime == dsl::Regime::DINO && dino.localCrops > 0 &&
      dino.localCropSize != m.imageSize) {
    imageSize = dino.localCropSize;
    func::FuncOp local =
        beginFunction("forward_local", loc("train.dino.local_crop_size"));
    auto [localLoss, localLogits] = imageForward(&local.getBody().front());
    endFunction(local, {localLoss, localLogits}, batchNames,
                {"loss", "logits"});
    imageSize = m.imageSize;
  }

  // The residual streams of every layer, for the geometry analyses.
  func::FuncOp features = beginFunction("features", top);
  std::vector<Value> layers;
  streams = &layers;
  blocks(inputs(&features.getBody().front()));
  streams = nullptr;
  std::vector<std::string> layerNames;
  for (size_t i = 0; i < layers.size(); ++i)
    layerNames.push_back(i == 0 ? "embedding"
                                : "block." + std::to_string(i - 1));
  endFunction(features, layers, batchNames, layerNames);

  if (m.family != dsl::Family::GPT) {
    func::FuncOp embed = beginFunction("embed", top);
    Value pooled = imageFeatures(&embed.getBody().front());
    endFunction(embed, {pooled}, batchNames, {"embedding"});
  }

  if (m.family == dsl::Family::GPT) {
    func::FuncOp decode = beginFunction("decode", top);
    Value decoded = gptDecode(&decode.getBody().front());
    endFunction(decode, {decoded}, batchNames, {"logits"});
  }
  return module;
}

} // namespace

OwningOpRef<ModuleOp> lap::buildForward(const dsl::Spec &spec,
                                        MLIRContext &context) {
  context.loadDialect<LapDialect, func::FuncDialect>();
  return ForwardBuilder(spec, context).build();
}
