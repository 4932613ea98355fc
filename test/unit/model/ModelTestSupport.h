//===- ModelTestSupport.h - Compile and run tiny specs in tests -*- C++ -*-===//
//
// Shared by the whole-model tests: a temporary directory, lapc as a
// subprocess, a loaded model with its buffers, and batches that own their
// tensors. Header-only so the tests need no extra library.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_MODEL_MODELTESTSUPPORT_H
#define LAP_TEST_UNIT_MODEL_MODELTESTSUPPORT_H

#include "runtime/model/LoadedModel.h"
#include "test/unit/TempDir.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace lap::test {

/// Runs `command` through the shell; returns its exit status (-1 when it did
/// not exit normally) and its standard output and error together.
inline int runCommand(const std::string &command, std::string &output) {
  output.clear();
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return -1;
  char chunk[4096];
  while (size_t n = fread(chunk, 1, sizeof chunk, pipe))
    output.append(chunk, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Writes `yaml` to DIR/NAME.yaml and compiles it to DIR/NAME.so with lapc
/// (maxSeq 0: the spec's own, as an image model's must be; `flags` more
/// options); throws with lapc's output when that fails.
inline std::string compileSpec(const std::filesystem::path &dir,
                               const std::string &name, const std::string &yaml,
                               int64_t maxBatch, int64_t maxSeq,
                               const std::string &flags = "") {
  std::string spec = (dir / (name + ".yaml")).string(),
              so = (dir / (name + ".so")).string();
  std::ofstream(spec) << yaml;
  std::string output;
  std::string command =
      std::string("'") + LAP_LAPC + "' '" + spec + "' -o '" + so +
      "' --max-batch " + std::to_string(maxBatch) +
      (maxSeq > 0 ? " --max-seq " + std::to_string(maxSeq) : "") + " " + flags;
  int status = runCommand(command, output);
  if (status != 0)
    throw std::runtime_error("lapc failed (exit " + std::to_string(status) +
                             ") on\n" + yaml + "\n" + output);
  return so;
}

/// The lap IR after lapc's pass pipeline (`--emit=lowered`, with `flags`)
/// of spec text `yaml`; fails the test when lapc does.
inline std::string loweredIR(const std::string &yaml,
                             const std::string &flags = "") {
  TempDir dir;
  std::string spec = dir.file("spec.yaml"), output;
  std::ofstream(spec) << yaml;
  EXPECT_EQ(runCommand(std::string("'") + LAP_LAPC + "' '" + spec +
                           "' --emit=lowered " + flags,
                       output),
            0)
      << output;
  return output;
}

/// How often `word` occurs in `text`.
inline size_t occurrences(const std::string &text, const std::string &word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos;
       at = text.find(word, at + 1))
    ++n;
  return n;
}

/// The library of spec `name`, compiled on first use and kept for the rest
/// of the process in a temporary directory removed at exit: ctest runs each
/// test in a process of its own, so a test compiles only what it uses.
/// Names are global to the test executable. With LAP_PREBUILT_MODELS=DIR,
/// DIR/NAME.so is used when it exists and compiled there when not, so the
/// libraries can be built here and the tests run where lapc is not (a GPU
/// machine: bench/gpu/prepare.sh).
inline const std::string &compiled(const std::string &name,
                                   const std::string &yaml, int64_t maxBatch,
                                   int64_t maxSeq,
                                   const std::string &flags = "") {
  static TempDir temporary;
  static std::map<std::string, std::string> paths;
  auto it = paths.find(name);
  if (it != paths.end())
    return it->second;
  if (const char *prebuilt = std::getenv("LAP_PREBUILT_MODELS")) {
    std::filesystem::path dir(prebuilt);
    if (std::filesystem::exists(dir / (name + ".so")))
      return paths[name] = (dir / (name + ".so")).string();
    std::filesystem::create_directories(dir);
    return paths[name] = compileSpec(dir, name, yaml, maxBatch, maxSeq, flags);
  }
  return paths[name] =
             compileSpec(temporary.path(), name, yaml, maxBatch, maxSeq, flags);
}

/// A batch that owns its tensors, in manifest "batch" order: tokens,
/// targets and a padded model's lengths (gpt) or images and target
/// distributions (vit).
struct Batch {
  int64_t batch = 0, seq = 0;
  std::vector<int32_t> tokens, targets, lengths;
  std::vector<float> images, distributions;

  lap_batch view() {
    pointers.clear();
    if (!images.empty())
      pointers = {images.data(), distributions.data()};
    else
      pointers = {tokens.data(), targets.data()};
    if (!lengths.empty())
      pointers.push_back(lengths.data());
    return {batch, seq, int32_t(pointers.size()), pointers.data()};
  }

private:
  std::vector<const void *> pointers;
};

/// Uniform tokens and targets in [0, vocab).
inline Batch textBatch(int64_t batch, int64_t seq, int64_t vocab,
                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab - 1));
  Batch b;
  b.batch = batch;
  b.seq = seq;
  for (int64_t i = 0; i < batch * seq; ++i) {
    b.tokens.push_back(id(rng));
    b.targets.push_back(id(rng));
  }
  return b;
}

/// Normal pixels and random target distributions (as mixup and label
/// smoothing make them), rows summing to 1.
inline Batch imageBatch(int64_t batch, int64_t channels, int64_t side,
                        int64_t classes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_real_distribution<float> weight(0.05f, 1.0f);
  Batch b;
  b.batch = batch;
  b.images.resize(size_t(batch * channels * side * side));
  for (float &x : b.images)
    x = pixel(rng);
  for (int64_t r = 0; r < batch; ++r) {
    std::vector<float> row(static_cast<size_t>(classes));
    float sum = 0;
    for (float &w : row)
      sum += (w = weight(rng));
    for (float w : row)
      b.distributions.push_back(w / sum);
  }
  return b;
}

/// A loaded model with parameter, gradient and workspace buffers.
struct ModelRun {
  explicit ModelRun(const std::string &path)
      : model(path), params(size_t(model.parameterElements()) * sizeof(float)),
        grads(size_t(model.parameterElements()) * sizeof(float)),
        workspace(size_t(model.workspaceBytes())) {}

  float *param() { return params.as<float>(); }
  float *grad() { return grads.as<float>(); }
  int64_t elements() const { return model.parameterElements(); }

  /// The manifest entry of parameter `name`; fails the test when absent.
  const ParameterInfo &info(const std::string &name) const {
    for (const ParameterInfo &p : model.parameters())
      if (p.name == name)
        return p;
    throw std::runtime_error(model.path() + " has no parameter '" + name + "'");
  }
  float *param(const std::string &name) { return param() + info(name).offset; }

  /// The logits' elements for `b`: [B, T, vocab] or [B, classes].
  int64_t logitElements(const Batch &b) const {
    const nlohmann::json &shape = model.manifest()["outputs"][1]["shape"];
    int64_t n = b.batch;
    for (size_t i = 1; i < shape.size(); ++i)
      n *= shape[i].get<int64_t>() < 0 ? b.seq : shape[i].get<int64_t>();
    return n;
  }

  /// Evaluation forward; fails the test on an error status.
  float forward(Batch &b, std::vector<float> *logits = nullptr) {
    std::vector<float> out(size_t(logitElements(b)));
    float loss = 0;
    lap_batch v = b.view();
    lap_status s =
        model.forward(param(), &v, workspace.data, &loss, out.data());
    EXPECT_EQ(s, LAP_OK) << model.lastError();
    if (logits)
      *logits = std::move(out);
    return loss;
  }

  /// Training step with `seed`; fails the test on an error status.
  float trainStep(Batch &b, uint64_t seed = 0) {
    float loss = 0;
    lap_batch v = b.view();
    lap_status s =
        model.trainStep(param(), grad(), &v, &seed, workspace.data, &loss);
    EXPECT_EQ(s, LAP_OK) << model.lastError();
    return loss;
  }

  LoadedModel model;
  AlignedBuffer params, grads, workspace;
};

/// Two builds of one spec (`a` with a compiler option, `b` without) compute
/// the same evaluation forward (loss, logits) and training step (loss,
/// every gradient) of `batch`, within `tolerance` of each value's scale;
/// dropout and drop path draw the same masks in both.
inline void expectSameComputation(ModelRun &a, ModelRun &b, Batch &batch,
                                  float tolerance) {
  ASSERT_EQ(a.elements(), b.elements());
  std::vector<float> aLogits, bLogits;
  float loss = a.forward(batch, &aLogits);
  EXPECT_NEAR(loss, b.forward(batch, &bLogits), tolerance * loss);
  expectWithinScale(aLogits, bLogits, tolerance, "logits");
  float trainLoss = a.trainStep(batch);
  EXPECT_NEAR(trainLoss, b.trainStep(batch), tolerance * trainLoss);
  expectWithinScale(std::vector<float>(a.grad(), a.grad() + a.elements()),
                    std::vector<float>(b.grad(), b.grad() + b.elements()),
                    tolerance, "gradients");
}

} // namespace lap::test

#endif // LAP_TEST_UNIT_MODEL_MODELTESTSUPPORT_H
