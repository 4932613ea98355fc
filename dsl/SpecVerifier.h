//===- SpecVerifier.h - Rules that relate settings to each other -*- C++ -*-===//

#ifndef LAP_DSL_SPECVERIFIER_H
#define LAP_DSL_SPECVERIFIER_H

#include "dsl/Diagnostics.h"
#include "dsl/Spec.h"

#include <set>
#include <string>

namespace lap::dsl {

/// Checks the rules between settings of a parsed spec (divisibility, family
/// and regime consistency, sequence limits, ...). Settings named in
/// `invalid` failed to read; rules that involve them are skipped, so one
/// mistake gives one error.
void verifySpec(const Spec &spec, const std::set<std::string> &invalid,
                Diagnostics &diags);

} // namespace lap::dsl

#endif // LAP_DSL_SPECVERIFIER_H
