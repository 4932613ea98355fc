//===- PrecisionTest.cpp - bf16 models and bf16 products, whole models ----===//
//
// Each of the three mixed-kind models compiled at a bf16 setting computes
// the evaluation forward and the training step of the fp32 library of the
// same spec to bf16's precision: loss, logits and every gradient within a
// stated fraction of each tensor's largest magnitude; and not the same
// values, or the setting would not have reached the code.
//
// - train.matmul_precision: bf16 makes every GEMM (linear layers, the fused
//   query/key/value projection, the lm_head with its cross-entropy, their
//   gradients) multiply operands rounded to bf16 with fp32 accumulation
//   (the kernels' own tests hold them to that exactly): 3e-2 (bf16 keeps 8
//   significant bits: 2^-9 relative error per operand, a few of them
//   compounding through two layers).
// - train.precision: bf16 stores every activation, the parameters' working
//   copies and the activations' gradients in bf16 as well, each rounding
//   adding its 2^-9: 4e-2 (measured worst 0.7-1.8%).
//
//===----------------------------------------------------------------------===//

#include "MixedKindModels.h"
#include "ModelTestSupport.h"

#include "runtime/kernels/Bf16.h"

#include <algorithm>
#include <cmath>

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;

namespace {

constexpr float kBf16ProductsTolerance = 3e-2f;
constexpr float kBf16ModelTolerance = 4e-2f;

class PrecisionTest : public testing::TestWithParam<Case> {
protected:
  /// The case's library with train setting `key` ("precision" or
  /// "matmul_precision") at `value` ("fp32" or "bf16").
  std::unique_ptr<ModelRun> load(const std::string &key,
                                 const std::string &value) {
    const Case &c = GetParam();
    std::string yaml = std::string(c.yaml) +
                       "train: {regime: " + (c.image ? "supervised" : "lm") +
                       ", batch_size: 3, steps: 1, " + key + ": " + value +
                       "}\n";
    auto run = std::make_unique<ModelRun>(
        compiled(std::string(c.name) + "_" + key + "_" + value, yaml, kMaxBatch,
                 c.image ? 0 : kMaxSeq));
    EXPECT_EQ(run->model.initParams(run->param(), 5), LAP_OK);
    return run;
  }

  Batch batch() const {
    return GetParam().image ? imageBatch(3, kChannels, kImageSide, kClasses, 17)
                            : textBatch(3, 11, kVocab, 17);
  }
};

TEST_P(PrecisionTest, Bf16ProductsComputeTheFp32ModelToBf16Precision) {
  auto bf16 = load("matmul_precision", "bf16"),
       fp32 = load("matmul_precision", "fp32");
  Batch b = batch();
  expectSameComputation(*bf16, *fp32, b, kBf16ProductsTolerance);
  EXPECT_NE(bf16->forward(b), fp32->forward(b))
      << "bf16 products gave the fp32 loss bit for bit";
}

TEST_P(PrecisionTest, Bf16ModelComputesTheFp32ModelToBf16Precision) {
  auto bf16 = load("precision", "bf16"), fp32 = load("precision", "fp32");
  Batch b = batch();
  expectSameComputation(*bf16, *fp32, b, kBf16ModelTolerance);
  EXPECT_NE(bf16->forward(b), fp32->forward(b))
      << "the bf16 model gave the fp32 loss bit for bit";
}

// Learned head kinds beside fixed ones: a bf16 model computes their [2, H]
// coefficients and their gradients in f32 (per-head scalars), so each
// layer's coefficient gradient, not only the model's largest gradients,
// is the fp32 model's to bf16's precision: within 6% of each layer's
// largest (measured worst 4.5%, layer 0; 2% while the bf16 model's MLPs
// still ran as the fp32 model's fused GEMM + GELU, with the pre-activation
// in fp32).
TEST(Bf16LearnedKinds, CoefficientGradientsMatchTheFp32Model) {
  const std::string spec = R"(model:
  family: gpt
  layers: 2
  width: 32
  heads: 4
  positions: {type: rope}
  vocab: 64
  context: 16
  init: {distribution: normal, std: 0.2}
attention:
  define:
    soft_lap: {learnable: true, init: laplacian}
  kinds:
    - [attn, learnable, laplacian, soft_lap]
    - [soft_lap, attn, learnable, laplacian]
)";
  auto load = [&](const std::string &precision) {
    auto run = std::make_unique<ModelRun>(compiled(
        "gpt_learned_" + precision,
        spec + "train: {regime: lm, batch_size: 3, steps: 1, precision: " +
            precision + "}\n",
        kMaxBatch, kMaxSeq));
    EXPECT_EQ(run->model.initParams(run->param(), 5), LAP_OK);
    return run;
  };
  auto bf16 = load("bf16"), fp32 = load("fp32");
  Batch b = textBatch(3, 11, kVocab, 17);
  expectSameComputation(*bf16, *fp32, b, kBf16ModelTolerance);
  for (const char *name :
       {"blocks.0.attn.coefficients", "blocks.1.attn.coefficients"}) {
    SCOPED_TRACE(name);
    const ParameterInfo &info = fp32->info(name);
    const float *want = fp32->grad() + info.offset;
    const float *got = bf16->grad() + info.offset;
    float largest = 0.0f;
    for (int64_t i = 0; i < info.elements; ++i)
      largest = std::max(largest, std::fabs(want[i]));
    EXPECT_GT(largest, 0.0f) << "no gradient reached the coefficients";
    expectWithinScale(got, want, size_t(info.elements), 6e-2, name);
  }
}

// A bf16 model's generated loops round as runtime/kernels/Bf16.h does (to
// nearest, ties to even; infinities, overflow, NaN, subnormals): with the
// positions zero, the GPT-2-style model's first residual stream is its
// token embedding rows converted to bf16, so each element must be the
// rounding of the parameter bit for bit.
TEST(Bf16Rounding, GeneratedLoopsRoundAsTheRuntimeDoes) {
  const float tie = 1.0f + 0x1p-8f, up = 1.0f + 3 * 0x1p-8f;
  const float row[] = {tie,
                       up,
                       -tie,
                       std::nextafter(tie, 2.0f),
                       std::nextafter(tie, 0.0f),
                       3.4e38f,
                       -3.4e38f,
                       INFINITY,
                       -INFINITY,
                       NAN,
                       0x1p-130f,
                       0x1.8p-133f,
                       1e-45f,
                       0.1f,
                       -2.7182817f,
                       65504.0f};
  const int64_t width = 32, rows = 64;
  std::string yaml = std::string(kGpt2) +
                     "train: {regime: lm, batch_size: 3, steps: 1, "
                     "precision: bf16}\n";
  ModelRun run(compiled("gpt2_rounding_bf16", yaml, kMaxBatch, kMaxSeq));
  ASSERT_EQ(run.model.initParams(run.param(), 5), LAP_OK);
  float *wte = run.param("wte.weight");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j)
      wte[r * width + j] = j < int64_t(std::size(row))
                               ? row[j]
                               : std::ldexp(1.0f + float(r) / 64, int(j) - 20);
  const ParameterInfo &wpe = run.info("wpe.weight");
  std::fill_n(run.param() + wpe.offset, wpe.elements, 0.0f);

  Batch b = textBatch(2, 5, kVocab, 3);
  lap_batch view = b.view();
  const int64_t layers = run.model.manifest()["features"]["layers"];
  std::vector<float> features(size_t(layers * 2 * 5 * width), 0.0f);
  ASSERT_EQ(run.model.features(run.param(), &view, run.workspace.data,
                               features.data()),
            LAP_OK)
      << run.model.lastError();
  for (int64_t i = 0; i < 2 * 5; ++i) {
    const float *want = wte + int64_t(b.tokens[size_t(i)]) * width;
    for (int64_t j = 0; j < width; ++j) {
      float got = features[size_t(i * width + j)];
      float rounded = bf16::round(want[j]);
      if (std::isnan(rounded))
        EXPECT_TRUE(std::isnan(got)) << "element " << j;
      else
        EXPECT_EQ(got, rounded) << "element " << j << " of " << want[j];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MixedKinds, PrecisionTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

} // namespace
