//===- Trainer.h - The training loop over a compiled model ------*- C++ -*-===//
//
// Regime-independent: gradient accumulation over micro-batches (on every
// rank of a data-parallel run, see DataParallel.h), global-norm
// clipping, a stop naming the first non-finite tensor, the optimizer with its
// schedule, evaluation and checkpoints at a cadence, exact resume, and a
// checkpoint when a signal ends the run (SIGINT, SIGTERM, SIGHUP, SIGUSR2)
// or asks for one (SIGUSR1). The regime supplies batches and evaluation.
// Rank 0 alone logs, evaluates and writes checkpoints.
//
// A resume proves it continues the same run: the checkpoint's model_hash is
// the model's (unless resuming from another model on purpose), its schedule
// (steps, batch, learning rates) is the run's (unless changed on purpose),
// its data position is its step's; metrics.jsonl is cut back to the
// checkpoint's step so every step appears once.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_TRAINER_H
#define LAP_RUNTIME_TRAIN_TRAINER_H

#include "runtime/comm/Communicator.h"
#include "runtime/device/Device.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Optimizer.h"
#include "runtime/train/Regime.h"
#include "runtime/train/Schedule.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace lap::train {

/// How a run treats the checkpoints already in its run directory.
enum class ResumeMode {
  Fresh,  ///< none may exist: a new run never overwrites one
  Resume, ///< continue from the newest; there must be one
  IfAny,  ///< continue from the newest if there is one, else start fresh
};

struct TrainerConfig {
  int64_t steps = 0;
  int64_t stopAt = 0;       ///< end the run early after this step; 0: steps
  int64_t microBatch = 0;   ///< sequences or images per micro-batch
  int64_t accumulation = 1; ///< micro-batches per optimizer step
  uint64_t seed = 0;
  double gradClip = 0; ///< max global norm; 0 = off
  int64_t logEvery = 10, evalEvery = 0, checkpointEvery = 0, keep = 3;
  std::string runDir; ///< checkpoints/, metrics.jsonl
  ResumeMode resume = ResumeMode::Fresh;
  bool resumeFromOtherModel = false; ///< fine-tuning: skip the model_hash check
  bool allowScheduleChange = false;  ///< resume under another schedule
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  /// The ranks sharing each step (null: this process alone); `accumulation`
  /// counts the micro-batches of all of them.
  comm::Communicator *comm = nullptr;
  bool zero = false;        ///< ZeRO-1: the optimizer state sharded
  double commTimeout = 300; ///< seconds a collective waits for the others
};

/// The result of a run, for the summary.
struct TrainResult {
  int64_t steps = 0;
  double lastLoss = 0, seconds = 0, unitsPerSecond = 0;
  nlohmann::json lastEval;
  /// The signal (SIGINT, SIGTERM, SIGHUP) that stopped the run, or 0.
  int stopSignal = 0;
  /// The newest checkpoint is of the last step: nothing was trained.
  bool alreadyFinished = false;
  /// The optimizer state of the rank holding the most (bytes).
  int64_t optimizerStateBytes = 0;
};

/// The checkpoint directory a run of `config` resumes from, or "" when it
/// starts fresh; `note` hears of skipped incomplete checkpoints. Throws when
/// the mode and the run directory disagree (a fresh run over checkpoints,
/// a resume without any), so that nothing is overwritten.
std::string resumePoint(const TrainerConfig &config,
                        const std::function<void(const std::string &)> &note);

/// What fixes a run's trajectory, as recorded in its checkpoints.
nlohmann::json scheduleOf(const TrainerConfig &config);

/// Loads the checkpoint directory `dir`, refusing one of another model
/// (another model_hash, unless `otherModel`; other tensors always), and
/// copies its parameters into `params` (`device`'s memory); returns it
/// (state, optimizer).
LoadedCheckpoint restoreParameters(const LoadedModel &model,
                                   const std::string &dir, float *params,
                                   bool otherModel = false,
                                   device::Device &device = device::host());

/// Copies the parameters in the safetensors file `path` (with lap's
/// checksums: what `lapc-run import` writes) into `params` (`device`'s
/// memory, initialised): each of its tensors must be a parameter of
/// `model`, of the same shape; a parameter it lacks keeps its initial
/// value if it is a learned head's coefficients (heads switched to a
/// learned kind start from that kind's values) or a train.lora adapter (the
/// base model's file has none), and is an error otherwise.
void initParameters(const LoadedModel &model, const std::string &path,
                    float *params, device::Device &device = device::host());

/// `given` when not empty, else the newest checkpoint of `runDir`; throws
/// naming RUNDIR/checkpoints when there is none.
std::string checkpointOf(const std::string &runDir,
                         const std::string &given = "");

/// Throws unless `ranks` share the `config.accumulation` micro-batches of
/// a step equally, naming `library` and what to change.
void requireEqualShares(const std::string &library, const TrainerConfig &config,
                        int64_t ranks);

/// Trains the model `calls` makes (parameters in `params`, initialised, or
/// restored from `resumeFrom` when not empty), its gradients, their sums and
/// the optimizer state on the calls' device, where `params` lives too: the
/// host for a CPU library, its GPU for a CUDA one, whose communicator
/// (NCCL's) moves them when several ranks or ZeRO-1 share the run;
/// `regime` supplies the data, the evaluation and whatever else its kind of
/// training needs.
TrainResult train(ModelCalls &calls, float *params, const TrainerConfig &config,
                  Regime &regime, const std::string &resumeFrom);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_TRAINER_H
