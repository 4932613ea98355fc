//===- AttentionPlacement.h - One head kind per head ------------*- C++ -*-===//

#ifndef LAP_DSL_ATTENTIONPLACEMENT_H
#define LAP_DSL_ATTENTIONPLACEMENT_H

#include "dsl/Diagnostics.h"
#include "dsl/Spec.h"
#include "dsl/YamlTree.h"

namespace lap::dsl {

/// The placement keys of `attention`, as written (null when absent).
struct AttentionPlacement {
  const Node *laplacianHeads = nullptr; ///< count, or counts per layer
  const Node *kinds = nullptr;          ///< kinds, or kinds per layer
  const Node *pool = nullptr;           ///< kinds of attentive-pooling heads
  const Node *define = nullptr;         ///< kinds the spec defines
};

/// Fills `spec.attention` with the defined kinds and one kind per head from
/// `placement` (default: every head `attn`); model.heads must be valid. With
/// `layersOk` false, counts and kinds are checked per head only.
void placeHeadKinds(Spec &spec, const AttentionPlacement &placement,
                    bool layersOk, Diagnostics &diags);

} // namespace lap::dsl

#endif // LAP_DSL_ATTENTIONPLACEMENT_H
