//===- Trainer.h - The training loop over a compiled model ------*- C++ -*-===//
//
// Regime-independent: gradient accumulation over micro-batches, global-norm
// clipping, a stop naming the first non-finite tensor, the optimizer with its
// schedule, evaluation and checkpoints at a cadence, exact resume, and a
// checkpoint when a signal ends the run (SIGINT, SIGTERM, SIGHUP) or asks
// for one (SIGUSR1). The regime supplies batches and evaluation.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_TRAINER_H
#define LAP_RUNTIME_TRAIN_TRAINER_H

#include "runtime/model/LoadedModel.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Optimizer.h"
#include "runtime/train/Schedule.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace lap::train {

struct TrainerConfig {
  int64_t steps = 0;
  int64_t accumulation = 1; ///< micro-batches per optimizer step
  uint64_t seed = 0;
  double gradClip = 0; ///< max global norm; 0 = off
  int64_t logEvery = 10, evalEvery = 0, checkpointEvery = 0, keep = 3;
  std::string runDir; ///< checkpoints/, metrics.jsonl
  std::string unit =
      "tok"; ///< what the regime's batches count, for the progress line
  bool resume = false;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
};

/// What a regime provides.
struct Regime {
  /// Fills the next training micro-batch; returns its tokens (or samples).
  std::function<int64_t(lap_batch &)> next;
  /// Data position for checkpoints, and seeking back to one.
  std::function<uint64_t()> position;
  std::function<void(uint64_t)> seek;
  /// Evaluation values ({"val_loss": ..., "val_bpb": ...}); empty when the
  /// regime has nothing to evaluate on.
  std::function<nlohmann::json()> evaluate;
};

/// The result of a run, for the summary.
struct TrainResult {
  int64_t steps = 0;
  double lastLoss = 0, seconds = 0, unitsPerSecond = 0;
  nlohmann::json lastEval;
  /// The signal (SIGINT, SIGTERM, SIGHUP) that stopped the run, or 0.
  int stopSignal = 0;
};

/// Loads the checkpoint directory `dir`, refusing one of another model, and
/// copies its parameters into `params`; returns it (state, optimizer).
LoadedCheckpoint restoreParameters(const LoadedModel &model,
                                   const std::string &dir, float *params);

/// `given` when not empty, else the newest checkpoint of `runDir`; throws
/// naming RUNDIR/checkpoints when there is none.
std::string checkpointOf(const std::string &runDir,
                         const std::string &given = "");

/// Trains `model` (parameters in `params`, initialised or to be restored
/// from `config.runDir`'s latest checkpoint when resuming; intermediates in
/// `workspace`, of the manifest's workspace size).
TrainResult train(const LoadedModel &model, AlignedBuffer &params,
                  AlignedBuffer &workspace, const TrainerConfig &config,
                  Regime &regime);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_TRAINER_H
