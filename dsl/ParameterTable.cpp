//===- ParameterTable.cpp - Every parameter of a model, by name -*- C++ -*-===//

#include "dsl/ParameterTable.h"

using namespace lap::dsl;

int64_t Parameter::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

class TableBuilder {
public:
  explicit TableBuilder(const Spec &spec) : m(spec.model) {}

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
        add("lm_head.weight", {m.vocab, m.width});
    } else {
      imageHead();
    }
    return std::move(table);
  }

private:
  void add(std::string name, std::vector<int64_t> shape) {
    table.push_back({std::move(name), std::move(shape)});
  }
  void linear(const std::string &name, int64_t in, int64_t out, bool bias) {
    add(name + ".weight", {out, in});
    if (bias)
      add(name + ".bias", {out});
  }
  void norm(const std::string &name, int64_t n) {
    if (m.norm.weight)
      add(name + ".weight", {n});
    if (m.norm.type == NormType::LayerNorm && m.norm.bias)
      add(name + ".bias", {n});
  }

  void gptEmbedding() {
    add("wte.weight", {m.vocab, m.width});
    if (m.positions.type == PositionType::Learned)
      add("wpe.weight", {m.context, m.width});
  }

  void imageEmbedding() {
    int64_t side = m.imageSize / m.patch, patches = side * side;
    linear("patch_embed", m.channels * m.patch * m.patch, m.width, true);
    if (m.clsToken)
      add("cls_token", {1, m.width});
    if (m.registers > 0)
      add("registers", {m.registers, m.width});
    if (m.positions.type == PositionType::Learned)
      add("pos_embed",
          {patches + (m.clsToken && !m.positions.patchesOnly ? 1 : 0), m.width});
  }

  void block(const std::string &prefix) {
    int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
    norm(prefix + ".norm1", m.width);
    linear(prefix + ".attn.qkv", m.width, q + 2 * kv, m.bias);
    if (m.qkNorm) {
      norm(prefix + ".attn.q_norm", m.headDim);
      norm(prefix + ".attn.k_norm", m.headDim);
    }
    linear(prefix + ".attn.proj", q, m.width, m.bias);
    if (m.layerScale > 0)
      add(prefix + ".ls1", {m.width});
    norm(prefix + ".norm2", m.width);
    linear(prefix + ".mlp.fc1", m.width, m.mlpHidden, m.bias);
    linear(prefix + ".mlp.fc2", m.mlpHidden, m.width, m.bias);
    if (m.layerScale > 0)
      add(prefix + ".ls2", {m.width});
  }

  void imageHead() {
    if (m.pool == Pool::Attentive) {
      add("pool.query", {1, m.width});
      linear("pool.q", m.width, m.width, true);
      linear("pool.kv", m.width, 2 * m.width, true);
      linear("pool.proj", m.width, m.width, true);
    }
    if (m.classes > 0)
      linear("head", m.width, m.classes, true);
    if (m.family != Family::DINO)
      return;
    const DinoHeadSpec &h = m.dinoHead;
    int64_t in = m.width;
    for (int64_t i = 0; i + 1 < h.layers; ++i) {
      linear("dino_head.mlp." + std::to_string(i), in, h.hidden, true);
      in = h.hidden;
    }
    linear("dino_head.mlp." + std::to_string(h.layers - 1), in, h.bottleneck, true);
    add("dino_head.last_layer.weight_g", {h.prototypes, 1});
    add("dino_head.last_layer.weight_v", {h.prototypes, h.bottleneck});
  }

  const ModelSpec &m;
  std::vector<Parameter> table;
};

} // namespace

std::vector<Parameter> lap::dsl::parameterTable(const Spec &spec) {
  return TableBuilder(spec).build();
}
