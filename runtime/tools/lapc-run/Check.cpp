//===- Check.cpp - lapc-run check ---------------------------------*- C++ -*-===//
//
// Runs the model once on random data: a smoke test of a compiled library
// that prints what a user wants to see first (the loss at init is near
// log(classes); every gradient is finite). On the library's device: a CUDA
// library runs on the GPU, its buffers in GPU memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/model/LoadedModel.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/model/RandomBatch.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"

#include <fmt/format.h>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

using namespace lap;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

} // namespace

int lap::cli::check(const CheckOptions &options) {
  LoadedModel model(options.model, LoadedModel::Devices::Any);
  const auto &m = model.manifest();
  int64_t batch = options.batch ? options.batch : model.maxBatch();
  int64_t seq = options.seq ? options.seq : model.maxSeq();
  // Refused before anything of their size is allocated.
  if (batch < 1 || batch > model.maxBatch())
    throw std::runtime_error(fmt::format(
        "{}: batch size {} is outside the compiled range 1..{} (lapc "
        "--max-batch sets the maximum)",
        options.model, batch, model.maxBatch()));
  bool fixedSeq = m["family"] != "gpt"; // an image model's is its tokens
  if (!fixedSeq && (seq < 1 || seq > model.maxSeq()))
    throw std::runtime_error(fmt::format(
        "{}: sequence length {} is outside the compiled range 1..{} (lapc "
        "--max-seq sets the maximum)",
        options.model, seq, model.maxSeq()));

  auto status = [&](lap_status s) {
    if (s != LAP_OK)
      throw std::runtime_error(options.model + ": " + model.lastError());
  };
  // Selects the GPU (--device cuda:N) before anything is allocated there.
  std::unique_ptr<device::Device> gpu = openDevice(model, options.device);
  device::Device &device = gpu ? *gpu : device::host();
  using device::Buffer;
  size_t parameterBytes = size_t(model.parameterElements()) * 4,
         gradientBytes = size_t(model.gradientElements()) * 4;
  Buffer params(device, parameterBytes), grads(device, gradientBytes),
      workspace(device, model.workspaceBytes()), loss(device, 4),
      seed(device, sizeof options.seed);
  device.uploadBytes(seed.data(), &options.seed, sizeof options.seed);
  status(model.initParams(params.as<float>(), options.seed));
  RandomBatch data(m, batch, seq, options.seed);
  ModelCalls calls(model, device, workspace.data());
  const lap_batch &view = *calls.place(data.view);

  int64_t logits = elementsAt(
      m["outputs"][1]["shape"].get<std::vector<int64_t>>(), batch, seq);
  Buffer logitBuffer(device, size_t(logits) * 4);

  // Each time ends when the result is on the host (a GPU's call returns
  // once its work is queued).
  float forwardLoss = 0, trainLoss = 0;
  auto start = std::chrono::steady_clock::now();
  status(model.forward(params.as<float>(), &view, workspace.data(),
                       loss.as<float>(), logitBuffer.as<float>()));
  device.downloadBytes(&forwardLoss, loss.data(), 4);
  double forwardTime = seconds(start);
  start = std::chrono::steady_clock::now();
  status(model.trainStep(params.as<float>(), grads.as<float>(), &view,
                         seed.as<const uint64_t>(), workspace.data(),
                         loss.as<float>()));
  device.downloadBytes(&trainLoss, loss.data(), 4);
  double trainTime = seconds(start);
  // Parameters and gradients where the host reads them.
  const float *hostParams = params.as<float>(), *hostGrads = grads.as<float>();
  std::vector<float> copies;
  if (!device.onHost()) {
    copies.resize(size_t(model.parameterElements() + model.gradientElements()));
    device.downloadBytes(copies.data(), params.data(), parameterBytes);
    device.downloadBytes(copies.data() + model.parameterElements(),
                         grads.data(), gradientBytes);
    hostParams = copies.data();
    hostGrads = copies.data() + model.parameterElements();
  }

  fmt::print(
      "model {}: batch {}, sequence {}, seed {}; code for {}, kernels {}\n",
      m["name"].get<std::string>(), batch, seq, options.seed,
      model.device() == "cuda"
          ? "cuda " + m["target"]["arch"].get<std::string>()
          : m["target"]["cpu"].get<std::string>(),
      model.kernelIsa());
  fmt::print("forward     loss {:.6f}  ({:.1f} ms)\n", forwardLoss,
             forwardTime * 1e3);
  fmt::print("train_step  loss {:.6f}  ({:.1f} ms)\n", trainLoss,
             trainTime * 1e3);
  fmt::print("\n  {:<40} {:>14} {:>14}\n", "gradient of", "norm", "param norm");
  double total = 0;
  bool finite = std::isfinite(forwardLoss) && std::isfinite(trainLoss);
  // Frozen parameters (train.lora) have no gradient.
  for (const ParameterInfo &p : model.parameters()) {
    if (!p.trainable)
      continue;
    double g = 0, w = 0;
    const float *grad = hostGrads + (p.offset - model.trainableOffset());
    for (int64_t i = 0; i < p.elements; ++i) {
      double gi = grad[i], wi = hostParams[p.offset + i];
      g += gi * gi;
      w += wi * wi;
    }
    finite &= std::isfinite(g);
    total += g;
    fmt::print("  {:<40} {:>14.6e} {:>14.6e}\n", p.name, std::sqrt(g),
               std::sqrt(w));
  }
  fmt::print("  {:<40} {:>14.6e}\n", "(all)", std::sqrt(total));

  // The memory plan's promise: a step needs parameters, gradients, the
  // workspace and the batch, and nothing else of that size.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double planned = double(params.bytes() + grads.bytes() + workspace.bytes() +
                          logitBuffer.bytes()) +
                   double(data.bytes());
  fmt::print(
      "\nmemory      planned {:.1f} MiB (parameters, gradients, workspace, "
      "batch, logits{}); peak RSS {:.1f} MiB\n",
      planned / (1 << 20), model.device() == "cuda" ? ", on the GPU" : "",
      double(usage.ru_maxrss) / 1024);
  if (!finite) {
    fmt::print(stderr,
               "lapc-run: check failed: a loss or gradient is not finite\n");
    return 1;
  }
  return 0;
}
