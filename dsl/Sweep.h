//===- Sweep.h - Variants of one spec over axes of settings -----*- C++ -*-===//
//
// A spec's `sweep` section names axes, each a dotted setting path with a
// list of values; the variants are every combination (a grid), except that
// the axes under `zip` advance together (their lists have one length):
//
//   sweep:
//     attention.laplacian_heads: [0, 1, 2, 4]
//     train.seed: [1, 2, 3]
//     zip: {model.layers: [4, 6], model.width: [256, 384]}
//
// Each variant is the spec's tree with the values put at their paths, then
// read like any spec: an error is located at the value that caused it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_SWEEP_H
#define LAP_DSL_SWEEP_H

#include "dsl/Diagnostics.h"
#include "dsl/YamlTree.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lap::dsl {

/// One combination: a value (as written) for every axis, in axis order.
using SweepPoint = std::vector<std::pair<std::string, const Node *>>;

/// The points of the `sweep` section `sweep` (grid order: the last axis
/// varies fastest); nothing after errors.
std::optional<std::vector<SweepPoint>> sweepPoints(const Node &sweep,
                                                   Diagnostics &diags);

/// `root` with each of `point`'s values at its path (mappings on the way
/// are created as needed).
Node withPoint(const Node &root, const SweepPoint &point);

/// A variant's name: `base` and each axis's last path part with its value
/// ("tiny-laplacian_heads=2-seed=1"); the whole path where two axes share a
/// last part.
std::string variantName(const std::string &base, const SweepPoint &point);

/// A value as text for names and tables: a scalar's text, a list's items
/// joined by '_'.
std::string valueText(const Node &value);

} // namespace lap::dsl

#endif // LAP_DSL_SWEEP_H
