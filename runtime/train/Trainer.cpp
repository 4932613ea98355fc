//===- Trainer.cpp - The training loop over a compiled model ----*- C++ -*-===//

#include "runtime/train/Trainer.h"

#include "dsl/ParameterTable.h"
#include "runtime/data/Safetensors.h"
#include "runtime/platform/Hash.h"
#include "runtime/train/DataParallel.h"
#include "runtime/train/Progress.h"
#include "runtime/train/RankAgreement.h"
#include "runtime/train/RunSignals.h"
#include "runtime/train/SpecConfig.h"

#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

using namespace lap;
using namespace lap::train;

namespace {

std::string modelHashOf(const LoadedModel &model) {
  return model.manifest().value("model_hash", "");
}

/// What every rank of a run must have been given alike.
std::vector<SharedSetting> sharedSettings(const LoadedModel &model,
                                          const TrainerConfig &c,
                                          const device::Device &device) {
  namespace fs = std::filesystem;
  auto text = [](auto v) { return fmt::format("{}", v); };
  const char *resume = c.resume == ResumeMode::Resume  ? "--resume"
                       : c.resume == ResumeMode::IfAny ? "--resume-if-any"
                                                       : "a fresh start";
  return {{"model_hash", modelHashOf(model)},
          {"the manifest", platform::contentHash(model.manifest().dump())},
          {"the schedule", scheduleOf(c).dump()},
          {"the seed", text(c.seed)},
          {"the run directory",
           fs::absolute(fs::path(c.runDir)).lexically_normal().string()},
          {"resuming", resume},
          {"--resume-from-other-model", text(c.resumeFromOtherModel)},
          {"--allow-schedule-change", text(c.allowScheduleChange)},
          {"--stop-at", text(c.stopAt)},
          {"--log-every", text(c.logEvery)},
          {"--eval-every", text(c.evalEvery)},
          {"--checkpoint-every", text(c.checkpointEvery)},
          {"checkpoint.keep", text(c.keep)},
          {"train.grad_clip", text(c.gradClip)},
          {"ZeRO-1", text(c.zero)},
          {"--comm-timeout", text(c.commTimeout)},
          {"the device", device.onHost() ? "cpu" : "cuda"}};
}

/// `n` floats of `device` memory at `data` where the host reads them: there
/// on the host, else a copy kept in `copies`.
const float *hostView(device::Device &device, const float *data, int64_t n,
                      std::deque<std::vector<float>> &copies) {
  if (device.onHost())
    return data;
  copies.emplace_back(size_t(n));
  device.download(copies.back().data(), data, n);
  return copies.back().data();
}

/// Rank 0 writes the checkpoint: its parameters, its optimizer state and
/// `others`, the state of the other ranks' shards (ZeRO-1).
void save(const std::string &dir, int64_t step, const LoadedModel &model,
          const float *params, Optimizer &optimizer,
          const std::vector<std::pair<std::string, std::vector<float>>> &others,
          const TrainerConfig &config, Regime &regime, Progress &progress) {
  CheckpointData data;
  data.state.step = step;
  data.state.seed = config.seed;
  data.state.dataPosition = int64_t(regime.position());
  data.state.specName = model.manifest()["name"];
  data.state.manifestHash = modelHashOf(model);
  data.state.schedule = scheduleOf(config);
  std::deque<std::vector<float>> copies;
  device::Device &device = optimizer.device();
  const float *p = hostView(device, params, model.parameterElements(), copies);
  for (const ParameterInfo &t : model.parameters())
    data.parameters.push_back(TensorRef(t.name, t.shape, p + t.offset));
  for (const StateTensor &t : optimizer.state())
    data.optimizer.push_back(
        TensorRef(t.name, {t.size}, hostView(device, t.data, t.size, copies)));
  for (auto &[name, values] : others)
    data.optimizer.push_back(
        TensorRef(name, {int64_t(values.size())}, values.data()));
  for (TensorRef &t : regime.state())
    data.optimizer.push_back(std::move(t));
  std::string path = saveCheckpoint(dir, data);
  pruneCheckpoints(dir, size_t(config.keep));
  progress.note("checkpoint " + path);
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
                                               float *params, bool otherModel,
                                               device::Device &device) {
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
        "): their architectures or head kinds differ. A run's checkpoints "
        "go with the model.so that trained it; lapc-run train "
        "--resume-from-other-model starts from it anyway (fine-tuning)");
  };
  LoadedCheckpoint checkpoint = loadCheckpoint(dir, expected, checkModel);
  for (const ParameterInfo &t : model.parameters())
    device.upload(params + t.offset,
                  checkpoint.model.tensors.at(t.name).f32.data(), t.elements);
  return checkpoint;
}

void lap::train::initParameters(const LoadedModel &model,
                                const std::string &path, float *params,
                                device::Device &device) {
  // train.lora's adapters: a base model's file has none.
  std::vector<TensorSpec> expected;
  for (const ParameterInfo &t : model.parameters())
    expected.push_back(
        {t.name, t.shape, t.init == "values" || dsl::isLoraAdapter(t.name)});
  SafetensorsFile file = readParameterFile(path, expected);
  for (const ParameterInfo &t : model.parameters())
    if (auto it = file.tensors.find(t.name); it != file.tensors.end())
      device.upload(params + t.offset, it->second.f32.data(), t.elements);
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

namespace {

/// The other ranks wait, for as long as it takes, while rank 0 alone works
/// (evaluation, a checkpoint): the collectives' timeout is for ranks that
/// stopped, not for a long evaluation.
void waitForRankZero(comm::Communicator &comm) {
  double timeout = comm.timeout();
  comm.setTimeout(0);
  comm.barrier();
  comm.setTimeout(timeout);
}

/// Rank 0 loads and checks the checkpoint `dir` ("": a fresh run), and every
/// rank continues from its parameters, optimizer state, step and data
/// position (a fresh run: from rank 0's initial parameters). Returns the
/// step.
int64_t resumeRun(const LoadedModel &model, const TrainerConfig &config,
                  const std::string &dir, float *params, Optimizer &optimizer,
                  const DataParallel &parallel, Regime &regime) {
  comm::Communicator &comm = parallel.comm();
  int64_t resumed[3] = {0, 0, 0}; // step, resuming, data position
  std::optional<LoadedCheckpoint> ckpt;
  if (comm.rank() == 0 && !dir.empty()) {
    ckpt = restoreParameters(model, dir, params, config.resumeFromOtherModel,
                             optimizer.device());
    std::string state = dir + "/state.json";
    int64_t step = ckpt->state.step;
    if (std::string changed =
            differences(ckpt->state.schedule, scheduleOf(config));
        !changed.empty() && !config.allowScheduleChange)
      throw std::runtime_error(
          state + ": the run was trained with another schedule (" + changed +
          "); --allow-schedule-change resumes under the new one");
    if (step > config.steps)
      throw std::runtime_error(fmt::format(
          "{}: the checkpoint is of step {}, beyond the run's {} steps", state,
          step, config.steps));
    int64_t position = step * config.accumulation * config.microBatch;
    if (!config.allowScheduleChange && ckpt->state.dataPosition != position)
      throw std::runtime_error(fmt::format(
          "{}: data_position is {}, but {} steps of {} x {} take {}", state,
          ckpt->state.dataPosition, step, config.accumulation,
          config.microBatch, position));
    resumed[0] = step;
    resumed[1] = 1;
    resumed[2] = ckpt->state.dataPosition;
  }
  comm.broadcast(resumed, sizeof resumed, 0);
  parallel.broadcastParameters(params, model.parameterElements());
  if (resumed[1]) {
    parallel.distributeState(optimizer, ckpt ? &*ckpt : nullptr);
    if (ckpt)
      regime.restore(*ckpt);
    optimizer.setStepCount(resumed[0]);
    regime.seek(uint64_t(resumed[2]));
  }
  return resumed[0];
}

} // namespace

void lap::train::requireEqualShares(const std::string &library,
                                    const TrainerConfig &config,
                                    int64_t ranks) {
  if (config.accumulation % ranks != 0)
    throw std::runtime_error(fmt::format(
        "{}: train.batch_size {} is {} micro-batches of {}, which {} ranks "
        "cannot share equally (run a number of ranks that divides {}, or "
        "change train.micro_batch_size)",
        library, config.accumulation * config.microBatch, config.accumulation,
        config.microBatch, ranks, config.accumulation));
}

TrainResult lap::train::train(ModelCalls &calls, float *params,
                              const TrainerConfig &config, Regime &regime,
                              const std::string &resumeFrom) {
  const LoadedModel &model = calls.model();
  device::Device &device = calls.device();
  std::unique_ptr<comm::Communicator> oneProcess;
  if (!config.comm)
    oneProcess = comm::singleProcess();
  comm::Communicator &comm = config.comm ? *config.comm : *oneProcess;
  const bool lead = comm.rank() == 0;
  const int64_t ranks = comm.size();
  requireEqualShares(model.path(), config, ranks);
  // Ranks on GPUs move gradients and parameters over NCCL, ZeRO-1's
  // shards even alone; null: `comm` moves them, in host memory.
  std::unique_ptr<comm::Communicator> deviceComm;
  if (ranks > 1 || config.zero)
    deviceComm = device.communicator(comm);
  agreeAcrossRanks(comm, sharedSettings(model, config, device));
  const int64_t perRank = config.accumulation / ranks;
  // The optimizer, the gradients and the collectives see the trainable
  // parameters alone (all of them but under train.lora).
  const int64_t gradients = model.gradientElements();
  DataParallel parallel(comm, trainableTensorsOf(model), gradients, config.zero,
                        device, deviceComm.get());
  Optimizer optimizer(parallel.updated(), config.optimizer, device);
  std::string checkpoints = config.runDir + "/checkpoints";
  float *p = params;
  float *trained = params + model.trainableOffset();

  const int64_t start =
      resumeRun(model, config, resumeFrom, p, optimizer, parallel, regime);
  TrainResult result;
  result.optimizerStateBytes = optimizer.stateBytes();
  comm.allReduceMax(&result.optimizerStateBytes, 1);
  if (start == config.steps) {
    result.steps = start;
    result.alreadyFinished = true;
    return result;
  }

  device::Array grads(device, gradients);
  // A step of one micro-batch on one rank: its gradients are the step's as
  // they are, with no copy into an accumulator (ZeRO-1's reduce-scatter
  // wants the two apart).
  const bool direct = config.accumulation == 1 && !parallel.zero();
  device::Array accumulated =
      direct ? device::Array() : device::Array(device, gradients);
  std::optional<Progress> progress;
  if (lead)
    progress.emplace(config.steps, start, config.runDir + "/metrics.jsonl",
                     regime.unit(), stdout, !comm.launched());
  auto note = [&](const std::string &text) {
    if (progress)
      progress->note(text);
  };
  comm.setTimeout(config.commTimeout);
  if (deviceComm)
    deviceComm->setTimeout(config.commTimeout);

  RunSignals signals;
  auto began = std::chrono::steady_clock::now();
  int64_t end =
      config.stopAt > 0 ? std::min(config.stopAt, config.steps) : config.steps;
  int64_t step = start;
  for (; step < end; ++step) {
    float *acc = direct ? grads.data() : accumulated.data();
    double loss = 0;
    int64_t units = 0;
    for (int64_t micro = 0; micro < perRank; ++micro) {
      float microLoss = 0;
      // Of the micro-batch's place in the global batch, as one process has it.
      int64_t index = comm.rank() * perRank + micro;
      uint64_t dropoutSeed =
          config.seed * 1000003 + uint64_t(step * config.accumulation + index);
      if (regime.ownsStep()) {
        units += regime.trainStep(p, grads.data(), dropoutSeed, microLoss);
      } else {
        lap_batch batch{};
        units += regime.next(batch);
        microLoss = calls.trainStep(p, grads.data(), batch, dropoutSeed);
      }
      if (!direct)
        device.accumulate(acc, grads.data(), 1.0f / float(config.accumulation),
                          gradients, micro == 0);
      loss += microLoss / double(config.accumulation);
    }
    float *reduced = parallel.reduce(acc, grads.data());
    comm.allReduceSum(&loss, 1);
    // Every rank stops (or checkpoints) at the same step, whichever got the
    // signal.
    int64_t asks[2] = {signals.stop(), signals.checkpointAsked()};
    comm.allReduceMax(asks, 2);
    // One pass measures the gradients: their norm and their finiteness.
    std::vector<double> squares = parallel.squares(reduced);
    std::optional<std::string> bad = parallel.firstNonFinite(squares);
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
    double norm = parallel.clip(
        reduced, std::move(squares),
        regime.clipsEachTensor() ? 0 : config.gradClip); // 0: measure
    if (regime.clipsEachTensor())
      clipEachTensor(reduced, optimizer.tensors(), config.gradClip, device);
    std::vector<bool> frozen;
    bool anyFrozen = false;
    for (const TensorInfo &t : optimizer.tensors()) {
      frozen.push_back(regime.frozen(t.name, step));
      anyFrozen |= frozen.back();
    }
    // None frozen: the optimizer's cached spans, as in a regime without.
    optimizer.setFrozen(anyFrozen ? std::move(frozen) : std::vector<bool>());
    double multiplier =
        learningRateMultiplier(step, config.steps, config.schedule);
    optimizer.step(trained, reduced, multiplier,
                   weightDecayMultiplier(step, config.steps,
                                         config.optimizer.weightDecay,
                                         config.optimizer.weightDecayEnd));
    parallel.gatherParameters(trained);
    regime.afterUpdate(p, step);
    result.lastLoss = loss;
    if (progress) {
      progress->advance(units * ranks);
      if ((step + 1) % config.logEvery == 0 || step + 1 == config.steps ||
          step == start)
        progress->step(step + 1, loss, config.optimizer.lr * multiplier, norm,
                       regime.stepMetrics());
    }
    bool last = step + 1 == config.steps;
    if (config.evalEvery > 0 && ((step + 1) % config.evalEvery == 0 || last)) {
      if (lead) {
        result.lastEval = regime.evaluate();
        progress->eval(step + 1, result.lastEval);
      }
      waitForRankZero(comm);
    }
    bool checkpoint =
        config.checkpointEvery > 0 && (step + 1) % config.checkpointEvery == 0;
    int stop = int(asks[0]);
    bool asked = asks[1] != 0;
    bool stopsHere = step + 1 == end && !last;
    if (checkpoint || last || stop || asked || stopsHere) {
      auto others = parallel.collectState(optimizer);
      if (lead)
        save(checkpoints, step + 1, model, p, optimizer, others, config, regime,
             *progress);
      waitForRankZero(comm);
    }
    if (stopsHere && !stop)
      note(fmt::format("stopped after step {} of {} (--stop-at); "
                       "--resume continues the run",
                       step + 1, config.steps));
    if (asked && !stop) {
      signals.checkpointWritten();
      note(fmt::format("checkpoint at step {} on request (SIGUSR1), continuing",
                       step + 1));
    }
    if (stop) {
      note(fmt::format(
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
  if (progress)
    result.unitsPerSecond = progress->unitsPerSecond();
  return result;
}
