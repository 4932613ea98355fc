//===- TrainOnGpuTest.cpp - Training on a GPU continues the CPU's run ------===//
//
// The trainer with a CUDA library (its gradients, sums, clipping and
// optimizer on the GPU) against the trainer with the CPU library of the same
// spec, on the same random batches, six steps of AdamW or Muon at lr 1e-2:
// each step's loss within 1e-3 of the CPU's, relative, and every final
// parameter within 1e-4 of the CPU's (fp32 on both, summed in other orders:
// gradients about 1e-6 apart, updates about 1e-7; on the CPU, changing
// AdamW's beta2 from 0.999 to 0.99 moves parameters by up to 1e-3). And
// checkpoints are the same files on both: a run the CPU starts, the GPU
// continues and the CPU finishes ends where the CPU's own run does.
// Skipped, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/model/ModelOnDevice.h"
#include "runtime/model/RandomBatch.h"
#include "runtime/train/Trainer.h"
#include "test/unit/cuda/BothTargets.h"
#include "test/unit/cuda/RequireGpu.h"

#include <filesystem>
#include <fstream>

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;
using namespace lap::train;

namespace {

constexpr int64_t kSteps = 6;
constexpr double kParameterTolerance = 1e-4;

/// Random batches, the n-th drawn from seed n: the data position counts
/// the sequences (or images) drawn, as the trainer expects.
class RandomBatches {
public:
  RandomBatches(const LoadedModel &model, bool image)
      : manifest(model.manifest()), seq(image ? 0 : kMaxSeq) {}

  Regime regime() {
    Regime r;
    r.next = [this](lap_batch &out) {
      batch = std::make_unique<RandomBatch>(manifest, kMaxBatch, seq, drawn++);
      out = batch->view;
      return kMaxBatch;
    };
    r.position = [this] { return drawn * kMaxBatch; };
    r.seek = [this](uint64_t position) { drawn = position / kMaxBatch; };
    return r;
  }

private:
  const nlohmann::json &manifest;
  int64_t seq;
  uint64_t drawn = 0;
  std::unique_ptr<RandomBatch> batch;
};

/// Trains `library` in `runDir` on `device` up to step `stopAt` of
/// kSteps, continuing the run there when there is one.
void trainOn(const std::string &library, TrainDevice &device, bool image,
             const std::string &runDir, int64_t stopAt, OptimizerKind kind) {
  std::filesystem::create_directories(runDir);
  LoadedModel model(library, LoadedModel::Devices::Any);
  DeviceMemory memory(model);
  DeviceArray params(device, model.parameterElements());
  ASSERT_EQ(model.initParams(params.data(), 5), LAP_OK) << model.lastError();
  DeviceMemory::Buffer workspace(memory, size_t(model.workspaceBytes()));
  ModelOnDevice calls(model, memory, workspace.data);
  RandomBatches data(model, image);
  Regime regime = data.regime();

  TrainerConfig config;
  config.steps = kSteps;
  config.stopAt = stopAt;
  config.microBatch = kMaxBatch;
  config.accumulation = 2;
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
  std::string from = resumePoint(config, [](const std::string &) {});
  lap::train::train(calls, device, params.data(), config, regime, from);
}

/// The parameters of the newest checkpoint of `runDir`.
std::vector<float> parameters(const std::string &library,
                              const std::string &runDir) {
  LoadedModel model(library, LoadedModel::Devices::Any);
  std::vector<float> out(size_t(model.parameterElements()));
  restoreParameters(model, checkpointOf(runDir), out.data());
  return out;
}

/// The losses metrics.jsonl of `runDir` logs, by step.
std::vector<double> losses(const std::string &runDir) {
  std::ifstream in(runDir + "/metrics.jsonl");
  std::vector<double> out;
  for (std::string line; std::getline(in, line);) {
    auto entry = nlohmann::json::parse(line);
    if (entry.contains("loss"))
      out.push_back(entry["loss"]);
  }
  return out;
}

class TrainOnGpu
    : public ::testing::TestWithParam<std::tuple<Case, OptimizerKind>> {};

TEST_P(TrainOnGpu, ContinuesTheCpuRun) {
  REQUIRE_GPU();
  auto [c, kind] = GetParam();
  std::unique_ptr<TrainDevice> gpu = cudaTrainDevice(0);
  TrainDevice &host = hostTrainDevice();
  TempDir dir;
  std::string cpuRun = dir.file("cpu"), mixedRun = dir.file("mixed"),
              gpuRun = dir.file("gpu");
  const std::string &cpuLib = library(c, "cpu"), &gpuLib = library(c, "cuda");

  trainOn(cpuLib, host, c.image, cpuRun, 0, kind);
  trainOn(gpuLib, *gpu, c.image, gpuRun, 0, kind);
  // Steps 1-2 on the CPU, 3-4 on the GPU, 5-6 on the CPU again.
  trainOn(cpuLib, host, c.image, mixedRun, 2, kind);
  trainOn(gpuLib, *gpu, c.image, mixedRun, 4, kind);
  trainOn(cpuLib, host, c.image, mixedRun, 0, kind);

  std::vector<double> want = losses(cpuRun);
  std::vector<float> wantParams = parameters(cpuLib, cpuRun);
  ASSERT_EQ(want.size(), size_t(kSteps));
  for (const std::string &run : {gpuRun, mixedRun}) {
    std::vector<double> got = losses(run);
    ASSERT_EQ(got.size(), want.size()) << run;
    for (size_t s = 0; s < want.size(); ++s)
      EXPECT_NEAR(got[s], want[s], 1e-3 * std::abs(want[s]))
          << run << ", step " << s + 1;
    std::vector<float> gotParams = parameters(cpuLib, run);
    double worst = 0;
    for (size_t i = 0; i < wantParams.size(); ++i)
      worst = std::max(worst, double(std::abs(gotParams[i] - wantParams[i])));
    EXPECT_LE(worst, kParameterTolerance) << run;
  }
}

INSTANTIATE_TEST_SUITE_P(
    MixedKinds, TrainOnGpu,
    ::testing::Combine(::testing::ValuesIn(kCases),
                       ::testing::Values(OptimizerKind::AdamW,
                                         OptimizerKind::Muon)),
    [](const auto &info) {
      return std::string(std::get<0>(info.param).name) +
             (std::get<1>(info.param) == OptimizerKind::Muon ? "_muon"
                                                             : "_adamw");
    });

} // namespace
