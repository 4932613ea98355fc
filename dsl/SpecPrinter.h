//===- SpecPrinter.h - A spec in canonical form -----------------*- C++ -*-===//

#ifndef LAP_DSL_SPECPRINTER_H
#define LAP_DSL_SPECPRINTER_H

#include "dsl/Spec.h"

#include <string>

namespace lap::dsl {

/// The fully resolved spec as YAML: every setting that applies to its family
/// and regime, in schema order, one kind per head, and the derived values.
/// The text reads back as a spec that resolves to the same values.
std::string printSpec(const Spec &spec);

/// The spec's `model` and `attention` sections as printSpec prints them:
/// what a model's parameters mean (shapes, head kinds, coefficients), and
/// nothing of how it trains. The manifest's model_hash is its hash.
std::string printArchitecture(const Spec &spec);

} // namespace lap::dsl

#endif // LAP_DSL_SPECPRINTER_H
