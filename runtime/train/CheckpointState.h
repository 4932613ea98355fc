//===- CheckpointState.h - A checkpoint's state.json ------------*- C++ -*-===//
//
// What a checkpoint holds beside its tensors: the step, the random state,
// the data position, and what the parameters belong to and were trained
// under, so a resume continues the run exactly or is refused.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_CHECKPOINTSTATE_H
#define LAP_RUNTIME_TRAIN_CHECKPOINTSTATE_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace lap {

/// The version of state.json this lap writes and reads.
inline constexpr int kCheckpointVersion = 2;

/// The training state beside the tensors, stored as state.json.
struct CheckpointState {
  int64_t step = 0;
  uint64_t seed = 0;
  std::vector<uint64_t> rngState; ///< The generator's words, if it has any.
  int64_t dataPosition = 0;       ///< Windows or samples consumed so far.
  std::string specName;
  /// The manifest's model_hash: the architecture and head kinds the
  /// parameters belong to.
  std::string manifestHash;
  /// What fixes the run's trajectory (steps, batch, learning rates, their
  /// schedule), to refuse resuming it under another one.
  nlohmann::json schedule = nlohmann::json::object();
  nlohmann::json extra = nlohmann::json::object(); ///< Anything else.
};

nlohmann::json toJson(const CheckpointState &state);
/// Throws std::runtime_error naming `origin` and the field if a field is
/// missing, has the wrong type or an impossible value (a negative step or
/// data position), or the version is not kCheckpointVersion.
CheckpointState stateFromJson(const nlohmann::json &json,
                              const std::string &origin);

} // namespace lap

#endif // LAP_RUNTIME_TRAIN_CHECKPOINTSTATE_H
