//===- AttentionWindows.h - Sliding windows per layer -----------*- C++ -*-===//

#ifndef LAP_DSL_ATTENTIONWINDOWS_H
#define LAP_DSL_ATTENTIONWINDOWS_H

#include "dsl/Diagnostics.h"
#include "dsl/Spec.h"
#include "dsl/YamlTree.h"

namespace lap::dsl {

/// Fills `spec.attention.windows`, one per layer (0: none), from
/// `attention.window` as written (null when absent): a size for every layer,
/// a list of sizes, one per layer, or `{pattern: SSSL, short: N, long: M}`.
/// model.layers must be valid when `layersOk`; otherwise only the values
/// are checked.
void placeWindows(Spec &spec, const Node *window, bool layersOk,
                  Diagnostics &diags);

} // namespace lap::dsl

#endif // LAP_DSL_ATTENTIONWINDOWS_H
