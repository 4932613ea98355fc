//===- ParameterTable.cpp - Every parameter of a model, by name -*- C++ -*-===//

#include "dsl/ParameterTable.h"

#include <algorithm>
#include <cmath>
#include <string_view>

using namespace lap::dsl;

int64_t Parameter::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const char *lap::dsl::initKindName(ParameterInit::Kind kind) {
  switch (kind) {
  case ParameterInit::Constant:
    return "constant";
  case ParameterInit::Normal:
    return "normal";
  case ParameterInit::TruncNormal:
    return "trunc_normal";
  case ParameterInit::Uniform:
    return "uniform";
  case ParameterInit::Values:
    return "values";
  }
  return "constant";
}

namespace {

class TableBuilder {
public:
  explicit TableBuilder(const Spec &spec)
      : m(spec.model), attention(spec.attention), lora(spec.train.lora) {}

  std::vector<Parameter> build() {
    if (m.family == Family::GPT)
      gptEmbedding();
    else
      imageEmbedding();
    if (m.embeddingNorm)
      norm("embedding_norm", m.width);
    for (int64_t l = 0; l < m.layers; ++l)
      block("blocks." + std::to_string(l));
    if (m.finalNorm)
      norm("norm", m.width);
    if (m.family == Family::GPT) {
      if (!m.tiedEmbeddings)
        add("lm_head.weight", {m.vocab, m.width}, head());
    } else {
      imageHead();
    }
    // Last, so that adding them leaves every other parameter's index, and
    // so its initial values, as in the fixed-kind model.
    for (int64_t l = 0; l < m.layers; ++l)
      learnedCoefficients(l);
    if (lora.enabled())
      adapters();
    return std::move(table);
  }

private:
  void add(std::string name, std::vector<int64_t> shape, ParameterInit init) {
    table.push_back({std::move(name), std::move(shape), init});
  }
  static ParameterInit constant(double v) {
    return {ParameterInit::Constant, v};
  }
  /// The spec's distribution with standard deviation `std` (0: all zeros).
  ParameterInit random(double std) const {
    if (std == 0)
      return constant(0);
    switch (m.init.distribution) {
    case InitDistribution::Normal:
      return {ParameterInit::Normal, std};
    case InitDistribution::TruncNormal:
      return {ParameterInit::TruncNormal, std};
    case InitDistribution::Uniform:
      return {ParameterInit::Uniform, std};
    }
    return {ParameterInit::Normal, std};
  }
  /// A matrix of the model body: `std`, or fan_in^-1/2 (nanochat).
  ParameterInit matrix(int64_t in) const {
    return random(m.init.stdFanIn ? 1 / std::sqrt(double(in)) : m.init.std);
  }
  void linear(const std::string &name, int64_t in, int64_t out, bool bias,
              ParameterInit weight) {
    add(name + ".weight", {out, in}, weight);
    if (bias)
      add(name + ".bias", {out}, constant(0));
  }
  void linear(const std::string &name, int64_t in, int64_t out, bool bias) {
    linear(name, in, out, bias, matrix(in));
  }
  void norm(const std::string &name, int64_t n) {
    if (m.norm.weight)
      add(name + ".weight", {n}, constant(1));
    if (m.norm.type == NormType::LayerNorm && m.norm.bias)
      add(name + ".bias", {n}, constant(0));
  }

  void gptEmbedding() {
    add("wte.weight", {m.vocab, m.width}, random(m.init.embeddingStd));
    if (m.positions.type == PositionType::Learned)
      add("wpe.weight", {m.context, m.width}, random(m.init.positionStd));
  }

  void imageEmbedding() {
    int64_t side = m.imageSize / m.patch, patches = side * side;
    linear("patch_embed", m.channels * m.patch * m.patch, m.width, true,
           random(m.init.embeddingStd));
    if (m.clsToken)
      add("cls_token", {1, m.width}, random(m.init.positionStd));
    if (m.registers > 0)
      add("registers", {m.registers, m.width}, random(m.init.positionStd));
    if (m.positions.type == PositionType::Learned)
      add("pos_embed",
          {patches + (m.clsToken && !m.positions.patchesOnly ? 1 : 0), m.width},
          random(m.init.positionStd));
  }

  void block(const std::string &prefix) {
    int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
    norm(prefix + ".norm1", m.width);
    linear(prefix + ".attn.qkv", m.width, q + 2 * kv, m.bias);
    if (m.qkNorm) {
      norm(prefix + ".attn.q_norm", m.headDim);
      norm(prefix + ".attn.k_norm", m.headDim);
    }
    linear(prefix + ".attn.proj", q, m.width, m.bias, outProj(q));
    if (m.layerScale > 0)
      add(prefix + ".ls1", {m.width}, constant(m.layerScale));
    norm(prefix + ".norm2", m.width);
    linear(prefix + ".mlp.fc1", m.width, m.mlpHidden, m.bias);
    linear(prefix + ".mlp.fc2", m.mlpHidden, m.width, m.bias,
           outProj(m.mlpHidden));
    if (m.layerScale > 0)
      add(prefix + ".ls2", {m.width}, constant(m.layerScale));
  }

  void imageHead() {
    if (m.pool == Pool::Attentive) {
      add("pool.query", {1, m.width}, random(m.init.positionStd));
      linear("pool.q", m.width, m.width, true);
      linear("pool.kv", m.width, 2 * m.width, true);
      linear("pool.proj", m.width, m.width, true);
    }
    if (m.classes > 0)
      linear("head", m.width, m.classes, true, head());
    if (m.family != Family::DINO)
      return;
    const DinoHeadSpec &h = m.dinoHead;
    int64_t in = m.width;
    for (int64_t i = 0; i + 1 < h.layers; ++i) {
      linear("dino_head.mlp." + std::to_string(i), in, h.hidden, true);
      in = h.hidden;
    }
    linear("dino_head.mlp." + std::to_string(h.layers - 1), in, h.bottleneck,
           true);
    add("dino_head.last_layer.weight_g", {h.prototypes, 1}, constant(1));
    add("dino_head.last_layer.weight_v", {h.prototypes, h.bottleneck},
        matrix(h.bottleneck));
  }

  /// attn.proj and mlp.fc2: zero with zero_out_proj (nanochat), so every
  /// block starts as the identity.
  ParameterInit outProj(int64_t in) const {
    return m.init.zeroOutProj ? constant(0) : matrix(in);
  }
  ParameterInit head() const {
    return m.init.zeroHead ? constant(0) : random(m.init.headStd);
  }

  /// [2, N] (alpha, then beta) of layer l's N learned heads, from their
  /// kinds' starting values.
  void learnedCoefficients(int64_t l) {
    std::vector<int64_t> heads = attention.learnedHeads(size_t(l));
    if (heads.empty())
      return;
    ParameterInit init{ParameterInit::Values, 0, {}};
    for (int row = 0; row < 2; ++row)
      for (int64_t h : heads) {
        HeadKind kind = attention.kind(attention.layers[size_t(l)][size_t(h)]);
        init.values.push_back(row == 0 ? kind.alpha : kind.beta);
      }
    add("blocks." + std::to_string(l) + ".attn.coefficients",
        {2, int64_t(heads.size())}, init);
  }

  /// train.lora: the base frozen but the modules `lora.train` names (moved
  /// after the frozen ones, in order), then A and B of each target of each
  /// block (PEFT's start: A ~ U(-1/sqrt(in), 1/sqrt(in)), B = 0, so the
  /// adapted model starts as the base).
  void adapters() {
    for (Parameter &p : table)
      p.trainable = std::any_of(
          lora.train.begin(), lora.train.end(),
          [&](const std::string &module) { return inModule(p.name, module); });
    std::stable_partition(table.begin(), table.end(),
                          [](const Parameter &p) { return !p.trainable; });
    int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
    const struct {
      const char *target, *layer;
      int64_t in, out;
    } layers[] = {{"qkv", ".attn.qkv", m.width, q + 2 * kv},
                  {"proj", ".attn.proj", q, m.width},
                  {"fc1", ".mlp.fc1", m.width, m.mlpHidden},
                  {"fc2", ".mlp.fc2", m.mlpHidden, m.width}};
    for (int64_t l = 0; l < m.layers; ++l)
      for (const auto &t : layers) {
        if (std::find(lora.targets.begin(), lora.targets.end(), t.target) ==
            lora.targets.end())
          continue;
        std::string name = "blocks." + std::to_string(l) + t.layer;
        add(name + kLoraDown, {lora.rank, t.in},
            {ParameterInit::Uniform, 1 / std::sqrt(3.0 * double(t.in))});
        add(name + kLoraUp, {t.out, lora.rank}, constant(0));
      }
  }

  const ModelSpec &m;
  const AttentionSpec &attention;
  const LoraSpec &lora;
  std::vector<Parameter> table;
};

} // namespace

bool lap::dsl::inModule(const std::string &name, const std::string &module) {
  auto startsWith = [&](const char *prefix) {
    return name.rfind(prefix, 0) == 0;
  };
  if (module == "embedding")
    return startsWith("wte.") || startsWith("patch_embed.");
  if (module == "head")
    return startsWith("lm_head.") || startsWith("head.");
  return false;
}

std::string lap::dsl::loraLayerOf(const std::string &name) {
  for (std::string_view suffix : {kLoraDown, kLoraUp})
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  return "";
}

std::vector<Parameter> lap::dsl::parameterTable(const Spec &spec) {
  return TableBuilder(spec).build();
}
