//===- Derived.h - Values computed from a spec ------------------*- C++ -*-===//
//
// The exact parameter count (per group), the kind census and FLOPs per token
// or image. FLOPs follow the convention of nanochat and PaLM: 2 per weight
// of every matrix multiply (the embedding lookup is free; the lm_head and
// classifier count), plus 4 * head_dim per (query, key) pair for QK^T and PV
// over the full T x T (no causal halving); a training step is 3x forward;
// elementwise work is not counted.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_DERIVED_H
#define LAP_DSL_DERIVED_H

#include "dsl/Spec.h"

#include <string>
#include <vector>

namespace lap::dsl {

/// Computes `spec.derived` for a verified spec.
DerivedSpec deriveSpec(const Spec &spec);

/// One derived value by dotted path under `derived` ("parameters",
/// "parameter_groups.blocks", ...), in printing order.
struct DerivedValue {
  std::string path;
  double value;
  bool integer;
};

/// Every derived value of `spec` (whose `derived` is computed), flattened.
std::vector<DerivedValue> derivedValues(const Spec &spec);

/// The value as printed: integers exactly, others to 6 significant digits.
std::string formatDerived(const DerivedValue &value);

} // namespace lap::dsl

#endif // LAP_DSL_DERIVED_H
