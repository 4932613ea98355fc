//===- SpecParser.h - Load, verify and resolve a spec -----------*- C++ -*-===//
//
// The entry points of the spec front end. A load either returns a verified
// Spec (every default applied, every head's kind resolved, derived values
// computed) or fails with every independent error in `diags`.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_SPECPARSER_H
#define LAP_DSL_SPECPARSER_H

#include "dsl/Diagnostics.h"
#include "dsl/Spec.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lap::dsl {

/// Loads the spec file at `path` (and the files it extends).
std::optional<Spec> loadSpec(const std::string &path, Diagnostics &diags);

/// One variant of a spec that sweeps (dsl/Sweep.h): its name, its axes'
/// values as text, its resolved spec (named after the variant).
struct SpecVariant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> values;
  Spec spec;
};

/// Loads the spec at `path` as the variants of its `sweep` section (a spec
/// without one is one variant, named as the spec). loadSpec refuses a spec
/// that sweeps.
std::optional<std::vector<SpecVariant>> loadSweep(const std::string &path,
                                                  Diagnostics &diags);

/// Loads a spec from text; `name` stands for its file in locations, and
/// `extends` paths resolve relative to its directory.
std::optional<Spec> parseSpec(std::string_view text, const std::string &name,
                              Diagnostics &diags);

} // namespace lap::dsl

#endif // LAP_DSL_SPECPARSER_H
