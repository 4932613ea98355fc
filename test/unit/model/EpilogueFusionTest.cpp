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

std::unique_ptr<ModelRun> load(bool fused) {
  auto run = std::make_unique<ModelRun>(
      compiled(fused ? "epilogues_gpt2" : "epilogues_gpt2_off", kGpt2,
               kMaxBatch, kMaxSeq, fused ? "" : "--fuse-epilogues=false"));
  EXPECT_EQ(run->model.initParams(run->param(), 11), LAP_OK);
  return run;
}

TEST(EpilogueFusionTest, EpiloguesComputeWhatLoopsCompute) {
  auto fused = load(true), separate = load(false);
  Batch b = textBatch(3, 11, kVocab, 29);
  expectSameComputation(*fused, *separate, b, 1e-5f);
}

// The comparison above is not empty: the pipeline fuses the model's two
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
  // So does a bf16 model for the GPU, on bf16 tensors (each fused op's
  // line names bf16 tensors only); for the CPU, whose generated GELU loops
  // cost less than the kernels' epilogues, its layers stay apart
  // (Target::fusesBf16Epilogues). The GPU's fused bf16 model is held to
  // the CPU's by the CUDA model tests.
  std::string gpu = loweredIR(kGpt2Bf16, "--target=cuda");
  EXPECT_EQ(occurrences(gpu, "lap.linear_gelu "), 8u);
  EXPECT_EQ(occurrences(gpu, "lap.gelu_linear_grad "), 2u);
  std::istringstream lines(gpu);
  for (std::string line; std::getline(lines, line);)
    if (line.find("lap.linear_gelu ") != std::string::npos ||
        line.find("lap.gelu_linear_grad ") != std::string::npos)
      EXPECT_EQ(line.find("xf32>"), std::string::npos) << line;
  std::string cpu = loweredIR(kGpt2Bf16);
  EXPECT_EQ(occurrences(cpu, "lap.linear_gelu "), 0u);
  EXPECT_EQ(occurrences(cpu, "lap.gelu_linear_grad "), 0u);
}

} // namespace
