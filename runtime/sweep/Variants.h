//===- Variants.h - The variants of a spec's sweep --------------*- C++ -*-===//
//
// `lapc SPEC --emit=sweep -o DIR` writes every variant's spec and an index,
// DIR/sweep.json. Variants that differ only in train.seed share one model
// library and train with --seed; each variant's run directory tells, by
// its summary.json, whether it has finished.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SWEEP_VARIANTS_H
#define LAP_RUNTIME_SWEEP_VARIANTS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lap::sweep {

/// The axis that names the seed; the tables average over it.
inline constexpr const char *kSeedAxis = "train.seed";

/// One variant of a sweep, as lapc --emit=sweep wrote it.
struct Variant {
  std::string name, specFile, group;
  std::vector<std::string> axes;
  std::map<std::string, std::string> values;
  int64_t seed = 0; ///< train.seed, passed as --seed when it differs
  bool passSeed = false;
  nlohmann::json summary; ///< once finished
};

/// The variants of the index DIR/sweep.json, their names and spec files
/// checked to be files in DIR.
std::vector<Variant> readVariants(const std::string &dir);

/// Groups variants that differ only in train.seed under one model: writes
/// MODELS/<group>.yaml (the first member's spec), sets each variant's group,
/// seed and passSeed, and returns the groups in order.
std::vector<std::string> groupModels(std::vector<Variant> &variants,
                                     const std::string &modelsDir);

/// The summary of the run in `runDir` once it has finished, else none.
std::optional<nlohmann::json> finishedSummary(const std::string &runDir);

} // namespace lap::sweep

#endif // LAP_RUNTIME_SWEEP_VARIANTS_H
