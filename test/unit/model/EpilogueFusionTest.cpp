//===- EpilogueFusionTest.cpp - GEMM epilogues compute what loops do -------===//
//
// --lap-fuse-epilogues computes a tanh GELU in the epilogue of the GEMM
// before it (lap.linear_gelu) and its gradient, with the bias gradient of
// that GEMM's layer, in the GEMM after it (lap.gelu_linear_grad). A library
// built so computes the loss, the logits and every gradient of the
// GPT-2-style model (a GELU after fc1 with its bias, dropout, mixed head
// kinds) as one built with --fuse-epilogues=false does, within 1e-5 of the
// tensor's largest magnitude: the kernels' tanh (a polynomial of their own,
// runtime/kernels/cpu/FastMath.h) and the generated loops' differ by a few
// ulp, and both sum the bias gradient in the same chunks.
//
//===----------------------------------------------------------------------===//

#include "MixedKindModels.h"
#include "ModelTestSupport.h"

#include <cmath>

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;

namespace {

std::unique_ptr<ModelRun> load(bool fused) {
  auto run = std::make_unique<ModelRun>(
      compiled(fused ? "epilogues_gpt2" : "epilogues_gpt2_off", kGpt2,
               kMaxBatch, kMaxSeq, fused ? "" : "--fuse-epilogues=false"));
  EXPECT_EQ(run->model.initParams(run->param(), 11), LAP_OK);
  return run;
}

void expectClose(const std::vector<float> &a, const std::vector<float> &b,
                 const char *what) {
  expectWithinScale(a, b, 1e-5f, what);
}

TEST(EpilogueFusionTest, EpiloguesComputeWhatLoopsCompute) {
  auto fused = load(true), separate = load(false);
  ASSERT_EQ(fused->elements(), separate->elements());
  Batch b = textBatch(3, 11, kVocab, 29);
  std::vector<float> fusedLogits, separateLogits;
  float loss = fused->forward(b, &fusedLogits);
  EXPECT_NEAR(loss, separate->forward(b, &separateLogits), 1e-5f * loss);
  expectClose(fusedLogits, separateLogits, "logits");
  // A training step: dropout draws the same masks.
  float trainLoss = fused->trainStep(b);
  EXPECT_NEAR(trainLoss, separate->trainStep(b), 1e-5f * trainLoss);
  std::vector<float> fusedGrads(fused->grad(),
                                fused->grad() + fused->elements()),
      separateGrads(separate->grad(), separate->grad() + separate->elements());
  expectClose(fusedGrads, separateGrads, "gradients");
}

// The comparison above is not empty: the pipeline fuses the model's two
// MLPs, forward and backward, and --fuse-epilogues=false does not.
TEST(EpilogueFusionTest, FusionHappens) {
  TempDir dir;
  std::string spec = dir.file("spec.yaml");
  std::ofstream(spec) << kGpt2;
  auto count = [&](const std::string &flags, const std::string &op) {
    std::string output;
    EXPECT_EQ(runCommand(std::string("'") + LAP_LAPC + "' '" + spec +
                             "' --emit=lowered " + flags,
                         output),
              0)
        << output;
    size_t n = 0;
    for (size_t at = output.find(op); at != std::string::npos;
         at = output.find(op, at + 1))
      ++n;
    return n;
  };
  // Two layers: @forward, @train_step, @features and @decode each run both
  // MLPs; only @train_step has their backward.
  EXPECT_EQ(count("", "lap.linear_gelu "), 8u);
  EXPECT_EQ(count("", "lap.gelu_linear_grad "), 2u);
  EXPECT_EQ(count("--fuse-epilogues=false", "lap.linear_gelu "), 0u);
  EXPECT_EQ(count("--fuse-epilogues=false", "lap.gelu_linear_grad "), 0u);
}

} // namespace
