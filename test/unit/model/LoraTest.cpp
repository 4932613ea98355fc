//===- LoraTest.cpp - LoRA adapters against their base model --------------===//
//
// A model under train.lora computes x W^T + (x A^T) B^T alpha / rank in each
// adapted layer. It starts as its base model (B = 0); with trained adapters
// (random here), folding them into the weights (interchange::mergeLora, what
// `lapc-run merge` writes) gives the base model's parameters computing the
// same logits. Gradients against finite differences are
// ModelGradientTest's (gpt_lora, vit_lora).
//
//===----------------------------------------------------------------------===//

#include "ModelTestSupport.h"

#include "runtime/interchange/Lora.h"

using namespace lap;
using namespace lap::test;

namespace {

const char *kBase = R"(name: lora_base
model:
  family: gpt
  layers: 2
  width: 32
  heads: 4
  kv_heads: 2
  mlp_hidden: 64
  activation: relu2
  norm: {type: rmsnorm, weight: false}
  positions: {type: rope}
  qk_norm: true
  vocab: 64
  context: 16
  init: {distribution: normal, std: 0.2, head_std: 0.3, zero_out_proj: false}
attention:
  kinds: [[attn, laplacian, attn, laplacian], [laplacian, laplacian, attn, attn]]
train:
  regime: lm
  batch_size: 2
  steps: 1
  data: {format: shards, train: unused}
)";

std::string adaptedSpec() {
  return std::string(kBase) +
         "  lora: {rank: 4, alpha: 6, targets: [qkv, proj, fc1, fc2]}\n";
}

/// The logits of `run` on `b`.
std::vector<float> logitsOf(ModelRun &run, Batch &b) {
  std::vector<float> logits;
  run.forward(b, &logits);
  return logits;
}

/// The largest |a - b| relative to the largest |a|.
double relativeDifference(const std::vector<float> &a,
                          const std::vector<float> &b) {
  double largest = 0, difference = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, double(std::abs(a[i])));
    difference = std::max(difference, double(std::abs(a[i] - b[i])));
  }
  return difference / largest;
}

/// Copies `from` into the parameters of `to` by name; returns how many.
int64_t copyByName(const std::vector<interchange::NamedTensor> &from,
                   ModelRun &to) {
  int64_t copied = 0;
  for (const ParameterInfo &p : to.model.parameters()) {
    auto it = std::find_if(from.begin(), from.end(),
                           [&](const auto &t) { return t.name == p.name; });
    if (it == from.end())
      continue;
    EXPECT_EQ(it->shape, p.shape) << p.name;
    ++copied;
    std::copy(it->data.begin(), it->data.end(), to.param() + p.offset);
  }
  return copied;
}

std::vector<interchange::NamedTensor> tensorsOf(ModelRun &run) {
  std::vector<interchange::NamedTensor> tensors;
  for (const ParameterInfo &p : run.model.parameters())
    tensors.push_back(
        {p.name, p.shape,
         std::vector<float>(run.param() + p.offset,
                            run.param() + p.offset + p.elements)});
  return tensors;
}

TEST(Lora, OnlyTheAdaptersTrain) {
  ModelRun adapted(compiled("lora_adapted", adaptedSpec(), 2, 16));
  int64_t trainable = 0, adapters = 0;
  for (const ParameterInfo &p : adapted.model.parameters()) {
    EXPECT_EQ(p.trainable, dsl::isLoraAdapter(p.name)) << p.name;
    trainable += p.trainable ? p.elements : 0;
    adapters += p.trainable;
  }
  // A [4, in] and B [out, 4] on qkv (32 -> 64), proj (32 -> 32), fc1
  // (32 -> 64) and fc2 (64 -> 32), in two blocks.
  EXPECT_EQ(adapters, 2 * 4 * 2);
  EXPECT_EQ(trainable, 2 * 4 * ((32 + 64) + (32 + 32) + (32 + 64) + (64 + 32)));
  EXPECT_EQ(adapted.model.gradientElements(),
            adapted.model.parameterElements() -
                adapted.model.trainableOffset());
}

// B starts at zero: the adapted model computes what its base computes from
// the same base parameters (to float rounding, 1e-6 of the largest logit:
// the adapted query/key/value projection runs apart from the head split the
// base fuses into it).
TEST(Lora, StartsAsItsBase) {
  ModelRun base(compiled("lora_base", kBase, 2, 16));
  ModelRun adapted(compiled("lora_adapted", adaptedSpec(), 2, 16));
  ASSERT_EQ(base.model.initParams(base.param(), 7), LAP_OK);
  ASSERT_EQ(adapted.model.initParams(adapted.param(), 3), LAP_OK);
  EXPECT_EQ(copyByName(tensorsOf(base), adapted),
            int64_t(base.model.parameters().size()));
  Batch b = textBatch(2, 11, 64, 5);
  EXPECT_LT(relativeDifference(logitsOf(base, b), logitsOf(adapted, b)), 1e-6);
}

// Trained (here random) adapters folded into the weights: the base model
// with the merged parameters computes the adapted model's logits, to float
// rounding (1e-5 of the largest logit).
TEST(Lora, MergedWeightsComputeTheAdaptedModel) {
  ModelRun base(compiled("lora_base", kBase, 2, 16));
  ModelRun adapted(compiled("lora_adapted", adaptedSpec(), 2, 16));
  ASSERT_EQ(adapted.model.initParams(adapted.param(), 3), LAP_OK);
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0, 0.3f);
  for (const ParameterInfo &p : adapted.model.parameters())
    if (p.trainable)
      for (int64_t i = 0; i < p.elements; ++i)
        adapted.param()[p.offset + i] = noise(rng);
  Batch b = textBatch(2, 11, 64, 5);
  std::vector<float> expected = logitsOf(adapted, b);

  std::vector<interchange::NamedTensor> merged =
      interchange::mergeLora(tensorsOf(adapted), 6.0 / 4.0);
  EXPECT_EQ(copyByName(merged, base), int64_t(merged.size()));
  EXPECT_EQ(merged.size(), base.model.parameters().size());
  std::vector<float> logits = logitsOf(base, b);
  EXPECT_LT(relativeDifference(expected, logits), 1e-5);
  // And the adapters mattered: without them the logits differ.
  copyByName(tensorsOf(adapted), base);
  EXPECT_GT(relativeDifference(expected, logitsOf(base, b)), 1e-2);
}

TEST(Lora, MergeRefusesAnAdapterWithoutItsPair) {
  std::vector<interchange::NamedTensor> tensors = {
      {"blocks.0.mlp.fc1.weight", {4, 2}, std::vector<float>(8)},
      {"blocks.0.mlp.fc1.lora_A.weight", {1, 2}, std::vector<float>(2)}};
  try {
    interchange::mergeLora(tensors, 1);
    FAIL() << "merged an adapter without its B";
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "the adapter 'blocks.0.mlp.fc1.lora_A.weight' has "
                           "no 'blocks.0.mlp.fc1.lora_B.weight'");
  }
}

} // namespace
