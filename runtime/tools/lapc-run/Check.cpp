//===- Check.cpp - lapc-run check ---------------------------------*- C++ -*-===//
//
// Runs the model once on random data: a smoke test of a compiled library
// that prints what a user wants to see first (the loss at init is near
// log(classes); every gradient is finite).
//
//===----------------------------------------------------------------------===//

#include "runtime/model/LoadedModel.h"
#include "runtime/tools/lapc-run/Commands.h"

#include <fmt/format.h>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>

using namespace lap;

namespace {

/// Random batch tensors in manifest order.
struct RandomBatch {
  RandomBatch(const nlohmann::json &manifest, int64_t batch, int64_t seq,
              uint64_t seed) {
    std::mt19937_64 rng(seed);
    int64_t vocab = manifest["limits"]["vocab"];
    for (auto &t : manifest["batch"]) {
      auto shape = t["shape"].get<std::vector<int64_t>>();
      int64_t n = 1;
      for (size_t i = 0; i < shape.size(); ++i)
        n *= shape[i] >= 0 ? shape[i] : i == 0 ? batch : seq;
      buffers.push_back(std::make_unique<AlignedBuffer>(n * 4));
      AlignedBuffer &b = *buffers.back();
      std::string name = t["name"];
      if (t["dtype"] == "int32") {
        std::uniform_int_distribution<int32_t> token(0, int32_t(vocab - 1));
        for (int64_t i = 0; i < n; ++i)
          b.as<int32_t>()[i] = token(rng);
      } else if (name == "images") {
        std::normal_distribution<float> pixel;
        for (int64_t i = 0; i < n; ++i)
          b.as<float>()[i] = pixel(rng);
      } else { // one-hot target distributions [B, classes]
        int64_t classes = shape.back();
        std::uniform_int_distribution<int64_t> label(0, classes - 1);
        for (int64_t r = 0; r < n / classes; ++r)
          b.as<float>()[r * classes + label(rng)] = 1;
      }
      pointers.push_back(b.data);
    }
    view = {batch, seq, int32_t(pointers.size()), pointers.data()};
  }
  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  std::vector<const void *> pointers;
  lap_batch view;
};

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

} // namespace

int lap::cli::check(const CheckOptions &options) {
  LoadedModel model(options.model);
  const auto &m = model.manifest();
  int64_t batch = options.batch ? options.batch : model.maxBatch();
  int64_t seq = options.seq ? options.seq : model.maxSeq();

  AlignedBuffer params(model.parameterElements() * 4);
  AlignedBuffer grads(model.parameterElements() * 4);
  AlignedBuffer workspace(model.workspaceBytes());
  auto status = [&](lap_status s) {
    if (s != LAP_OK)
      throw std::runtime_error(options.model + ": " + model.lastError());
  };
  status(model.initParams(params.as<float>(), options.seed));
  RandomBatch data(m, batch, seq, options.seed);

  int64_t logits = 1;
  for (int64_t d : m["outputs"][1]["shape"].get<std::vector<int64_t>>())
    logits *= d >= 0 ? d : logits == 1 && d == -1 ? batch : seq;
  AlignedBuffer logitBuffer(logits * 4);

  float forwardLoss = 0, trainLoss = 0;
  auto start = std::chrono::steady_clock::now();
  status(model.forward(params.as<float>(), &data.view, workspace.data,
                       &forwardLoss, logitBuffer.as<float>()));
  double forwardTime = seconds(start);
  start = std::chrono::steady_clock::now();
  status(model.trainStep(params.as<float>(), grads.as<float>(), &data.view,
                         options.seed, workspace.data, &trainLoss));
  double trainTime = seconds(start);

  fmt::print("model {}: batch {}, sequence {}, seed {}\n",
             m["name"].get<std::string>(), batch, seq, options.seed);
  fmt::print("forward     loss {:.6f}  ({:.1f} ms)\n", forwardLoss, forwardTime * 1e3);
  fmt::print("train_step  loss {:.6f}  ({:.1f} ms)\n", trainLoss, trainTime * 1e3);
  fmt::print("\n  {:<40} {:>14} {:>14}\n", "gradient of", "norm", "param norm");
  double total = 0;
  bool finite = std::isfinite(forwardLoss) && std::isfinite(trainLoss);
  for (const ParameterInfo &p : model.parameters()) {
    double g = 0, w = 0;
    for (int64_t i = 0; i < p.elements; ++i) {
      double gi = grads.as<float>()[p.offset + i], wi = params.as<float>()[p.offset + i];
      g += gi * gi;
      w += wi * wi;
    }
    finite &= std::isfinite(g);
    total += g;
    fmt::print("  {:<40} {:>14.6e} {:>14.6e}\n", p.name, std::sqrt(g), std::sqrt(w));
  }
  fmt::print("  {:<40} {:>14.6e}\n", "(all)", std::sqrt(total));

  // The memory plan's promise: a step needs parameters, gradients, the
  // workspace and the batch, and nothing else of that size.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double planned = double(params.bytes + grads.bytes + workspace.bytes + logitBuffer.bytes);
  for (const auto &b : data.buffers)
    planned += double(b->bytes);
  fmt::print("\nmemory      planned {:.1f} MiB (parameters, gradients, workspace, "
             "batch, logits); peak RSS {:.1f} MiB\n",
             planned / (1 << 20), double(usage.ru_maxrss) / 1024);
  if (!finite) {
    fmt::print(stderr, "lapc-run: check failed: a loss or gradient is not finite\n");
    return 1;
  }
  return 0;
}
