//===- Manifest.cpp - The JSON manifest embedded in model.so ----*- C++ -*-===//

#include "compiler/Target/Manifest.h"

#include "compiler/Memory/Layout.h"
#include "dialects/Lap/IR/LapOps.h"
#include "dsl/Derived.h"
#include "dsl/ParameterTable.h"
#include "dsl/Scalars.h"
#include "dsl/SpecPrinter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

#include "runtime/include/lap/model.h"
#include "runtime/platform/Hash.h"

using namespace mlir;
namespace json = llvm::json;

namespace {

/// A shape with -1 for the dynamic (batch, sequence) dimensions.
json::Array shapeOf(Type type) {
  json::Array shape;
  for (int64_t d : cast<ShapedType>(type).getShape())
    shape.push_back(ShapedType::isDynamic(d) ? int64_t(-1) : d);
  return shape;
}

json::Object tensor(StringRef name, Type type) {
  auto shaped = cast<ShapedType>(type);
  return json::Object{
      {"name", name},
      {"dtype", shaped.getElementType().isF32() ? "float32" : "int32"},
      {"shape", shapeOf(type)}};
}

StringRef nameOf(DictionaryAttr attrs, StringRef fallback) {
  if (attrs)
    if (auto name = attrs.getAs<StringAttr>("lap.name"))
      return name.getValue();
  return fallback;
}

} // namespace

std::string lap::buildManifest(const dsl::Spec &spec, ModuleOp module,
                               json::Object target) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  auto decode = module.lookupSymbol<func::FuncOp>("decode");
  auto features = module.lookupSymbol<func::FuncOp>("features");
  int64_t total = 0;
  SmallVector<int64_t> offsets = parameterOffsets(forward, total);

  json::Array params;
  std::vector<dsl::Parameter> table = dsl::parameterTable(spec);
  // The trainable parameters are a suffix of the table (ParameterTable.h):
  // their gradients fill a buffer laid out as that part of the parameters.
  int64_t trainableOffset = total;
  for (auto [p, offset] : llvm::zip(table, offsets)) {
    if (p.trainable)
      trainableOffset = std::min(trainableOffset, offset);
    json::Object init{{"kind", dsl::initKindName(p.init.kind)},
                      {"value", p.init.value}};
    if (p.init.kind == dsl::ParameterInit::Values)
      init["values"] = json::Array(p.init.values);
    params.push_back(json::Object{{"name", p.name},
                                  {"shape", json::Array(p.shape)},
                                  {"offset", offset},
                                  {"elements", p.elements()},
                                  {"trainable", p.trainable},
                                  {"init", std::move(init)}});
  }

  json::Array batch, outputs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (!isParameter(forward, i))
      batch.push_back(tensor(nameOf(forward.getArgAttrDict(i), "input"),
                             forward.getArgument(i).getType()));
  for (unsigned i = 0; i < forward.getNumResults(); ++i)
    outputs.push_back(tensor(nameOf(forward.getResultAttrDict(i), "output"),
                             forward.getResultTypes()[i]));

  json::Object memory;
  int64_t workspace = 0, maxBatch = 0, maxSeq = 0;
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    if (!f->hasAttr(kWorkspaceAttr))
      continue;
    int64_t bytes = f->getAttrOfType<IntegerAttr>(kWorkspaceAttr).getInt();
    memory[(f.getName() + "_workspace_bytes").str()] = bytes;
    workspace = std::max(workspace, bytes);
    maxBatch = f->getAttrOfType<IntegerAttr>(kMaxBatchAttr).getInt();
    maxSeq = f->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
  }
  memory["workspace_bytes"] = alignTo(workspace);

  // The residual streams of @features (model.h: lap_model_features).
  json::Array layerNames;
  for (unsigned i = 0; i < features.getNumResults(); ++i)
    layerNames.push_back(nameOf(features.getResultAttrDict(i), "layer"));
  json::Object streams{{"layers", int64_t(features.getNumResults())},
                       {"width", spec.model.width},
                       {"names", std::move(layerNames)}};

  // The key/value cache of @decode (model.h: lap_model_decode): each
  // layer's positions, in layer order.
  json::Value decoding = nullptr;
  if (decode) {
    const dsl::ModelSpec &m = spec.model;
    json::Array slots;
    int64_t positions = 0;
    decode.walk([&](lap::CachedAttentionOp a) {
      const int64_t layerSlots = a.getSlots(maxSeq);
      slots.push_back(layerSlots);
      positions += layerSlots;
    });
    decoding = json::Object{
        {"layers", m.layers},
        {"kv_heads", m.kvHeads},
        {"head_dim", m.headDim},
        {"capacity", maxSeq},
        {"slots", std::move(slots)},
        {"cache_floats_per_sequence", 2 * positions * m.kvHeads * m.headDim}};
  }

  // Image models: the image sizes they run (model.h: lap_batch.seq picks
  // one by its token count).
  json::Value images = nullptr;
  if (spec.model.family != dsl::Family::GPT) {
    const dsl::ModelSpec &m = spec.model;
    int64_t grid = m.imageSize / m.patch;
    json::Array sizes, tokens;
    for (StringRef name : kForwardFunctions)
      if (auto f = module.lookupSymbol<func::FuncOp>(name)) {
        auto images = cast<ShapedType>(f.getArgumentTypes()[table.size()]);
        int64_t size = images.getDimSize(3), side = size / m.patch;
        sizes.push_back(size);
        tokens.push_back(spec.derived.tokens + side * side - grid * grid);
      }
    images = json::Object{{"sizes", std::move(sizes)},
                          {"tokens", std::move(tokens)}};
  }

  // train.lora: what merging the adapters into their layers needs.
  json::Value lora = nullptr;
  if (const dsl::LoraSpec &l = spec.train.lora; l.enabled())
    lora = json::Object{{"rank", l.rank},
                        {"alpha", l.alpha},
                        {"scale", l.scale()},
                        {"targets", json::Array(l.targets)}};

  // The spec's derived values (FLOPs per token or image, ...), flat.
  json::Object derived;
  for (const dsl::DerivedValue &v : dsl::derivedValues(spec))
    derived[v.path] = v.value;

  json::Object manifest{
      {"derived", std::move(derived)},
      {"abi_version", int64_t(LAP_MODEL_ABI_VERSION)},
      {"name", spec.name},
      {"family", std::string(dsl::spelling(spec.model.family))},
      {"target", std::move(target)},
      {"limits", json::Object{{"batch", maxBatch},
                              {"seq", maxSeq},
                              {"vocab", spec.model.family == dsl::Family::GPT
                                            ? spec.model.vocab
                                            : int64_t(0)}}},
      {"parameters",
       json::Object{
           {"elements", total},
           {"count", int64_t(table.size())},
           {"trainable", json::Object{{"offset", trainableOffset},
                                      {"elements", total - trainableOffset}}},
           {"tensors", std::move(params)}}},
      {"lora", std::move(lora)},
      {"batch", std::move(batch)},
      {"outputs", std::move(outputs)},
      {"memory", std::move(memory)},
      {"features", std::move(streams)},
      {"decode", std::move(decoding)},
      {"images", std::move(images)},
      {"spec", dsl::printSpec(spec)},
      {"model_hash", platform::contentHash(dsl::printArchitecture(spec))},
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(manifest));
  return text;
}
