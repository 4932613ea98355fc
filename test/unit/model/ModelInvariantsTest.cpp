//===- ModelInvariantsTest.cpp - what head kinds must not change ----------===//
//
// The invariants of docs/architecture.md, Head kinds, on models: fixed head
// kinds do not change the parameter table; with zero-initialised output
// projections a Laplacian model equals its all-attn twin at init; a
// Laplacian head on a sequence of identical tokens outputs V - PV = 0; and a
// model with learned kinds equals, at init, the fixed-kind model it starts
// from.
//
//===----------------------------------------------------------------------===//

#include "ModelTestSupport.h"

#include <cmath>
#include <cstring>
#include <map>
#include <regex>

using namespace lap;
using namespace lap::test;

namespace {

// nanochat in miniature (specs/gpt_tiny.yaml): RoPE, QK-norm, parameter-free
// RMSNorm, ReLU^2, softcap, zero-initialised output projections; GQA.
const char *kGpt = R"(model:
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
  init: {distribution: uniform, std: fan_in, embedding_std: 1.0, head_std: 0.3,
         zero_out_proj: true}
)";

// DeiT-3 in miniature: CLS, positions on patches only, LayerScale, QK-norm.
const char *kVit = R"(model:
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
  init: {distribution: trunc_normal, std: 0.2, head_std: 0.3, zero_out_proj: true}
)";

struct Variant {
  const char *name, *base, *attention;
};

// The same two architectures under different head kinds; "attn" gives no
// attention section (every head attn by default).
const Variant kVariants[] = {
    {"gpt_attn", kGpt, ""},
    {"gpt_mixed", kGpt,
     "attention:\n  kinds:\n    - [attn, laplacian, laplacian, attn]\n"
     "    - [laplacian, attn, attn, attn]\n"},
    {"gpt_laplacian", kGpt, "attention:\n  laplacian_heads: 4\n"},
    {"vit_attn", kVit, ""},
    {"vit_mixed", kVit,
     "attention:\n  kinds: [attn, laplacian, attn, laplacian]\n"},
    // Learned kinds starting where gpt_mixed and vit_mixed are fixed.
    {"gpt_learnable", kGpt,
     "attention:\n  define:\n    soft_lap: {learnable: true, init: laplacian}\n"
     "  kinds:\n    - [learnable, soft_lap, laplacian, attn]\n"
     "    - [soft_lap, attn, learnable, learnable]\n"},
    {"vit_learnable", kVit,
     "attention:\n  define:\n    soft_lap: {learnable: true, init: laplacian}\n"
     "  kinds: [attn, soft_lap, learnable, laplacian]\n"},
};

constexpr int64_t kMaxBatch = 2, kMaxSeq = 16;

/// The library of variant `name`.
const std::string &path(const std::string &name) {
  for (const Variant &v : kVariants)
    if (name == v.name)
      return compiled(std::string("invariants_") + v.name,
                      std::string(v.base) + v.attention, kMaxBatch,
                      v.base == kVit ? 0 : kMaxSeq);
  throw std::runtime_error("no variant " + name);
}

std::unique_ptr<ModelRun> load(const std::string &name, uint64_t seed) {
  auto run = std::make_unique<ModelRun>(path(name));
  EXPECT_EQ(run->model.initParams(run->param(), seed), LAP_OK);
  return run;
}

/// The `parameters` that --emit=spec derived, as the manifest's spec says.
int64_t derivedParameters(const LoadedModel &m) {
  std::smatch match;
  std::string spec = m.manifest()["spec"];
  if (!std::regex_search(spec, match, std::regex("\n  parameters: ([0-9]+)")))
    return -1;
  return std::stoll(match[1]);
}

// (a) The parameter table (names, shapes, offsets, initialisation) and the
// totals (tensors, and floats of the buffer with its alignment padding) are
// the same whatever the heads' kinds; the tensors' elements add up to the
// derived count (PyTorch's sum of numel) and fit the buffer without overlap.
TEST(ModelInvariantsTest, ParameterTableDoesNotDependOnHeadKinds) {
  for (const char *family : {"gpt", "vit"}) {
    SCOPED_TRACE(family);
    LoadedModel attn(path(std::string(family) + "_attn"));
    int64_t sum = 0, end = 0;
    for (const ParameterInfo &p : attn.parameters()) {
      EXPECT_GE(p.offset, end) << p.name;
      end = p.offset + p.elements;
      sum += p.elements;
    }
    EXPECT_LE(end, attn.parameterElements());
    EXPECT_EQ(derivedParameters(attn), sum);
    for (const Variant &v : kVariants) {
      if (std::string(v.name).rfind(family, 0) != 0 || v.attention[0] == '\0' ||
          std::string(v.name).find("learnable") != std::string::npos)
        continue;
      SCOPED_TRACE(v.name);
      LoadedModel other(path(v.name));
      const nlohmann::json &a = attn.manifest()["parameters"];
      const nlohmann::json &b = other.manifest()["parameters"];
      EXPECT_EQ(a["count"], b["count"]);
      EXPECT_EQ(a["elements"], b["elements"]);
      EXPECT_EQ(a["tensors"], b["tensors"]); // names, shapes, offsets, init
      EXPECT_EQ(derivedParameters(other), sum);
    }
  }
}

// (b) Initialisation is a function of the seed and the parameter table
// only, so twins start from the same parameters; with zero output
// projections every attention branch adds exactly 0 (0 * finite), so the
// losses agree to float rounding (4 ulps; in practice bit for bit).
TEST(ModelInvariantsTest, ZeroOutputProjectionsMakeLaplacianEqualAttnAtInit) {
  for (auto [attnName, laplacianName] : {std::pair{"gpt_attn", "gpt_laplacian"},
                                         std::pair{"gpt_attn", "gpt_mixed"},
                                         std::pair{"vit_attn", "vit_mixed"}}) {
    SCOPED_TRACE(laplacianName);
    auto attn = load(attnName, 5), laplacian = load(laplacianName, 5);
    ASSERT_EQ(attn->elements(), laplacian->elements());
    EXPECT_EQ(std::memcmp(attn->param(), laplacian->param(),
                          size_t(attn->elements()) * sizeof(float)),
              0);
    Batch b = std::string(attnName) == "gpt_attn" ? textBatch(2, 13, 64, 21)
                                                  : imageBatch(2, 3, 8, 5, 21);
    std::vector<float> attnLogits, laplacianLogits;
    float attnLoss = attn->forward(b, &attnLogits);
    EXPECT_FLOAT_EQ(laplacian->forward(b, &laplacianLogits), attnLoss);
    ASSERT_EQ(attnLogits.size(), laplacianLogits.size());
    for (size_t i = 0; i < attnLogits.size(); ++i)
      ASSERT_FLOAT_EQ(attnLogits[i], laplacianLogits[i]) << "logit " << i;
    EXPECT_FLOAT_EQ(laplacian->trainStep(b), attn->trainStep(b));
    // The twins do differ: the projections' gradients see the heads'
    // outputs, PV against V - PV.
    float differs = 0;
    for (const ParameterInfo &p : attn->model.parameters())
      if (p.name.find("attn.proj.weight") != std::string::npos)
        for (int64_t i = p.offset; i < p.offset + p.elements; ++i)
          differs = std::max(differs,
                             std::abs(attn->grad()[i] - laplacian->grad()[i]));
    EXPECT_GT(differs, 1e-4);
  }
}

/// The largest |gradient| over the tensors whose names contain `part`, or
/// over all others when `others` is set.
float largestGradient(ModelRun &run, const std::string &part,
                      bool others = false) {
  float largest = 0;
  for (const ParameterInfo &p : run.model.parameters()) {
    if ((p.name.find(part) != std::string::npos) == others)
      continue;
    for (int64_t i = 0; i < p.elements; ++i)
      largest = std::max(largest, std::abs(run.grad()[p.offset + i]));
  }
  return largest;
}

// (c) On a batch where every token is the same (RoPE, so there are no
// learned positions), every position of a layer's input is the same vector
// and so is every value v_s: then PV = v, and a Laplacian head outputs
// V - PV = 0 whatever P is. An all-Laplacian model's loss therefore equals
// the loss of the same parameters with the attention projections zeroed,
// and no gradient reaches the attention weights. The projections are made
// non-zero first, or the comparison would be empty.
TEST(ModelInvariantsTest, LaplacianHeadsAddNothingOnIdenticalTokens) {
  auto laplacian = load("gpt_laplacian", 9), attn = load("gpt_attn", 9);
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> weight(-0.3f, 0.3f);
  for (const ParameterInfo &p : laplacian->model.parameters())
    if (p.name.find("attn.proj") != std::string::npos)
      for (int64_t i = 0; i < p.elements; ++i)
        attn->param()[p.offset + i] = laplacian->param()[p.offset + i] =
            weight(rng);

  Batch same = textBatch(2, kMaxSeq, 64, 23), varied = same;
  std::fill(same.tokens.begin(), same.tokens.end(), 37);
  float loss = laplacian->forward(same),
        variedLoss = laplacian->forward(varied);
  float attnLoss = attn->forward(same);
  laplacian->trainStep(same);
  float attnGrad = largestGradient(*laplacian, ".attn.");
  float otherGrad = largestGradient(*laplacian, ".attn.", /*others=*/true);
  attn->trainStep(same);

  for (const ParameterInfo &p : laplacian->model.parameters())
    if (p.name.find("attn.proj") != std::string::npos)
      std::fill(laplacian->param() + p.offset,
                laplacian->param() + p.offset + p.elements, 0.0f);
  float zeroed = laplacian->forward(same),
        variedZeroed = laplacian->forward(varied);
  // Every attention output is 0 up to the float rounding of sum_s P_s = 1
  // (~1e-7 of |v|), so 1e-6 of the loss bounds the difference.
  EXPECT_NEAR(loss, zeroed, 1e-6 * std::abs(zeroed));
  // The gradients of qkv and proj cancel to 0 likewise: dV sums to 0 over
  // the positions that share one input, and dS = P (dP - rowsum(P dP)) = 0
  // when dP does not depend on the key.
  EXPECT_GT(otherGrad, 0);
  EXPECT_LE(attnGrad, 1e-5 * otherGrad);

  // The same parameters do use attention when the heads are attn (PV = v)
  // or when the tokens differ, so the comparisons above can fail.
  EXPECT_GT(std::abs(attnLoss - zeroed), 1e-3 * std::abs(zeroed));
  EXPECT_GT(std::abs(variedLoss - variedZeroed), 1e-3 * std::abs(variedZeroed));
  EXPECT_GT(largestGradient(*attn, ".attn."), 1e-2 * otherGrad);
}

// (d) Learned kinds add one [2, N] tensor per layer with learned heads, at
// the end of the table, holding the starting (alpha, beta): every other
// parameter keeps its index, and so its initial values. With the output
// projections made non-zero (in both), the learnable model then computes
// exactly what its fixed twin does: the same loss and logits, the same
// gradients for the shared parameters.
TEST(ModelInvariantsTest, LearnedKindsAtInitEqualTheFixedKindsTheyStartFrom) {
  for (auto [fixedName, learnedName] :
       {std::pair{"gpt_mixed", "gpt_learnable"},
        std::pair{"vit_mixed", "vit_learnable"}}) {
    SCOPED_TRACE(learnedName);
    auto fixed = load(fixedName, 5), learned = load(learnedName, 5);
    const auto &fixedTable = fixed->model.parameters();
    const auto &learnedTable = learned->model.parameters();
    ASSERT_GT(learnedTable.size(), fixedTable.size());
    for (size_t i = 0; i < fixedTable.size(); ++i) {
      ASSERT_EQ(fixedTable[i].name, learnedTable[i].name);
      ASSERT_EQ(fixedTable[i].offset, learnedTable[i].offset);
      EXPECT_EQ(std::memcmp(fixed->param() + fixedTable[i].offset,
                            learned->param() + learnedTable[i].offset,
                            size_t(fixedTable[i].elements) * sizeof(float)),
                0)
          << fixedTable[i].name;
    }
    int64_t coefficients = 0;
    for (size_t i = fixedTable.size(); i < learnedTable.size(); ++i) {
      EXPECT_NE(learnedTable[i].name.find(".attn.coefficients"),
                std::string::npos);
      coefficients += learnedTable[i].elements;
    }
    EXPECT_EQ(derivedParameters(learned->model),
              derivedParameters(fixed->model) + coefficients);
    // gpt: layer 0 learns heads 0 (attn) and 1 (laplacian); vit: heads 1
    // (laplacian) and 2 (attn) of each layer. Rows: alpha, then beta.
    const ParameterInfo &first = learnedTable[fixedTable.size()];
    ASSERT_EQ(first.shape, (std::vector<int64_t>{2, 2}));
    std::vector<float> start(learned->param() + first.offset,
                             learned->param() + first.offset + 4);
    EXPECT_EQ(start, std::string(learnedName) == "gpt_learnable"
                         ? (std::vector<float>{1, -1, 0, 1})
                         : (std::vector<float>{-1, 1, 1, 0}));

    std::mt19937 rng(19);
    std::uniform_real_distribution<float> weight(-0.3f, 0.3f);
    for (const ParameterInfo &p : fixedTable)
      if (p.name.find("attn.proj") != std::string::npos)
        for (int64_t i = 0; i < p.elements; ++i)
          fixed->param()[p.offset + i] = learned->param()[p.offset + i] =
              weight(rng);
    Batch b = std::string(fixedName) == "gpt_mixed"
                  ? textBatch(2, 13, 64, 21)
                  : imageBatch(2, 3, 8, 5, 21);
    std::vector<float> fixedLogits, learnedLogits;
    EXPECT_EQ(learned->forward(b, &learnedLogits),
              fixed->forward(b, &fixedLogits));
    EXPECT_EQ(learnedLogits, fixedLogits);
    EXPECT_EQ(learned->trainStep(b), fixed->trainStep(b));
    for (const ParameterInfo &p : fixedTable)
      EXPECT_EQ(std::memcmp(fixed->grad() + p.offset,
                            learned->grad() + p.offset,
                            size_t(p.elements) * sizeof(float)),
                0)
          << p.name;
    // ... and the coefficients do get gradients.
    EXPECT_GT(largestGradient(*learned, ".attn.coefficients"), 0);
  }
}

} // namespace
