//===- TrainOnGpuTest.cpp - Training on a GPU continues the CPU's run ------===//
//
// The trainer with a CUDA library (its gradients, sums, clipping and
// optimizer on the GPU) against the trainer with the CPU library of the same
// spec, on the same random batches, six steps of AdamW or Muon at lr 1e-2:
// each step's loss within 1e-3 of the CPU's, relative, and the final
// parameters as close to the CPU's as the CPU's own runs are to each other
// (kParameterTolerance, kParameterRms). And
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

#include <cmath>

using namespace lap;
using namespace lap::test;
using namespace lap::test::mixed;
using namespace lap::train;

namespace {

/// The CPU's own runs, at AVX-512 and with generic code (other summation
/// orders), end up to 1.0e-3 apart, root mean square 2.0e-5. The worst are
/// parameters whose gradient is zero but for rounding (a key's bias, which
/// softmax ignores; a Laplacian head's value bias, which V - PV cancels),
/// where AdamW's normalised step makes each rounding a step of up to the
/// learning rate. So every parameter within 3e-3, and all of them within
/// 1e-4 root mean square: a mistake in the trainer moves them all by a
/// fraction of the 1e-2 steps.
constexpr double kParameterTolerance = 3e-3, kParameterRms = 1e-4;

/// Each step's loss of `run` within 1e-3 of `want`'s, relative, and the
/// final parameters within kParameterTolerance and kParameterRms.
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
  ASSERT_EQ(gotParams.size(), wantParams.size()) << run;
  double worst = 0, squares = 0;
  size_t at = 0;
  for (size_t i = 0; i < wantParams.size(); ++i) {
    double d = std::abs(double(gotParams[i]) - double(wantParams[i]));
    squares += d * d;
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  std::string where;
  LoadedModel model(library, LoadedModel::Devices::Any);
  for (const ParameterInfo &p : model.parameters())
    if (int64_t(at) >= p.offset && int64_t(at) < p.offset + p.elements)
      where = p.name;
  EXPECT_LE(worst, kParameterTolerance) << run << ", worst in " << where;
  EXPECT_LE(std::sqrt(squares / double(wantParams.size())), kParameterRms)
      << run;
}

class TrainOnGpu
    : public ::testing::TestWithParam<std::tuple<Case, OptimizerKind>> {};

TEST_P(TrainOnGpu, ContinuesTheCpuRun) {
  REQUIRE_GPU();
  auto [c, kind] = GetParam();
  std::unique_ptr<device::Device> gpu = device::openCuda(0);
  device::Device &host = device::host();
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
  std::unique_ptr<device::Device> gpu = device::openCuda(0);
  std::unique_ptr<comm::Communicator> alone = comm::singleProcess();
  TempDir dir;
  std::string cpuRun = dir.file("cpu"), gpuRun = dir.file("gpu");
  const std::string &cpuLib = library(c, "cpu"), &gpuLib = library(c, "cuda");
  RunRanks zero{alone.get(), true};

  trainOn(cpuLib, device::host(), c.image, cpuRun, 0, kind);
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
