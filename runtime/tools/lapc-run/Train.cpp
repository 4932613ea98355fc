//===- Train.cpp - lapc-run train ---------------------------------*- C++ -*-===//
//
// Trains a compiled model with the settings of its spec's train section (the
// manifest carries the resolved spec), each overridable by a flag. Prints a
// progress line, evaluations and a summary; writes metrics.jsonl and
// checkpoints under the run directory.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Plot.h"
#include "runtime/comm/Communicator.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/platform/Files.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/tools/lapc-run/Units.h"
#include "runtime/train/Progress.h"
#include "runtime/train/RunLock.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

using namespace lap;

namespace {

/// The loss curve of a run from its metrics.jsonl: training loss, and
/// validation loss where evaluated.
void plotLossCurve(const std::string &runDir, const std::string &name) {
  std::string metrics = runDir + "/metrics.jsonl";
  train::Recorded loss = train::readRecords(metrics, "loss"),
                  valLoss = train::readRecords(metrics, "val_loss");
  analysis::Series train{"train loss", loss.steps, loss.values},
      val{"validation loss", valLoss.steps, valLoss.values};
  std::vector<analysis::Series> series{train};
  if (!val.x.empty())
    series.push_back(val);
  analysis::PlotOptions options;
  options.title = name + ": loss";
  options.xLabel = "step";
  options.yLabel = "loss (nats)";
  analysis::writeLinePlot(runDir + "/loss.png", series, options);
}

/// Steps from a count of epochs (rounded, at least one when epochs > 0).
int64_t epochsToSteps(double epochs, int64_t stepsPerEpoch) {
  return epochs > 0 ? std::max<int64_t>(
                          1, std::llround(epochs * double(stepsPerEpoch)))
                    : 0;
}

/// Runs `prepare` on rank 0 first, then on the first rank of each other
/// host, then on the rest: data a rank prepares under the run directory
/// (tokenizer, token shards) is written once per file system and found
/// ready by the ranks after it.
template <typename F> void inTurn(comm::Communicator &comm, F &&prepare) {
  bool lead = comm.rank() == 0, hostLead = comm.localRank() == 0;
  if (lead)
    prepare();
  comm.barrier();
  if (hostLead && !lead)
    prepare();
  comm.barrier();
  if (!hostLead)
    prepare();
}

} // namespace

int lap::cli::trainModel(const TrainOptions &options,
                         comm::Communicator &comm) {
  const bool lead = comm.rank() == 0;
  const int64_t ranks = comm.size();
  int threads = omp_get_max_threads();
  // Parameters and intermediates where the library computes.
  ModelInstance run(options.model, options.device,
                    {comm.localRank(), comm.localSize()});
  const LoadedModel &model = run.model;
  dsl::Spec spec = train::specOf(model);
  if (options.strict)
    spec.train.data.strict = true;
  const dsl::TrainSpec &t = spec.train;
  int64_t micro = train::microBatchSize(spec);

  train::TrainerConfig config;
  config.accumulation = std::max<int64_t>(1, t.batchSize / micro);
  config.seed = options.seed ? options.seed : uint64_t(t.seed);
  config.gradClip = t.gradClip;
  config.logEvery =
      std::max<int64_t>(1, options.logEvery ? options.logEvery : t.logEvery);
  config.keep = t.checkpoint.keep;
  config.runDir = options.runDir.empty() ? t.checkpoint.dir : options.runDir;
  config.microBatch = micro;
  config.stopAt = options.stopAt;
  config.resume = options.resumeIfAny ? train::ResumeMode::IfAny
                  : options.resume    ? train::ResumeMode::Resume
                                      : train::ResumeMode::Fresh;
  config.resumeFromOtherModel = options.resumeFromOtherModel;
  config.allowScheduleChange = options.allowScheduleChange;
  config.optimizer = train::optimizerConfig(spec);
  config.schedule = train::scheduleConfig(spec);
  config.comm = &comm;
  config.zero = (options.zero >= 0 ? options.zero : t.zero) == 1;
  config.commTimeout = options.commTimeout;
  train::requireEqualShares(options.model, config, ranks);
  std::error_code error;
  std::filesystem::create_directories(config.runDir, error);
  if (error)
    throw std::runtime_error(
        config.runDir +
        ": cannot create the run directory: " + error.message());
  // Rank 0 owns the run directory: its lock, its checkpoints, its logs.
  std::optional<train::RunLock> lock;
  std::string resumeFrom;
  if (lead) {
    lock.emplace(config.runDir);
    resumeFrom = train::resumePoint(
        config, [](const std::string &text) { fmt::print("{}\n", text); });
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> quiet(
      lead ? nullptr : std::fopen("/dev/null", "w"), std::fclose);
  std::FILE *log = lead ? stdout : quiet.get();

  float *params = run.params.data();
  if (model.initParams(params, config.seed) != LAP_OK)
    throw std::runtime_error(options.model + ": " + model.lastError());
  // Imported or earlier parameters, before a regime (DINO's teacher)
  // copies them.
  if (!options.initFrom.empty()) {
    // A run directory starts from its newest checkpoint.
    std::string dir = options.initFrom;
    if (!std::filesystem::exists(dir + "/model.safetensors") &&
        std::filesystem::is_directory(dir + "/checkpoints"))
      dir = train::checkpointOf(dir);
    std::string from = dir + "/model.safetensors";
    train::initParameters(model, from, params, run.device);
    fmt::print(log, "parameters from {}\n", from);
  }
  int64_t perRank = config.accumulation / ranks * micro;
  train::DataShard shard{uint64_t(comm.rank()), uint64_t(ranks),
                         uint64_t(perRank)};
  std::unique_ptr<train::Regime> regime;
  inTurn(comm, [&] {
    regime =
        train::makeRegime({spec, run.calls, run.device, params, config.runDir,
                           micro, config.seed, log, shard, &comm});
  });
  int64_t stepsPerEpoch = regime->stepsPerEpoch(config.accumulation);
  // Cadences in epochs become steps once an epoch's length is known.
  auto steps = [&](int64_t given, double epochs) {
    return given ? given : epochsToSteps(epochs, stepsPerEpoch);
  };
  config.steps = options.steps ? options.steps : steps(t.steps, t.epochs);
  config.evalEvery = !regime->evaluates() ? 0
                     : options.evalEvery
                         ? options.evalEvery
                         : steps(t.eval.everySteps, t.eval.everyEpochs);
  config.checkpointEvery =
      options.checkpointEvery
          ? options.checkpointEvery
          : steps(t.checkpoint.everySteps, t.checkpoint.everyEpochs);
  if (!config.schedule.warmupSteps)
    config.schedule.warmupSteps =
        epochsToSteps(t.schedule.warmupEpochs, stepsPerEpoch);
  if (config.steps < 1)
    throw std::runtime_error(spec.name +
                             ": the spec gives neither steps nor epochs "
                             "(or pass --steps)");
  regime->setSteps(config.steps, stepsPerEpoch);
  nlohmann::json initial;
  if (regime->evaluatesInitialModel() && regime->evaluates() &&
      resumeFrom.empty() && lead) {
    initial = regime->evaluate();
    fmt::print(log, "eval at initialisation:");
    for (auto &[k, v] : initial.items())
      fmt::print(log, "  {} {:.4f}", k, v.get<double>());
    fmt::print(log, "\n");
  }

  fmt::print(log,
             "training {} for {} steps: {} x {} micro-batches per step, "
             "run directory {}\n",
             spec.name, config.steps, regime->microBatchText(micro),
             config.accumulation, config.runDir);
  if (ranks > 1 || config.zero)
    fmt::print(log,
               "data parallel: {} ranks over {}, {} thread{} and {} "
               "micro-batch{} per step each{}\n",
               ranks,
               comm.name() + (run.device.onHost() ? "" : ", GPUs over NCCL"),
               threads, threads == 1 ? "" : "s", config.accumulation / ranks,
               config.accumulation / ranks == 1 ? "" : "es",
               config.zero ? "; ZeRO-1: optimizer state sharded" : "");
  train::TrainResult result =
      train::train(run.calls, params, config, *regime, resumeFrom);
  if (!lead)
    return result.stopSignal ? 128 + result.stopSignal : 0;
  if (result.alreadyFinished) {
    fmt::print("{}: the run finished at step {} of {}; nothing to train "
               "({}/summary.json kept)\n",
               resumeFrom, result.steps, config.steps, config.runDir);
    return 0;
  }
  nlohmann::json final = nlohmann::json::object();
  if (!result.lastEval.empty())
    final = result.lastEval;
  else if (regime->evaluates())
    final = regime->evaluate();

  nlohmann::json summary{
      {"model", spec.name},
      {"steps", result.steps},
      {"finished", result.steps == config.steps},
      {"train_loss", result.lastLoss},
      {"seconds", result.seconds},
      {std::string(regime->units()) + "_per_s", result.unitsPerSecond},
      {"ranks", ranks},
      {"zero", config.zero ? 1 : 0},
      {"optimizer_state_bytes_per_rank", result.optimizerStateBytes}};
  nlohmann::json extra = regime->summary();
  summary.update(extra);
  summary.update(final);
  for (auto &[k, v] : initial.items())
    summary["init_" + k] = v;
  platform::writeFileAtomically(config.runDir + "/summary.json",
                                summary.dump(2) + "\n");
  plotLossCurve(config.runDir, spec.name);
  fmt::print("summary: {} steps in {:.1f} s ({:.0f} {}/s), train loss {:.4f}",
             result.steps, result.seconds, result.unitsPerSecond,
             regime->units(), result.lastLoss);
  for (auto &[k, v] : final.items())
    fmt::print(", {} {:.4f}", k, v.get<double>());
  if (extra.contains("unigram_entropy"))
    fmt::print(" (unigram entropy {:.4f})",
               extra["unigram_entropy"].get<double>());
  fmt::print("\n");
  if (ranks > 1 || config.zero)
    fmt::print("memory per rank: parameters {}, gradients {}, optimizer "
               "state {} (the largest shard), workspace {}\n",
               cli::mebibytes(double(model.parameterElements()) * 4),
               cli::mebibytes(double(model.parameterElements()) * 8),
               cli::mebibytes(double(result.optimizerStateBytes)),
               cli::mebibytes(double(model.workspaceBytes())));
  fmt::print("wrote {0}/summary.json, {0}/metrics.jsonl, {0}/loss.png\n",
             config.runDir);
  // The shell's convention for a process a signal ended: 128 + the signal.
  return result.stopSignal ? 128 + result.stopSignal : 0;
}
