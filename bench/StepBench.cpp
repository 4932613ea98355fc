//===- StepBench.cpp - Time a compiled model's training step ----*- C++ -*-===//
//
// lap-step-bench MODEL.so [--batch N] [--seq N] [--warmup N] [--iters N]
//                [--optimizer adamw|muon]
//
// Times lap_model_train_step (forward + backward) on random data, or with
// --optimizer a full training step (forward, backward, gradient clipping and
// the optimizer's update, the settings of the spec in the manifest with the
// given optimizer type), and prints one JSON object: ms per step (median, min,
// max), samples and tokens per second, GFLOP/s by the spec's FLOP count and the
// fraction of this machine's FP32 peak, measured by an FMA loop with the
// vectors of the kernels' instruction set (LAP_CPU_ISA), on as many threads as
// the step, and the peak RSS next to what the memory plan predicts (parameters
// + gradients + workspace + batch).
//
//===----------------------------------------------------------------------===//

#include "bench/FmaPeak.h"
#include "bench/StepArgs.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/model/RandomBatch.h"
#include "runtime/platform/CpuFeatures.h"
#include "runtime/train/SpecConfig.h"

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <string>

using namespace lap;
using lap::bench::flag;
using lap::bench::option;

namespace {

/// The optimizer of the model's spec, as `type` ("adamw" or "muon").
std::unique_ptr<lap::train::Optimizer> makeOptimizer(const LoadedModel &model,
                                                     const std::string &type,
                                                     double &gradClip) {
  lap::dsl::Spec spec = lap::train::specOf(model);
  lap::train::OptimizerConfig config = lap::train::optimizerConfig(spec);
  if (type != "adamw" && type != "muon")
    throw std::runtime_error("--optimizer is adamw or muon, not '" + type +
                             "'");
  config.kind = type == "muon" ? lap::train::OptimizerKind::Muon
                               : lap::train::OptimizerKind::AdamW;
  gradClip = spec.train.gradClip;
  return std::make_unique<lap::train::Optimizer>(
      lap::train::trainableTensorsOf(model), config);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: lap-step-bench MODEL.so [--batch N] [--seq N] "
                 "[--warmup N] [--iters N]\n";
    return 2;
  }
  try {
    LoadedModel model(argv[1]);
    const auto &m = model.manifest();
    // The peak first, while no thread of the pool spins beside it.
    const std::string isa = model.kernelIsa();
    const int threads = omp_get_max_threads();
    const double peak = bench::fmaPeakGflops(isa, threads);
    int64_t batch = flag(argc, argv, "--batch", model.maxBatch());
    int64_t seq = flag(argc, argv, "--seq", model.maxSeq());
    int64_t warmup = flag(argc, argv, "--warmup", 3);
    int64_t iters = flag(argc, argv, "--iters", 20);

    AlignedBuffer params(model.parameterElements() * 4);
    AlignedBuffer grads(model.gradientElements() * 4);
    AlignedBuffer workspace(model.workspaceBytes());
    if (model.initParams(params.as<float>(), 1) != LAP_OK)
      throw std::runtime_error(model.lastError());

    RandomBatch data(m, batch, seq, 1);
    int64_t batchBytes = data.bytes();

    std::string optimizerType = option(argc, argv, "--optimizer");
    double gradClip = 0;
    auto optimizer = optimizerType.empty()
                         ? nullptr
                         : makeOptimizer(model, optimizerType, gradClip);

    std::vector<double> ms;
    float loss = 0;
    for (int64_t i = 0; i < warmup + iters; ++i) {
      auto start = std::chrono::steady_clock::now();
      const uint64_t seed = i;
      if (model.trainStep(params.as<float>(), grads.as<float>(), &data.view,
                          &seed, workspace.data, &loss) != LAP_OK)
        throw std::runtime_error(model.lastError());
      if (optimizer) {
        lap::train::clipGradients(grads.as<float>(), optimizer->tensors(),
                                  gradClip);
        optimizer->step(params.as<float>() + model.trainableOffset(),
                        grads.as<float>());
      }
      double t = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      if (i >= warmup)
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];

    double gflops =
        bench::trainStepFlops(m, batch, seq) / (median * 1e-3) / 1e9;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    int64_t planned =
        2 * model.parameterElements() * 4 + model.workspaceBytes() + batchBytes;

    nlohmann::json out{
        {"framework", "lap"},
        {"cpu", platform::cpuModelName()},
        {"isa", isa},
        {"peak_gflops", peak},
        {"optimizer", optimizerType.empty() ? "none" : optimizerType},
        {"model", m["name"]},
        {"threads", threads},
        {"batch", batch},
        {"seq", seq},
        {"parameters", model.parameterElements()},
        {"loss", loss},
        {"ms_per_step",
         {{"median", median}, {"min", ms.front()}, {"max", ms.back()}}},
        {"samples_per_s", double(batch) / (median * 1e-3)},
        {"tokens_per_s", double(batch * seq) / (median * 1e-3)},
        {"gflops", gflops},
        {"peak_fraction", gflops / peak},
        {"peak_rss_bytes", int64_t(usage.ru_maxrss) * 1024},
        {"planned_bytes", planned},
    };
    std::cout << out.dump() << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "lap-step-bench: error: " << e.what() << "\n";
    return 2;
  }
}
