//===- Derived.cpp - Parameter counts and FLOPs of a spec -------*- C++ -*-===//
//
// The parameter layout here mirrors the reference implementations the
// shipped specs are checked against (nanochat's GPT, timm's DeiT-3 ViT,
// DINO's ViT and DINOHead); docs/spec.md lists the parameters per group.
//
//===----------------------------------------------------------------------===//

#include "dsl/Derived.h"
#include "dsl/ParameterTable.h"

#include <fmt/format.h>

using namespace lap::dsl;

namespace {

int64_t linearParams(int64_t in, int64_t out, bool bias) {
  return in * out + (bias ? out : 0);
}

int64_t normParams(const NormSpec &norm, int64_t n) {
  return (norm.weight ? n : 0) +
         (norm.type == NormType::LayerNorm && norm.bias ? n : 0);
}

/// Patches per image side squared.
int64_t patchCount(const ModelSpec &m) {
  int64_t side = m.imageSize / m.patch;
  return side * side;
}

/// Weights of the matrices of one block (no biases): what a token
/// multiplies through per layer.
int64_t blockMatmulWeights(const ModelSpec &m) {
  int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
  return m.width * (q + 2 * kv) + q * m.width + 2 * m.width * m.mlpHidden;
}

int64_t blockParams(const ModelSpec &m) {
  int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
  int64_t p = 2 * normParams(m.norm, m.width);
  p += linearParams(m.width, q + 2 * kv, m.bias) +
       linearParams(q, m.width, m.bias);
  if (m.qkNorm)
    p += 2 * normParams(m.norm, m.headDim);
  p += linearParams(m.width, m.mlpHidden, m.bias) +
       linearParams(m.mlpHidden, m.width, m.bias);
  if (m.layerScale > 0)
    p += 2 * m.width;
  return p;
}

/// Attentive pooling: one learned query, q/kv/out projections with biases.
int64_t attentivePoolParams(const ModelSpec &m) {
  return m.width + linearParams(m.width, m.width, true) +
         linearParams(m.width, 2 * m.width, true) +
         linearParams(m.width, m.width, true);
}

/// DINO head: an MLP to the bottleneck, then the weight-normed prototypes
/// (direction v and magnitude g, as torch's weight_norm keeps them).
/// `withExtras` adds the MLP biases and g; without, the matmul weights.
int64_t dinoHeadParams(const ModelSpec &m, bool withExtras) {
  const DinoHeadSpec &h = m.dinoHead;
  int64_t p = 0;
  if (h.layers == 1) {
    p = linearParams(m.width, h.bottleneck, withExtras);
  } else {
    p = linearParams(m.width, h.hidden, withExtras);
    p += (h.layers - 2) * linearParams(h.hidden, h.hidden, withExtras);
    p += linearParams(h.hidden, h.bottleneck, withExtras);
  }
  return p + h.bottleneck * h.prototypes + (withExtras ? h.prototypes : 0);
}

/// train.lora: A [rank, in] and B [out, rank] per target of one block.
int64_t blockAdapterParams(const ModelSpec &m, const LoraSpec &lora) {
  if (!lora.enabled())
    return 0;
  int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim, p = 0;
  for (const std::string &t : lora.targets)
    p += lora.rank * (t == "qkv"    ? m.width + q + 2 * kv
                      : t == "proj" ? q + m.width
                                    : m.width + m.mlpHidden);
  return p;
}

} // namespace

DerivedSpec lap::dsl::deriveSpec(const Spec &spec) {
  const ModelSpec &m = spec.model;
  DerivedSpec d;
  int64_t embedding = 0, positions = 0, head = 0, dinoHead = 0, headMatmul = 0;
  int64_t blocks = m.layers * blockParams(m);
  int64_t norms = (m.embeddingNorm ? normParams(m.norm, m.width) : 0) +
                  (m.finalNorm ? normParams(m.norm, m.width) : 0);
  // FLOPs in double: T^2 terms outgrow int64 long before sizes do.
  double attention = 0; // Per token or image, in QK^T and PV.
  double inputMatmul = 0;
  const double perHead =
      4.0 * double(m.layers) * double(m.heads) * double(m.headDim);
  if (m.family == Family::GPT) {
    int64_t T = spec.hasTrain ? spec.train.seqLen : m.context;
    embedding = m.vocab * m.width;
    if (m.positions.type == PositionType::Learned)
      positions = m.context * m.width;
    head = m.tiedEmbeddings ? 0 : m.vocab * m.width;
    headMatmul = m.vocab * m.width;
    d.tokens = T;
    attention = perHead * double(T);
    d.flopsUnit = "token";
  } else {
    int64_t patches = patchCount(m);
    int64_t extra = (m.clsToken ? 1 : 0) + m.registers;
    int64_t T = patches + extra;
    embedding = linearParams(m.patch * m.patch * m.channels, m.width, true) +
                (m.clsToken ? m.width : 0) + m.registers * m.width;
    if (m.positions.type == PositionType::Learned)
      positions =
          (patches + (m.positions.patchesOnly ? 0 : (m.clsToken ? 1 : 0))) *
          m.width;
    if (m.pool == Pool::Attentive)
      head += attentivePoolParams(m);
    if (m.classes > 0)
      head += linearParams(m.width, m.classes, true);
    headMatmul = m.classes * m.width;
    if (m.family == Family::DINO) {
      dinoHead = dinoHeadParams(m, true);
      headMatmul += dinoHeadParams(m, false);
    }
    d.tokens = T;
    attention = perHead * double(T) * double(T);
    inputMatmul =
        double(patches) * double(m.patch * m.patch * m.channels * m.width);
    d.flopsUnit = "image";
  }
  const int64_t adapters = m.layers * blockAdapterParams(m, spec.train.lora);
  // Learned kinds: (alpha, beta) per head.
  int64_t coefficients = 0;
  for (size_t l = 0; l < spec.attention.layers.size(); ++l)
    coefficients += 2 * int64_t(spec.attention.learnedHeads(l).size());
  const std::pair<const char *, int64_t> groups[] = {
      {"embedding", embedding},
      {"positions", positions},
      {"blocks", blocks},
      {"norms", norms},
      {"head", head},
      {"dino_head", dinoHead},
      {"head_coefficients", coefficients},
      {"lora", adapters}};
  for (const auto &[name, count] : groups) {
    if (count == 0)
      continue;
    d.parameterGroups.push_back({name, count});
    d.parameters += count;
  }
  d.trainableParameters = d.parameters;
  if (spec.train.lora.enabled()) {
    d.trainableParameters = 0;
    for (const Parameter &p : parameterTable(spec))
      d.trainableParameters += p.trainable ? p.elements() : 0;
  }

  double perUnitMatmul =
      double(blockMatmulWeights(m) + blockAdapterParams(m, spec.train.lora)) *
      m.layers;
  if (m.family == Family::GPT)
    d.forwardFlops = 2.0 * (perUnitMatmul + double(headMatmul)) + attention;
  else
    d.forwardFlops = 2.0 * (perUnitMatmul * double(d.tokens) + inputMatmul +
                            double(headMatmul)) +
                     attention;
  d.trainFlops = 3.0 * d.forwardFlops;
  return d;
}

std::vector<DerivedValue> lap::dsl::derivedValues(const Spec &spec) {
  const DerivedSpec &d = spec.derived;
  std::vector<DerivedValue> out;
  out.push_back({"parameters", double(d.parameters), true});
  for (const auto &[name, count] : d.parameterGroups)
    out.push_back({"parameter_groups." + name, double(count), true});
  if (spec.train.lora.enabled())
    out.push_back(
        {"trainable_parameters", double(d.trainableParameters), true});
  std::vector<HeadKind> kinds = spec.attention.kinds();
  std::vector<size_t> census(kinds.size(), 0);
  for (const auto &layer : spec.attention.layers)
    for (HeadKindId id : layer)
      ++census[id];
  // Every fixed kind; a learned one where heads have it.
  for (size_t k = 0; k < census.size(); ++k)
    if (!kinds[k].learnable || census[k] > 0)
      out.push_back({"head_kinds." + std::string(kinds[k].name),
                     double(census[k]), true});
  std::string unit = std::string("flops_per_") + d.flopsUnit;
  out.push_back({unit + ".sequence_length", double(d.tokens), true});
  out.push_back({unit + ".forward", d.forwardFlops, false});
  out.push_back({unit + ".train_step", d.trainFlops, false});
  if (spec.hasTrain) {
    const TrainSpec &t = spec.train;
    out.push_back({"grad_accum", double(t.batchSize / t.microBatchSize), true});
    if (t.regime == Regime::LM)
      out.push_back({"tokens_per_step", double(t.batchSize * t.seqLen), true});
  }
  return out;
}

std::string lap::dsl::formatDerived(const DerivedValue &value) {
  if (value.integer)
    return fmt::format("{}", int64_t(value.value));
  return fmt::format("{:.6g}", value.value);
}
