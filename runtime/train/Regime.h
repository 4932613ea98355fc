//===- Regime.h - What a kind of training supplies the trainer --*- C++ -*-===//
//
// The trainer (Trainer.h) is the same loop for every kind of training; a
// regime supplies what differs: its data (micro-batches and a position to
// checkpoint and seek), its evaluation, and, where it trains more than the
// model's own step (DINO: a teacher and several views of each image), that
// step, the parameters it freezes, what it does after each update and the
// state it checkpoints. makeRegime builds the spec's regime (LmRegime,
// ImageRegime, DinoRegime), so that a tool never needs to know which runs.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_REGIME_H
#define LAP_RUNTIME_TRAIN_REGIME_H

#include "lap/model.h"
#include "runtime/data/Safetensors.h"
#include "runtime/train/DataShard.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace lap {
class ModelCalls;
struct LoadedCheckpoint;
} // namespace lap
namespace lap::comm {
class Communicator;
} // namespace lap::comm
namespace lap::device {
class Device;
} // namespace lap::device
namespace lap::dsl {
struct Spec;
} // namespace lap::dsl

namespace lap::train {

class Regime {
public:
  virtual ~Regime() = default;

  /// What a micro-batch's units are, for the progress line ("tok", "img")
  /// and the summary ("tokens", "images": tokens_per_s, images_per_s).
  virtual const char *unit() const = 0;
  virtual const char *units() const = 0;
  /// A micro-batch of `micro`, as the run's first line describes it
  /// ("8 x 256 tokens", "64 images").
  virtual std::string microBatchText(int64_t micro) const = 0;
  /// Optimizer steps in one pass over the training data.
  virtual int64_t stepsPerEpoch(int64_t accumulation) const = 0;
  /// The run's length, once known, for schedules that span it.
  virtual void setSteps(int64_t steps, int64_t stepsPerEpoch) {}
  /// Whether each tensor's gradient is clipped alone (DINO's
  /// clip_gradients) rather than their global norm.
  virtual bool clipsEachTensor() const { return false; }

  /// Fills the next training micro-batch; returns its units.
  virtual int64_t next(lap_batch &batch);
  /// The data position for checkpoints, and seeking back to one.
  virtual uint64_t position() const = 0;
  virtual void seek(uint64_t position) = 0;

  /// Whether there is data to evaluate on.
  virtual bool evaluates() const = 0;
  /// Evaluation values ({"val_loss": ..., "val_bpb": ...}).
  virtual nlohmann::json evaluate();
  /// Whether the initial model is evaluated before training: the mark
  /// training must beat.
  virtual bool evaluatesInitialModel() const { return false; }
  /// What the run's summary adds beside the evaluation.
  virtual nlohmann::json summary() const { return nlohmann::json::object(); }

  /// Whether trainStep replaces next and the model's train step.
  virtual bool ownsStep() const { return false; }
  /// The gradients of one micro-batch into `grads` (overwritten) and its
  /// loss; returns its units.
  virtual int64_t trainStep(const float *params, float *grads, uint64_t seed,
                            float &loss);
  /// Whether the optimizer leaves parameter `name` alone at `step`.
  virtual bool frozen(const std::string &name, int64_t step) const {
    return false;
  }
  /// After the update of `step` (0-based), with the new parameters.
  virtual void afterUpdate(const float *params, int64_t step) {}
  /// The regime's values of the last step, for metrics.jsonl.
  virtual nlohmann::json stepMetrics() const {
    return nlohmann::json::object();
  }
  /// State checkpointed beside the optimizer's (optimizer.safetensors),
  /// and its restoring from a loaded checkpoint.
  virtual std::vector<TensorRef> state() { return {}; }
  virtual void restore(const LoadedCheckpoint &checkpoint) {}
};

/// What a regime trains with.
struct RegimeContext {
  const dsl::Spec &spec;
  ModelCalls &calls;      ///< the model, and its workspace
  device::Device &device; ///< where `params` live
  const float *params;
  std::string runDir; ///< prepared data (an LM's tokenizer and shards)
  int64_t microBatch = 1;
  uint64_t seed = 0;
  std::FILE *log = stdout;
  DataShard shard;                     ///< this rank's share of the data
  comm::Communicator *ranks = nullptr; ///< null: this process alone
};

/// The regime `context.spec` trains in. Throws when the model cannot run
/// its micro-batches (compiled for a smaller batch or sequence).
std::unique_ptr<Regime> makeRegime(const RegimeContext &context);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_REGIME_H
