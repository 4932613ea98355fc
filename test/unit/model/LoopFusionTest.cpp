//===- LoopFusionTest.cpp - Fused loops compute what separate ones do ------===//
//
// --lap-fuse-loops turns residual adds and the norms they feed, activation
// chains, gradient sums and linear layers' biases into one loop nest each.
// Each fused value is the same expression of the same inputs as before, so
// a library built with fusion computes the loss, the logits and every
// gradient as one built with --fuse-loops=false does, within 1e-6 of the
// tensor's largest value: in practice bit for bit where a norm reads its
// input back from memory (every training step here), while a norm that
// computes its input again inside its reductions (the ViT's final norm when
// evaluating) may sum in another order, as LLVM vectorises a reassociable
// sum by the cost of its loop body. Checked on a GPT-2-style model
// (learned positions, LayerNorm with bias, GELU, biases, dropout), a
// nanochat-style one (RMSNorm, ReLU², softcap) and a DeiT-3-style ViT
// whose residual branches draw drop-path masks (LayerScale, drop path),
// each with mixed head kinds.
//
//===----------------------------------------------------------------------===//

#include "MixedKindModels.h"
#include "ModelTestSupport.h"

#include <cmath>

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;

namespace {

std::unique_ptr<ModelRun> load(const Case &c, bool fused) {
  std::string name = std::string("fusion_") + c.name + (fused ? "" : "_off");
  auto run = std::make_unique<ModelRun>(
      compiled(name, c.yaml, kMaxBatch, c.image ? 0 : kMaxSeq,
               fused ? "" : "--fuse-loops=false"));
  EXPECT_EQ(run->model.initParams(run->param(), 11), LAP_OK);
  return run;
}

/// Equal to a few float roundings of the tensor's scale: a norm whose
/// input is computed again in its reductions may sum in another order
/// (LLVM vectorises a reassociable sum by the cost of its loop body).
void expectClose(const std::vector<float> &a, const std::vector<float> &b,
                 const char *what) {
  expectWithinScale(a, b, 1e-6f, what);
}

TEST(LoopFusionTest, FusedLoopsComputeWhatSeparateOnesCompute) {
  for (const Case &c : kCases) {
    SCOPED_TRACE(c.name);
    auto fused = load(c, true), separate = load(c, false);
    ASSERT_EQ(fused->elements(), separate->elements());
    Batch b = c.image ? imageBatch(3, 3, 8, 5, 29) : textBatch(3, 11, 64, 29);
    std::vector<float> fusedLogits, separateLogits;
    float loss = fused->forward(b, &fusedLogits);
    EXPECT_NEAR(loss, separate->forward(b, &separateLogits), 1e-6f * loss);
    expectClose(fusedLogits, separateLogits, "logits");
    // A training step: dropout and drop path draw the same masks.
    float trainLoss = fused->trainStep(b);
    EXPECT_NEAR(trainLoss, separate->trainStep(b), 1e-6f * trainLoss);
    std::vector<float> fusedGrads(fused->grad(),
                                  fused->grad() + fused->elements()),
        separateGrads(separate->grad(),
                      separate->grad() + separate->elements());
    expectClose(fusedGrads, separateGrads, "gradients");
  }
}

// The comparison above is not empty: the pipeline fuses these models, and
// --fuse-loops=false turns that off.
TEST(LoopFusionTest, FusionHappens) {
  for (const Case &c : kCases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    std::string spec = dir.file("spec.yaml");
    std::ofstream(spec) << c.yaml;
    auto fusions = [&](const std::string &flags) {
      std::string output;
      EXPECT_EQ(runCommand(std::string("'") + LAP_LAPC + "' '" + spec +
                               "' --emit=lowered " + flags,
                           output),
                0)
          << output;
      size_t count = 0;
      for (size_t at = output.find("lap.fusion"); at != std::string::npos;
           at = output.find("lap.fusion", at + 1))
        ++count;
      return count;
    };
    EXPECT_GT(fusions(""), 0u);
    EXPECT_EQ(fusions("--fuse-loops=false"), 0u);
  }
}

} // namespace
