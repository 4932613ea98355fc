//===- MixedKindModels.h - Three small models with mixed head kinds -*- C++ -*-===//
//
// Specs the whole-model tests share: a GPT-2-style model (learned
// positions, LayerNorm with bias, GELU, biases, dropout), a nanochat-style
// one (RMSNorm, ReLU², softcap, GQA, QK-norm) and a DeiT-3-style ViT
// (LayerScale, drop path, QK-norm), each with Laplacian and attention
// heads. Batches of up to 3 sequences of up to 16 tokens (vocabulary 64),
// or 3 images of 8 x 8 x 3 with 5 classes. Apart from them, a DINO model
// (kDinoCase) with local views.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_MODEL_MIXEDKINDMODELS_H
#define LAP_TEST_UNIT_MODEL_MIXEDKINDMODELS_H

#include <cstdint>

namespace lap::test::mixed {

inline const char *kGpt2 = R"(model:
  family: gpt
  layers: 2
  width: 32
  heads: 4
  activation: gelu_tanh
  norm: {type: layernorm, bias: true}
  positions: {type: learned}
  bias: true
  tied_embeddings: true
  vocab: 64
  context: 16
  dropout: 0.1
  init: {distribution: normal, std: 0.2}
attention:
  kinds: [attn, laplacian, attn, laplacian]
)";

inline const char *kNanochat = R"(model:
  family: gpt
  layers: 2
  width: 32
  heads: 4
  kv_heads: 2
  activation: relu2
  norm: {type: rmsnorm, weight: false}
  embedding_norm: true
  positions: {type: rope}
  qk_norm: true
  bias: false
  logit_softcap: 15
  vocab: 64
  context: 16
  init: {distribution: uniform, std: fan_in, embedding_std: 1.0, head_std: 0.3}
attention:
  laplacian_heads: 2
)";

inline const char *kVit = R"(model:
  family: vit
  layers: 2
  width: 32
  heads: 4
  mlp_ratio: 2
  activation: gelu
  norm: {type: layernorm, eps: 1.0e-6}
  qk_norm: true
  positions: {type: learned, patches_only: true}
  image_size: 8
  patch: 4
  channels: 3
  classes: 5
  layer_scale: 0.1
  drop_path: 0.3
  init: {distribution: trunc_normal, std: 0.2, head_std: 0.3}
attention:
  kinds: [attn, laplacian, attn, laplacian]
)";

/// DINO's ViT with its head, and local views of 4 pixels (2 tokens, against
/// 5 of the global 8-pixel views): the GPU tests' model of the dino regime.
inline const char *kDino = R"(model:
  family: dino
  layers: 2
  width: 32
  heads: 4
  mlp_ratio: 2
  activation: gelu
  norm: {type: layernorm, eps: 1.0e-6}
  positions: {type: learned, patches_only: false}
  bias: true
  image_size: 8
  patch: 4
  channels: 3
  cls_token: true
  drop_path: 0.2
  pool: cls
  dino_head: {layers: 2, hidden: 32, bottleneck: 16, prototypes: 24}
  init: {distribution: trunc_normal, std: 0.2}
attention:
  kinds: [attn, laplacian, attn, laplacian]
train:
  regime: dino
  batch_size: 3
  steps: 1
  dino: {global_crops: 2, global_crop_size: 8, local_crops: 2, local_crop_size: 4}
)";

struct Case {
  const char *name, *yaml;
  bool image;
};

inline const Case kCases[] = {{"gpt2", kGpt2, false},
                              {"nanochat", kNanochat, false},
                              {"vit", kVit, true}};

inline const Case kDinoCase = {"dino", kDino, true};
constexpr int64_t kDinoPrototypes = 24, kDinoLocalSide = 4,
                  kDinoLocalTokens = 2;

constexpr int64_t kMaxBatch = 3, kMaxSeq = 16, kVocab = 64, kImageSide = 8,
                  kChannels = 3, kClasses = 5;

} // namespace lap::test::mixed

#endif // LAP_TEST_UNIT_MODEL_MIXEDKINDMODELS_H
