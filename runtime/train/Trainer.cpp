//===- Trainer.cpp - The training loop over a compiled model ----*- C++ -*-===//

#include "runtime/train/Trainer.h"

#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/train/Progress.h"
#include "runtime/train/SpecConfig.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>

using namespace lap;
using namespace lap::train;

namespace {

// What the signal handlers ask for; they only set these (async-signal-safe).
volatile std::sig_atomic_t stopSignal = 0;          // the signal that stops
volatile std::sig_atomic_t checkpointRequested = 0; // SIGUSR1
extern "C" void onStop(int signal) { stopSignal = signal; }
extern "C" void onCheckpoint(int) { checkpointRequested = 1; }

/// The signals a terminal or a scheduler sends to end a job (SIGINT,
/// SIGTERM, SIGHUP) stop the run at the next step boundary with a
/// checkpoint; SIGUSR1 writes one there and goes on. The previous handlers
/// come back when the run ends.
class SignalHandlers {
public:
  SignalHandlers() {
    stopSignal = 0;
    checkpointRequested = 0;
    for (int i = 0; i < kCount; ++i) {
      struct sigaction action = {};
      action.sa_handler = kSignals[i] == SIGUSR1 ? onCheckpoint : onStop;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      sigaction(kSignals[i], &action, &previous[i]);
    }
  }
  ~SignalHandlers() {
    for (int i = 0; i < kCount; ++i)
      sigaction(kSignals[i], &previous[i], nullptr);
  }

private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
  struct sigaction previous[kCount];
};

std::string modelHashOf(const LoadedModel &model) {
  return model.manifest().value("model_hash", "");
}

void save(const std::string &dir, int64_t step, const LoadedModel &model,
          const AlignedBuffer &params, Optimizer &optimizer,
          const TrainerConfig &config, uint64_t position, Progress &progress) {
  CheckpointData data;
  data.state.step = step;
  data.state.seed = config.seed;
  data.state.dataPosition = int64_t(position);
  data.state.specName = model.manifest()["name"];
  data.state.manifestHash = modelHashOf(model);
  data.state.schedule = scheduleOf(config);
  const float *p = static_cast<const float *>(params.data);
  for (const ParameterInfo &t : model.parameters())
    data.parameters.push_back(TensorRef(t.name, t.shape, p + t.offset));
  auto state = optimizer.state();
  for (auto &[name, values] : state)
    data.optimizer.push_back(
        TensorRef(name, {int64_t(values->size())}, values->data()));
  std::string path = saveCheckpoint(dir, data);
  pruneCheckpoints(dir, size_t(config.keep));
  progress.note("checkpoint " + path);
}

/// acc += g × scale (acc = 0 + g × scale for the first micro-batch), on the
/// shared pool: elementwise, so every thread count gives the same sums.
void accumulate(float *acc, const float *g, float scale, int64_t n,
                bool first) {
  cpu::parallelFor(n, int64_t(1) << 15, [&](int64_t begin, int64_t end) {
    if (first)
      for (int64_t i = begin; i < end; ++i)
        acc[i] = 0.0f + g[i] * scale;
    else
      for (int64_t i = begin; i < end; ++i)
        acc[i] += g[i] * scale;
  });
}

/// "steps 6 -> 12, lr 0.001 -> 0.002": the settings two schedules differ in.
std::string differences(const nlohmann::json &was, const nlohmann::json &is) {
  std::string text;
  for (auto &[key, value] : is.items()) {
    nlohmann::json before = was.contains(key) ? was[key] : nlohmann::json();
    if (before != value)
      text += (text.empty() ? "" : ", ") + key + " " + before.dump() + " -> " +
              value.dump();
  }
  return text;
}

} // namespace

nlohmann::json lap::train::scheduleOf(const TrainerConfig &c) {
  const char *decay = c.schedule.decay == DecayKind::Cosine   ? "cosine"
                      : c.schedule.decay == DecayKind::Linear ? "linear"
                                                              : "constant";
  return {{"steps", c.steps},
          {"micro_batch", c.microBatch},
          {"accumulation", c.accumulation},
          {"lr", c.optimizer.lr},
          {"warmup_steps", c.schedule.warmupSteps},
          {"warmup_lr", c.schedule.warmupLr},
          {"decay", decay},
          {"decay_fraction", c.schedule.decayFraction},
          {"min_lr", c.schedule.minLr},
          {"weight_decay", c.optimizer.weightDecay},
          {"weight_decay_end", c.optimizer.weightDecayEnd}};
}

std::string
lap::train::resumePoint(const TrainerConfig &config,
                        const std::function<void(const std::string &)> &note) {
  std::string checkpoints = config.runDir + "/checkpoints";
  std::optional<std::string> latest = latestCheckpoint(checkpoints);
  if (config.resume == ResumeMode::Fresh) {
    if (latest)
      throw std::runtime_error(
          config.runDir + " already holds a run (newest checkpoint " + *latest +
          "); --resume continues it, or give a new --run-dir");
    return "";
  }
  for (const std::string &skipped : incompleteCheckpoints(checkpoints))
    note("skipping the incomplete checkpoint " + skipped);
  if (!latest && config.resume == ResumeMode::Resume)
    throw std::runtime_error(checkpoints +
                             ": no checkpoint to resume from (--resume-if-any "
                             "starts fresh when there is none)");
  return latest.value_or("");
}

LoadedCheckpoint lap::train::restoreParameters(const LoadedModel &model,
                                               const std::string &dir,
                                               float *params, bool otherModel) {
  std::vector<TensorSpec> expected;
  for (const ParameterInfo &t : model.parameters())
    expected.push_back({t.name, t.shape});
  auto checkModel = [&](const CheckpointState &state) {
    std::string mine = modelHashOf(model);
    if (otherModel || state.manifestHash == mine)
      return;
    throw std::runtime_error(
        dir + "/state.json: the checkpoint is of another model ('" +
        state.specName + "', model_hash " + state.manifestHash + "); " +
        model.path() + " is '" + model.manifest()["name"].get<std::string>() +
        "' (model_hash " + mine +
        "): their architectures or head kinds differ. lapc-run train "
        "--resume-from-other-model starts from it anyway (fine-tuning)");
  };
  LoadedCheckpoint checkpoint = loadCheckpoint(dir, expected, checkModel);
  for (const ParameterInfo &t : model.parameters())
    std::memcpy(params + t.offset,
                checkpoint.model.tensors.at(t.name).f32.data(),
                size_t(t.elements) * 4);
  return checkpoint;
}

std::string lap::train::checkpointOf(const std::string &runDir,
                                     const std::string &given) {
  if (!given.empty())
    return given;
  auto latest = latestCheckpoint(runDir + "/checkpoints");
  if (!latest)
    throw std::runtime_error(runDir +
                             "/checkpoints: no checkpoint (train in this run "
                             "directory first, or give --checkpoint)");
  return *latest;
}

TrainResult lap::train::train(const LoadedModel &model, AlignedBuffer &params,
                              AlignedBuffer &workspace,
                              const TrainerConfig &config, Regime &regime,
                              const std::string &resumeFrom) {
  std::vector<TensorInfo> tensors = tensorsOf(model);
  Optimizer optimizer(tensors, config.optimizer);
  std::string checkpoints = config.runDir + "/checkpoints";
  float *p = params.as<float>();

  int64_t start = 0;
  if (!resumeFrom.empty()) {
    LoadedCheckpoint ckpt =
        restoreParameters(model, resumeFrom, p, config.resumeFromOtherModel);
    std::string state = resumeFrom + "/state.json";
    start = ckpt.state.step;
    if (std::string changed =
            differences(ckpt.state.schedule, scheduleOf(config));
        !changed.empty() && !config.allowScheduleChange)
      throw std::runtime_error(
          state + ": the run was trained with another schedule (" + changed +
          "); --allow-schedule-change resumes under the new one");
    if (start > config.steps)
      throw std::runtime_error(fmt::format(
          "{}: the checkpoint is of step {}, beyond the run's {} steps", state,
          start, config.steps));
    int64_t position = start * config.accumulation * config.microBatch;
    if (!config.allowScheduleChange && ckpt.state.dataPosition != position)
      throw std::runtime_error(fmt::format(
          "{}: data_position is {}, but {} steps of {} x {} take {}", state,
          ckpt.state.dataPosition, start, config.accumulation,
          config.microBatch, position));
    for (auto &[name, values] : optimizer.state()) {
      auto it = ckpt.optimizer.tensors.find(name);
      if (it == ckpt.optimizer.tensors.end() ||
          it->second.f32.size() != values->size())
        throw std::runtime_error(
            resumeFrom + "/optimizer.safetensors: no state '" + name + "' of " +
            std::to_string(values->size()) + " values");
      *values = it->second.f32;
    }
    optimizer.setStepCount(start);
    regime.seek(uint64_t(ckpt.state.dataPosition));
  }
  TrainResult result;
  if (start == config.steps) {
    result.steps = start;
    result.alreadyFinished = true;
    return result;
  }

  AlignedBuffer grads(size_t(model.parameterElements()) * 4);
  AlignedBuffer accumulated(size_t(model.parameterElements()) * 4);
  Progress progress(config.steps, start, config.runDir + "/metrics.jsonl",
                    config.unit);

  SignalHandlers handlers;
  auto began = std::chrono::steady_clock::now();
  int64_t end =
      config.stopAt > 0 ? std::min(config.stopAt, config.steps) : config.steps;
  int64_t step = start;
  for (; step < end; ++step) {
    float *acc = accumulated.as<float>();
    double loss = 0;
    int64_t units = 0;
    for (int64_t micro = 0; micro < config.accumulation; ++micro) {
      lap_batch batch{};
      units += regime.next(batch);
      float microLoss = 0;
      uint64_t dropoutSeed =
          config.seed * 1000003 + uint64_t(step * config.accumulation + micro);
      if (model.trainStep(p, grads.as<float>(), &batch, dropoutSeed,
                          workspace.data, &microLoss) != LAP_OK)
        throw std::runtime_error(model.path() + ": " + model.lastError());
      accumulate(acc, grads.as<float>(), 1.0f / float(config.accumulation),
                 model.parameterElements(), micro == 0);
      loss += microLoss / double(config.accumulation);
    }
    std::optional<std::string> bad = firstNonFinite(acc, tensors);
    if (!std::isfinite(loss) || bad) {
      std::string what = std::isfinite(loss) ? ""
                         : std::isnan(loss)  ? "the loss is NaN"
                                             : "the loss is infinite";
      if (bad)
        what += (what.empty() ? "" : "; ") +
                std::string("the first non-finite gradient is '") + *bad + "'";
      throw std::runtime_error(
          fmt::format("step {}: {} (training stopped)", step + 1, what));
    }
    double norm =
        clipGradients(acc, tensors, config.gradClip); // 0: measure only
    double multiplier =
        learningRateMultiplier(step, config.steps, config.schedule);
    optimizer.step(p, acc, multiplier,
                   weightDecayMultiplier(step, config.steps,
                                         config.optimizer.weightDecay,
                                         config.optimizer.weightDecayEnd));
    result.lastLoss = loss;
    progress.advance(units);
    if ((step + 1) % config.logEvery == 0 || step + 1 == config.steps ||
        step == start)
      progress.step(step + 1, loss, config.optimizer.lr * multiplier, norm);
    bool last = step + 1 == config.steps;
    if (config.evalEvery > 0 && ((step + 1) % config.evalEvery == 0 || last)) {
      result.lastEval = regime.evaluate();
      progress.eval(step + 1, result.lastEval);
    }
    bool checkpoint =
        config.checkpointEvery > 0 && (step + 1) % config.checkpointEvery == 0;
    int stop = stopSignal;
    bool asked = checkpointRequested;
    bool stopsHere = step + 1 == end && !last;
    if (checkpoint || last || stop || asked || stopsHere)
      save(checkpoints, step + 1, model, params, optimizer, config,
           regime.position(), progress);
    if (stopsHere && !stop)
      progress.note(fmt::format("stopped after step {} of {} (--stop-at); "
                                "--resume continues the run",
                                step + 1, config.steps));
    if (asked && !stop) {
      checkpointRequested = 0;
      progress.note(fmt::format(
          "checkpoint at step {} on request (SIGUSR1), continuing", step + 1));
    }
    if (stop) {
      progress.note(fmt::format(
          "interrupted at step {}: checkpoint written, exiting ({})", step + 1,
          sigabbrev_np(stop) ? fmt::format("SIG{}", sigabbrev_np(stop))
                             : std::to_string(stop)));
      result.stopSignal = stop;
      ++step;
      break;
    }
  }
  result.steps = step;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count();
  result.unitsPerSecond = progress.unitsPerSecond();
  return result;
}
