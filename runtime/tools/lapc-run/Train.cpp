//===- Train.cpp - lapc-run train ---------------------------------*- C++ -*-===//
//
// Trains a compiled model with the settings of its spec's train section (the
// manifest carries the resolved spec), each overridable by a flag. Prints a
// progress line, evaluations and a summary; writes metrics.jsonl and
// checkpoints under the run directory.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Plot.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace lap;

namespace {

/// The loss curve of a run from its metrics.jsonl: training loss, and
/// validation loss where evaluated.
void plotLossCurve(const std::string &runDir, const std::string &name) {
  analysis::Series train{"train loss", {}, {}}, val{"validation loss", {}, {}};
  std::ifstream in(runDir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_discarded() || !entry.contains("step"))
      continue;
    double step = entry["step"];
    if (entry.contains("loss")) {
      train.x.push_back(step);
      train.y.push_back(entry["loss"]);
    }
    if (entry.contains("val_loss")) {
      val.x.push_back(step);
      val.y.push_back(entry["val_loss"]);
    }
  }
  std::vector<analysis::Series> series{train};
  if (!val.x.empty())
    series.push_back(val);
  analysis::PlotOptions options;
  options.title = name + ": loss";
  options.xLabel = "step";
  options.yLabel = "loss (nats per token)";
  analysis::writeLinePlot(runDir + "/loss.png", series, options);
}

} // namespace

int lap::cli::trainModel(const TrainOptions &options) {
  LoadedModel model(options.model);
  dsl::Spec spec = train::specOf(model);
  const dsl::TrainSpec &t = spec.train;
  if (t.regime != dsl::Regime::LM)
    throw std::runtime_error(options.model + ": lapc-run train runs the lm regime; '" +
                             spec.name + "' trains another");

  int64_t micro = train::microBatchSize(spec), seq = train::sequenceLength(spec);
  if (micro > model.maxBatch() || seq > model.maxSeq())
    throw std::runtime_error(fmt::format(
        "{}: compiled for batch <= {} and sequence <= {}; the spec trains {} x {} "
        "(recompile with lapc --max-batch/--max-seq)",
        options.model, model.maxBatch(), model.maxSeq(), micro, seq));

  train::TrainerConfig config;
  config.steps = options.steps ? options.steps : t.steps;
  config.accumulation = std::max<int64_t>(1, t.batchSize / micro);
  config.seed = options.seed ? options.seed : uint64_t(t.seed);
  config.gradClip = t.gradClip;
  config.logEvery = std::max<int64_t>(1, options.logEvery ? options.logEvery : t.logEvery);
  config.evalEvery = options.evalEvery ? options.evalEvery : t.eval.everySteps;
  config.checkpointEvery =
      options.checkpointEvery ? options.checkpointEvery : t.checkpoint.everySteps;
  config.keep = t.checkpoint.keep;
  config.runDir = options.runDir.empty() ? t.checkpoint.dir : options.runDir;
  config.resume = options.resume;
  config.optimizer = train::optimizerConfig(spec);
  config.schedule = train::scheduleConfig(spec);
  std::error_code error;
  std::filesystem::create_directories(config.runDir, error);
  if (error)
    throw std::runtime_error(config.runDir + ": cannot create the run directory: " +
                             error.message());

  AlignedBuffer params(size_t(model.parameterElements()) * 4);
  if (model.initParams(params.as<float>(), config.seed) != LAP_OK)
    throw std::runtime_error(options.model + ": " + model.lastError());
  AlignedBuffer workspace(size_t(model.workspaceBytes()));
  train::LmRegime lm(spec, model, params.as<float>(), workspace, config.runDir, micro, seq,
                     stdout);
  train::Regime regime = lm.regime();

  fmt::print("training {} for {} steps: {} x {} tokens x {} micro-batches per step, "
             "run directory {}\n",
             spec.name, config.steps, micro, seq, config.accumulation, config.runDir);
  train::TrainResult result = train::train(model, params, workspace, config, regime);
  nlohmann::json final = result.lastEval.empty() ? lm.evaluate(t.eval.batches) : result.lastEval;

  nlohmann::json summary{{"model", spec.name},
                         {"steps", result.steps},
                         {"train_loss", result.lastLoss},
                         {"seconds", result.seconds},
                         {"tokens_per_s", result.unitsPerSecond},
                         {"unigram_entropy", lm.unigramEntropy()}};
  summary.update(final);
  std::ofstream(config.runDir + "/summary.json") << summary.dump(2) << "\n";
  plotLossCurve(config.runDir, spec.name);
  fmt::print("summary: {} steps in {:.1f} s ({:.0f} tokens/s), train loss {:.4f}",
             result.steps, result.seconds, result.unitsPerSecond, result.lastLoss);
  for (auto &[k, v] : final.items())
    fmt::print(", {} {:.4f}", k, v.get<double>());
  fmt::print(" (unigram entropy {:.4f})", summary["unigram_entropy"].get<double>());
  fmt::print("\nwrote {0}/summary.json, {0}/metrics.jsonl, {0}/loss.png\n", config.runDir);
  return result.interrupted ? 130 : 0;
}
