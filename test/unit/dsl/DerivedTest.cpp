//===- DerivedTest.cpp - Parameter counts against reference models -*- C++ -*-===//
//
// Published parameter counts of reference implementations: GPT-2 small as in
// llm.c / Hugging Face (124,439,808), timm's vit_base_patch16_224
// (86,567,656), deit3_base_patch16_224 (86,585,320) and
// vit_small_patch16_224 (22,050,664).
//
//===----------------------------------------------------------------------===//

#include "dsl/Derived.h"
#include "dsl/ParameterTable.h"
#include "dsl/SpecParser.h"

#include <gtest/gtest.h>

using namespace lap::dsl;

namespace {

Spec parseOk(const std::string &text) {
  Diagnostics diags;
  auto spec = parseSpec(text, "derived-test.yaml", diags);
  EXPECT_TRUE(spec) << (diags.hasErrors() ? diags.all()[0].message : "");
  return spec ? *spec : Spec{};
}

const char *gpt2Small = R"(
model:
  family: gpt
  layers: 12
  width: 768
  heads: 12
  activation: gelu_tanh
  norm: {type: layernorm}
  positions: {type: learned}
  bias: true
  tied_embeddings: true
  vocab: 50257
  context: 1024
)";

std::string vitB(bool deit3) {
  return std::string(R"(
model:
  family: vit
  layers: 12
  width: 768
  heads: 12
  activation: gelu
  image_size: 224
  patch: 16
  classes: 1000
)") + (deit3 ? "  layer_scale: 1.0e-6\n  positions: {patches_only: true}\n"
             : "");
}

} // namespace

TEST(Derived, Gpt2SmallHas124MParameters) {
  EXPECT_EQ(parseOk(gpt2Small).derived.parameters, 124439808);
}

TEST(Derived, TimmVisionTransformers) {
  EXPECT_EQ(parseOk(vitB(false)).derived.parameters, 86567656);
  EXPECT_EQ(parseOk(vitB(true)).derived.parameters, 86585320);
  EXPECT_EQ(parseOk(R"(
model: {family: vit, layers: 12, width: 384, heads: 6, image_size: 224, patch: 16, classes: 1000}
)")
                .derived.parameters,
            22050664);
}

TEST(Derived, GroupedQueryAttentionShrinksKeyAndValueProjections) {
  Spec mha = parseOk(gpt2Small);
  Spec gqa = parseOk(std::string(gpt2Small) + "  kv_heads: 4\n");
  // Per layer: k and v projections lose (12 - 4) heads of 64, weights and
  // biases.
  int64_t saved = 12 * 2 * (768 + 1) * (12 - 4) * 64;
  EXPECT_EQ(mha.derived.parameters - gqa.derived.parameters, saved);
}

TEST(Derived, HeadKindsDoNotChangeTheParameterCount) {
  Spec base = parseOk(gpt2Small);
  Spec lap =
      parseOk(std::string(gpt2Small) + "attention: {laplacian_heads: 7}\n");
  EXPECT_EQ(base.derived.parameters, lap.derived.parameters);
  EXPECT_EQ(base.derived.forwardFlops, lap.derived.forwardFlops);
}

TEST(Derived, VitFlopsPerImage) {
  Spec vit = parseOk(vitB(false));
  const double T = 197, L = 12, C = 768, P = 196;
  double blocks = L * (4 * C * C + 8 * C * C); // attention + MLP weights
  double expected =
      2 * (blocks * T + P * 768 * C + C * 1000) + 4 * L * C * T * T;
  EXPECT_DOUBLE_EQ(vit.derived.forwardFlops, expected);
  EXPECT_DOUBLE_EQ(vit.derived.trainFlops, 3 * expected);
  EXPECT_EQ(vit.derived.tokens, 197);
}

TEST(Derived, DinoHeadFollowsDinoHeadClass) {
  Spec dino = parseOk(R"(
model:
  family: dino
  layers: 12
  width: 384
  heads: 6
  image_size: 224
  patch: 16
  dino_head: {layers: 3, hidden: 2048, bottleneck: 256, prototypes: 65536}
)");
  int64_t mlp = (384 * 2048 + 2048) + (2048 * 2048 + 2048) + (2048 * 256 + 256);
  int64_t lastLayer = 256 * 65536 + 65536; // weight_norm's v and g
  EXPECT_EQ(dino.derived.parameters, 21665664 + mlp + lastLayer);
}

TEST(Derived, ParameterTableAgreesWithTheCount) {
  // Two independent computations of the same layout: the table the compiler
  // uses for function arguments, and the closed-form count.
  for (const char *name :
       {"gpt2_561m_5L.yaml", "vit_b_deit3_12L.yaml", "vit_s_dino_5L.yaml",
        "gpt_tiny.yaml", "vit_tiny.yaml"}) {
    Diagnostics diags;
    auto spec = loadSpec(std::string(LAP_SPECS_DIR) + "/" + name, diags);
    ASSERT_TRUE(spec) << name;
    int64_t total = 0;
    for (const Parameter &p : parameterTable(*spec))
      total += p.elements();
    EXPECT_EQ(total, spec->derived.parameters) << name;
  }
  Spec gqa =
      parseOk(std::string(gpt2Small) + "  kv_heads: 4\n  qk_norm: true\n");
  int64_t total = 0;
  for (const Parameter &p : parameterTable(gqa))
    total += p.elements();
  EXPECT_EQ(total, gqa.derived.parameters);
}

// LoRA of rank 8 on GPT-2 small's qkv and fc2: A [8, in] and B [out, 8] per
// layer, counted in closed form and in the table, where they trail the
// frozen parameters and the lm_head (tied: the embedding) trained beside
// them.
TEST(Derived, LoraAdaptersTrailTheFrozenParameters) {
  Spec lora = parseOk(std::string(gpt2Small) +
                      "train:\n  regime: lm\n  batch_size: 1\n  steps: 1\n"
                      "  lora: {rank: 8, alpha: 16, targets: [qkv, fc2], "
                      "train: [embedding]}\n");
  const int64_t adapters = 12 * 8 * ((768 + 3 * 768) + (3072 + 768));
  EXPECT_EQ(lora.derived.parameters, 124439808 + adapters);
  EXPECT_EQ(lora.derived.trainableParameters, adapters + 50257 * 768);
  std::vector<Parameter> table = parameterTable(lora);
  int64_t total = 0, trainable = 0;
  bool seenTrainable = false;
  for (const Parameter &p : table) {
    total += p.elements();
    trainable += p.trainable ? p.elements() : 0;
    EXPECT_TRUE(p.trainable || !seenTrainable) << p.name << " after trainable";
    seenTrainable |= p.trainable;
  }
  EXPECT_EQ(total, lora.derived.parameters);
  EXPECT_EQ(trainable, lora.derived.trainableParameters);
  size_t first = table.size() - 12 * 4 - 1;
  EXPECT_EQ(table[first].name, "wte.weight");
  EXPECT_EQ(table[first + 1].name, "blocks.0.attn.qkv.lora_A.weight");
  EXPECT_EQ(table[first + 1].shape, (std::vector<int64_t>{8, 768}));
  EXPECT_EQ(table[first + 2].name, "blocks.0.attn.qkv.lora_B.weight");
  EXPECT_EQ(table[first + 2].shape, (std::vector<int64_t>{3 * 768, 8}));
  EXPECT_EQ(table.back().name, "blocks.11.mlp.fc2.lora_B.weight");
}
