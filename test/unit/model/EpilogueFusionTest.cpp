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
#include <sstream>
#include <string>

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;

namespace {

/// The GPT-2-style model computing in bf16 (train.precision: bf16).
const std::string kGpt2Bf16 = std::string(kGpt2) +
                              "train: {regime: lm, batch_size: 3, steps: 1, "
                              "precision: bf16}\n";

std::unique_ptr<ModelRun> load(bool fused, bool bf16 = false) {
  std::string name = std::string("epilogues_gpt2") + (bf16 ? "_bf16" : "") +
                     (fused ? "" : "_off");
  auto run = std::make_unique<ModelRun>(
      compiled(name, bf16 ? kGpt2Bf16 : kGpt2, kMaxBatch, kMaxSeq,
               fused ? "" : "--fuse-epilogues=false"));
  EXPECT_EQ(run->model.initParams(run->param(), 11), LAP_OK);
  return run;
}

TEST(EpilogueFusionTest, EpiloguesComputeWhatLoopsCompute) {
  auto fused = load(true), separate = load(false);
  Batch b = textBatch(3, 11, kVocab, 29);
  expectSameComputation(*fused, *separate, b, 1e-5f);
}

// A bf16 model's fused layers (the `_bf16` kernels) round once where the
// loops round twice: the GELU of the unrounded pre-activation, the GELU's
// gradient rounded once instead of after the GEMM as well. So the two
// libraries agree to bf16's precision, not to fp32's: within 2e-2 of each
// tensor's largest magnitude (measured worst 1.1%, a gradient). Each is
// that far from the fp32 model, the fused one a little nearer (logits 1.3%
// against 1.5%, gradients 1.2% against 1.3%).
TEST(EpilogueFusionTest, Bf16EpiloguesComputeWhatLoopsCompute) {
  auto fused = load(true, true), separate = load(false, true);
  Batch b = textBatch(3, 11, kVocab, 29);
  expectSameComputation(*fused, *separate, b, 2e-2f);
}

// The comparisons above are not empty: the pipeline fuses the model's two
// MLPs, forward and backward, and --fuse-epilogues=false does not.
TEST(EpilogueFusionTest, FusionHappens) {
  std::string fused = loweredIR(kGpt2),
              apart = loweredIR(kGpt2, "--fuse-epilogues=false");
  // Two layers: @forward, @train_step, @features and @decode each run both
  // MLPs; only @train_step has their backward.
  EXPECT_EQ(occurrences(fused, "lap.linear_gelu "), 8u);
  EXPECT_EQ(occurrences(fused, "lap.gelu_linear_grad "), 2u);
  EXPECT_EQ(occurrences(apart, "lap.linear_gelu "), 0u);
  EXPECT_EQ(occurrences(apart, "lap.gelu_linear_grad "), 0u);
  // So does a bf16 model, on bf16 tensors: each fused op's line names bf16
  // tensors only.
  std::string bf16 = loweredIR(kGpt2Bf16);
  EXPECT_EQ(occurrences(bf16, "lap.linear_gelu "), 8u);
  EXPECT_EQ(occurrences(bf16, "lap.gelu_linear_grad "), 2u);
  std::istringstream lines(bf16);
  for (std::string line; std::getline(lines, line);)
    if (line.find("lap.linear_gelu ") != std::string::npos ||
        line.find("lap.gelu_linear_grad ") != std::string::npos)
      EXPECT_EQ(line.find("xf32>"), std::string::npos) << line;
}

} // namespace
