//===- LowerHeadKinds.cpp - Head kinds to per-head coefficients -*- C++ -*-===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace lap {
#define GEN_PASS_DEF_LAPLOWERHEADKINDS
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// Replaces `op`'s kinds by coefficient arrays, or drops them when every
/// head is plain attention.
template <typename AttentionLike> void lowerKinds(AttentionLike op) {
  if (!op.getKinds())
    return;
  SmallVector<float> alpha, beta;
  bool plain = true;
  for (auto [a, b] : op.getFixedCoefficients()) {
    alpha.push_back(a);
    beta.push_back(b);
    plain &= a == 1.0f && b == 0.0f;
  }
  op.removeKindsAttr();
  if (plain)
    return;
  Builder builder(op.getContext());
  op.setAlphaAttr(builder.getDenseF32ArrayAttr(alpha));
  op.setBetaAttr(builder.getDenseF32ArrayAttr(beta));
}

struct LowerHeadKinds : lap::impl::LapLowerHeadKindsBase<LowerHeadKinds> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      if (auto attention = dyn_cast<AttentionOp>(op))
        lowerKinds(attention);
      else if (auto cached = dyn_cast<CachedAttentionOp>(op))
        lowerKinds(cached);
    });
  }
};

} // namespace
