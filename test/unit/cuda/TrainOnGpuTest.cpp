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
// continues and the CPU finishes ends where the CPU's own run does. ZeRO-1
// on a GPU moves the gradients and parameters over NCCL (one rank here:
// the same calls as several, each rank's block its own). Skipped, saying
// so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"
#include "test/unit/cuda/BothTargets.h"
#include "test/unit/cuda/RequireGpu.h"
#include "test/unit/train/TrainerRuns.h"

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;
using namespace lap::train;

namespace {

constexpr double kParameterTolerance = 1e-4;

/// Each step's loss of `run` within 1e-3 of `want`'s, relative, and every
/// final parameter within kParameterTolerance.
void expectSameRun(const std::string &library, const std::string &want,
                   const std::string &run) {
  std::vector<double> wantLosses = loggedLosses(want), got = loggedLosses(run);
  ASSERT_EQ(wantLosses.size(), size_t(kRunSteps));
  ASSERT_EQ(got.size(), wantLosses.size()) << run;
  for (size_t s = 0; s < got.size(); ++s)
    EXPECT_NEAR(got[s], wantLosses[s], 1e-3 * std::abs(wantLosses[s]))
        << run << ", step " << s + 1;
  std::vector<float> wantParams = checkpointParameters(library, want),
                     gotParams = checkpointParameters(library, run);
  double worst = 0;
  for (size_t i = 0; i < wantParams.size(); ++i)
    worst = std::max(worst, double(std::abs(gotParams[i] - wantParams[i])));
  EXPECT_LE(worst, kParameterTolerance) << run;
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

  for (const std::string &run : {gpuRun, mixedRun})
    expectSameRun(cpuLib, cpuRun, run);
}

TEST_P(TrainOnGpu, ShardsItsOptimizerOverNccl) {
  REQUIRE_GPU();
  auto [c, kind] = GetParam();
  std::unique_ptr<TrainDevice> gpu = cudaTrainDevice(0);
  std::unique_ptr<comm::Communicator> alone = comm::singleProcess(),
                                      nccl = cudaCommunicator(*alone);
  TempDir dir;
  std::string cpuRun = dir.file("cpu"), gpuRun = dir.file("gpu");
  const std::string &cpuLib = library(c, "cpu"), &gpuLib = library(c, "cuda");
  RunRanks zero{alone.get(), nccl.get(), true};

  trainOn(cpuLib, hostTrainDevice(), c.image, cpuRun, 0, kind);
  trainOn(gpuLib, *gpu, c.image, gpuRun, 3, kind, zero);
  trainOn(gpuLib, *gpu, c.image, gpuRun, 0, kind, zero);
  expectSameRun(cpuLib, cpuRun, gpuRun);
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
