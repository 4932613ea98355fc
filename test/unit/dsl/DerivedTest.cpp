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
