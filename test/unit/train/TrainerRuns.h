//===- TrainerRuns.h - Short trainer runs of a compiled model ---*- C++ -*-===//
//
// The trainer on random batches, for tests that compare runs: the same
// library on two devices (test/unit/cuda/TrainOnGpuTest.cpp), or with its
// arrays moved by other communicators (DataParallelOnDeviceTest.cpp). Six
// steps of AdamW or Muon at lr 1e-2 with clipping; metrics.jsonl logs each
// step's loss and every second step leaves a checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_TRAIN_TRAINERRUNS_H
#define LAP_TEST_UNIT_TRAIN_TRAINERRUNS_H

#include "runtime/model/ModelCalls.h"
#include "runtime/model/RandomBatch.h"
#include "runtime/train/Trainer.h"
#include "test/unit/model/MixedKindModels.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace lap::test {

constexpr int64_t kRunSteps = 6;

/// Random batches of kMaxBatch: rank r of R draws the micro-batches
/// r, r + R, r + 2R, ... of the run, micro-batch n from seed n, so a run's
/// batches do not depend on where it resumes. The data position counts the
/// sequences (or images) every rank has drawn, as the trainer expects.
class RandomBatches final : public train::Regime {
public:
  RandomBatches(const LoadedModel &model, bool image, int rank = 0,
                int ranks = 1)
      : manifest(model.manifest()), seq(image ? 0 : mixed::kMaxSeq),
        rank(uint64_t(rank)), ranks(uint64_t(ranks)) {}

  const char *unit() const override { return seq ? "tok" : "img"; }
  const char *units() const override { return seq ? "tokens" : "images"; }
  std::string microBatchText(int64_t micro) const override {
    return std::to_string(micro) + " random samples";
  }
  int64_t stepsPerEpoch(int64_t) const override { return 1; }
  int64_t next(lap_batch &out) override {
    batch = std::make_unique<RandomBatch>(manifest, mixed::kMaxBatch, seq,
                                          drawn++ * ranks + rank);
    out = batch->view;
    return mixed::kMaxBatch;
  }
  uint64_t position() const override {
    return drawn * ranks * mixed::kMaxBatch;
  }
  void seek(uint64_t position) override {
    drawn = position / (ranks * mixed::kMaxBatch);
  }
  bool evaluates() const override { return false; }

private:
  const nlohmann::json &manifest;
  int64_t seq;
  uint64_t rank, ranks, drawn = 0;
  std::unique_ptr<RandomBatch> batch;
};

/// How the ranks of a run share it (one process: all null).
struct RunRanks {
  comm::Communicator *comm = nullptr;
  bool zero = false;
};

/// Trains `library` in `runDir` on `device` up to step `stopAt` of
/// kRunSteps (0: all), continuing the run there when there is one.
inline void trainOn(const std::string &library, device::Device &device,
                    bool image, const std::string &runDir, int64_t stopAt,
                    train::OptimizerKind kind, RunRanks ranks = {}) {
  using namespace lap::train;
  std::filesystem::create_directories(runDir);
  LoadedModel model(library, LoadedModel::Devices::Any);
  device::Array params(device, model.parameterElements());
  ASSERT_EQ(model.initParams(params.data(), 5), LAP_OK) << model.lastError();
  device::Buffer workspace(device, size_t(model.workspaceBytes()));
  ModelCalls calls(model, device, workspace.data());
  int size = ranks.comm ? ranks.comm->size() : 1;
  RandomBatches regime(model, image, ranks.comm ? ranks.comm->rank() : 0, size);

  TrainerConfig config;
  config.steps = kRunSteps;
  config.stopAt = stopAt;
  config.microBatch = mixed::kMaxBatch;
  config.accumulation = 2 * size;
  config.seed = 11;
  config.gradClip = 0.5;
  config.logEvery = 1;
  config.checkpointEvery = 2;
  config.runDir = runDir;
  config.resume = ResumeMode::IfAny;
  config.optimizer.kind = kind;
  config.optimizer.lr = kind == OptimizerKind::Muon ? 0.02 : 1e-2;
  config.optimizer.embeddingLr = config.optimizer.unembeddingLr =
      config.optimizer.scalarLr = 1e-2;
  config.optimizer.scaleLrByWidth = false;
  config.optimizer.weightDecay = 0.01;
  config.comm = ranks.comm;
  config.zero = ranks.zero;
  std::string from;
  if (!ranks.comm || ranks.comm->rank() == 0)
    from = resumePoint(config, [](const std::string &) {});
  lap::train::train(calls, params.data(), config, regime, from);
}

/// The parameters of the newest checkpoint of `runDir`.
inline std::vector<float> checkpointParameters(const std::string &library,
                                               const std::string &runDir) {
  LoadedModel model(library, LoadedModel::Devices::Any);
  std::vector<float> out(size_t(model.parameterElements()));
  train::restoreParameters(model, train::checkpointOf(runDir), out.data());
  return out;
}

/// The losses metrics.jsonl of `runDir` logs, by step.
inline std::vector<double> loggedLosses(const std::string &runDir) {
  std::ifstream in(runDir + "/metrics.jsonl");
  std::vector<double> out;
  for (std::string line; std::getline(in, line);) {
    auto entry = nlohmann::json::parse(line);
    if (entry.contains("loss"))
      out.push_back(entry["loss"]);
  }
  return out;
}

} // namespace lap::test

#endif // LAP_TEST_UNIT_TRAIN_TRAINERRUNS_H
