//===- Checkpoint.h - safetensors files and training checkpoints -*- C++
//-*-===//
//
// Checkpoints in the format the rest of the ecosystem reads: every tensor
// file is a Hugging Face safetensors file (an 8-byte little-endian header
// length, a JSON header, the raw little-endian data), so a checkpoint opens
// in Python with `safetensors` or `torch` without lap.
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
// Every tensor's XXH3 checksum rides in its file's `__metadata__`
// ("lap.xxh3") and is verified on load, so a flipped byte is an error, not a
// silently different model. Every failure is a std::runtime_error naming the
// file or directory.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_CHECKPOINT_H
#define LAP_RUNTIME_TRAIN_CHECKPOINT_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lap {

/// The element types a checkpoint stores: F32 for parameters and optimizer
/// moments, I64 and U8 for counters and opaque RNG state.
enum class DType { F32, I64, U8 };

/// The safetensors name of a dtype ("F32", "I64", "U8").
const char *dtypeName(DType dtype);
/// The size of one element in bytes.
size_t dtypeSize(DType dtype);

/// A tensor to write: borrowed data, laid out row-major as `shape` says.
struct TensorRef {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  const void *data = nullptr;

  TensorRef() = default;
  TensorRef(std::string name, std::vector<int64_t> shape, const float *data)
      : name(std::move(name)), shape(std::move(shape)), dtype(DType::F32),
        data(data) {}
  TensorRef(std::string name, std::vector<int64_t> shape, const int64_t *data)
      : name(std::move(name)), shape(std::move(shape)), dtype(DType::I64),
        data(data) {}
  TensorRef(std::string name, std::vector<int64_t> shape, const uint8_t *data)
      : name(std::move(name)), shape(std::move(shape)), dtype(DType::U8),
        data(data) {}
};

/// A tensor read back. Exactly one of f32/i64/u8 holds the data, the one
/// `dtype` names.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;
  std::vector<uint8_t> u8;

  int64_t elements() const;
};

/// The `__metadata__` key of the tensors' checksums: a JSON object, as a
/// string, of tensor name to its data's XXH3-64 in hex.
inline constexpr const char *kChecksumsKey = "lap.xxh3";

/// The contents of a safetensors file.
struct SafetensorsFile {
  std::vector<std::string> order; ///< Tensor names in file order.
  std::map<std::string, Tensor> tensors;
  /// The header's `__metadata__`, without kChecksumsKey.
  std::map<std::string, std::string> metadata;
  /// Whether the file carried checksums (all of which matched: a mismatch
  /// is an error).
  bool checksummed = false;
};

/// Writes `tensors`, in the order given, `metadata` and the tensors'
/// checksums (the header's "__metadata__") to `path`, and fsyncs the file.
void writeSafetensors(const std::string &path,
                      const std::vector<TensorRef> &tensors,
                      const std::map<std::string, std::string> &metadata = {});

/// Reads and validates a safetensors file: its size, the header length, the
/// JSON, every dtype, shape and offset range (in bounds, contiguous, no
/// overlaps, matching the shape, covering the data section exactly), and
/// every tensor against its checksum when the file has them.
SafetensorsFile readSafetensors(const std::string &path);

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
};

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
