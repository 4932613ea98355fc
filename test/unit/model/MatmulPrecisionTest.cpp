//===- MatmulPrecisionTest.cpp - bf16 matrix products in a whole model ----===//
//
// train.matmul_precision: bf16 makes every GEMM of the model (its linear
// layers, the fused query/key/value projection, the lm_head with its
// cross-entropy, and their gradients) multiply operands rounded to bf16,
// accumulating in fp32 (the kernels' own tests hold them to that exactly).
// Each of the three mixed-kind models so compiled computes the evaluation
// forward and the training step of the fp32 library of the same spec to
// bf16's precision: loss, logits and every gradient within 3e-2 of each
// tensor's largest magnitude (bf16 keeps 8 significant bits: 2^-9
// relative error per operand, a few of them compounding through two
// layers); and not the same values, or the setting would not have reached
// the kernels.
//
//===----------------------------------------------------------------------===//

#include "MixedKindModels.h"
#include "ModelTestSupport.h"

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;

namespace {

constexpr float kBf16Tolerance = 3e-2f;

class MatmulPrecisionTest : public testing::TestWithParam<Case> {
protected:
  /// The case's library, its GEMMs at `precision` ("fp32" or "bf16").
  std::unique_ptr<ModelRun> load(const std::string &precision) {
    const Case &c = GetParam();
    std::string yaml =
        std::string(c.yaml) +
        "train: {regime: " + (c.image ? "supervised" : "lm") +
        ", batch_size: 3, steps: 1, matmul_precision: " + precision + "}\n";
    auto run = std::make_unique<ModelRun>(
        compiled(std::string(c.name) + "_matmul_" + precision, yaml, kMaxBatch,
                 c.image ? 0 : kMaxSeq));
    EXPECT_EQ(run->model.initParams(run->param(), 5), LAP_OK);
    return run;
  }

  Batch batch() const {
    return GetParam().image ? imageBatch(3, kChannels, kImageSide, kClasses, 17)
                            : textBatch(3, 11, kVocab, 17);
  }
};

TEST_P(MatmulPrecisionTest, Bf16ProductsComputeTheFp32ModelToBf16Precision) {
  auto bf16 = load("bf16"), fp32 = load("fp32");
  Batch b = batch();
  expectSameComputation(*bf16, *fp32, b, kBf16Tolerance);
  EXPECT_NE(bf16->forward(b), fp32->forward(b))
      << "bf16 products gave the fp32 loss bit for bit";
}

INSTANTIATE_TEST_SUITE_P(MixedKinds, MatmulPrecisionTest,
                         testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

} // namespace
