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

// Equal to a few float roundings of each value's scale: a norm whose input
// is computed again in its reductions may sum in another order (LLVM
// vectorises a reassociable sum by the cost of its loop body).
TEST(LoopFusionTest, FusedLoopsComputeWhatSeparateOnesCompute) {
  for (const Case &c : kCases) {
    SCOPED_TRACE(c.name);
    auto fused = load(c, true), separate = load(c, false);
    Batch b = c.image ? imageBatch(3, 3, 8, 5, 29) : textBatch(3, 11, 64, 29);
    expectSameComputation(*fused, *separate, b, 1e-6f);
  }
}

// The comparison above is not empty: the pipeline fuses these models, and
// --fuse-loops=false turns that off.
TEST(LoopFusionTest, FusionHappens) {
  for (const Case &c : kCases) {
    SCOPED_TRACE(c.name);
    EXPECT_GT(occurrences(loweredIR(c.yaml), "lap.fusion"), 0u);
    EXPECT_EQ(
        occurrences(loweredIR(c.yaml, "--fuse-loops=false"), "lap.fusion"), 0u);
  }
}

} // namespace
