//===- ManifestCheck.h - A model library's manifest, validated --*- C++ -*-===//
//
// Hosts read sizes from the manifest and allocate by them, so a manifest is
// checked before any of it is used: every field a host reads is there, has
// its type and a value in range, and the parameter table adds up.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_MODEL_MANIFESTCHECK_H
#define LAP_RUNTIME_MODEL_MANIFESTCHECK_H

#include <nlohmann/json.hpp>

#include <string>

namespace lap::model {

/// Why `manifest` is not a manifest a host may use ("limits.batch is -1, not
/// an integer in 1..1073741824"), or "" when it is.
std::string manifestProblem(const nlohmann::json &manifest);

} // namespace lap::model

#endif // LAP_RUNTIME_MODEL_MANIFESTCHECK_H
