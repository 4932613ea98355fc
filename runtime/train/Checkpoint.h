//===- Checkpoint.h - Training checkpoints in a run directory ---*- C++ -*-===//
//
// Checkpoints in the format the rest of the ecosystem reads: every tensor
// file is a safetensors file (data/Safetensors.h), so a checkpoint opens in
// Python with `safetensors` or `torch` without lap.
//
// A training run keeps its checkpoints under one directory:
//
//   run/step_000200/model.safetensors      parameters, PyTorch layouts
//   run/step_000200/optimizer.safetensors  optimizer state arrays
//   run/step_000200/state.json             step, RNG, data position, ...
//
// A checkpoint is built in `run/.step_000200.tmp-<pid>`, every file and the
// directory are fsynced, and only then is it renamed into place, so a crash
// or a full disk never leaves a half-written `step_*` directory behind.
// A tensor file without checksums is refused. Every failure is a
// std::runtime_error naming the file or directory.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_CHECKPOINT_H
#define LAP_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/data/Safetensors.h"
#include "runtime/train/CheckpointState.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lap {

/// What one checkpoint holds.
struct CheckpointData {
  CheckpointState state;
  std::vector<TensorRef> parameters; ///< model.safetensors
  std::vector<TensorRef> optimizer;  ///< optimizer.safetensors
  /// model.safetensors' "__metadata__"; "format": "pt" is added unless set,
  /// as PyTorch loaders expect it.
  std::map<std::string, std::string> metadata;
};

/// The directory name of a step: "step_000200".
std::string checkpointName(int64_t step);

/// Writes `data` atomically as `runDir/step_NNNNNN` (creating `runDir` if
/// needed; an existing checkpoint of the same step is replaced) and returns
/// its path. On failure nothing but the previous checkpoints remains and the
/// error names the checkpoint directory and the file that failed.
std::string saveCheckpoint(const std::string &runDir,
                           const CheckpointData &data);

/// The newest complete checkpoint directory under `runDir` (highest step,
/// all three files present), or none.
std::optional<std::string> latestCheckpoint(const std::string &runDir);

/// `step_*` directories under `runDir` newer than its latest complete
/// checkpoint that lack a file, each as "DIR (no FILE)": what a resume
/// skips, to be announced.
std::vector<std::string> incompleteCheckpoints(const std::string &runDir);

/// Removes all but the newest `keep` complete checkpoints, and temporary
/// directories of writers that are no longer running. Returns the removed
/// paths.
std::vector<std::string> pruneCheckpoints(const std::string &runDir,
                                          size_t keep);

/// A tensor a model expects in a checkpoint.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  /// May be absent (a learned head's coefficients, which a model whose
  /// heads were switched starts from its kinds' values).
  bool optional = false;
};

/// Reads the parameter file `path` (a checkpoint's model.safetensors, or
/// what `lapc-run import` writes), refusing, before any data is read, one
/// whose tensors differ from `expected` in names, shapes or dtype (F32),
/// naming the file, the first mismatching tensor and both shapes (a tensor
/// `optional` may be absent), and a file without checksums.
SafetensorsFile readParameterFile(const std::string &path,
                                  const std::vector<TensorSpec> &expected);

/// A checkpoint read back.
struct LoadedCheckpoint {
  std::string path;
  CheckpointState state;
  SafetensorsFile model;
  SafetensorsFile optimizer;
};

/// Loads the checkpoint directory `checkpointDir` (a `step_*` directory).
/// Refuses, without touching any file, a checkpoint whose model tensors
/// differ from `expected` in names, shapes or dtype (F32), naming the file,
/// the first mismatching tensor and both shapes; a state.json whose step is
/// not the directory's; a tensor file without checksums; and any corrupt
/// file. `checkState`, when given, sees the validated state before any
/// tensor is read and may refuse it by throwing.
LoadedCheckpoint loadCheckpoint(
    const std::string &checkpointDir, const std::vector<TensorSpec> &expected,
    const std::function<void(const CheckpointState &)> &checkState = {});

/// Consulted before every write to a checkpoint file with the file's path;
/// a non-zero return is taken as that errno (e.g. ENOSPC), so tests can
/// simulate a full disk. An empty function (the default) never fails.
using CheckpointWriteFault = std::function<int(const std::string &path)>;
void setCheckpointWriteFaultForTesting(CheckpointWriteFault fault);

} // namespace lap

#endif // LAP_RUNTIME_TRAIN_CHECKPOINT_H
