//===- ModelLoadingTest.cpp - bad libraries, bad batches, initialisation --===//
//
// LoadedModel refuses what is not a model.so of this ABI with a message
// that names the file and the reason; a model refuses batches outside its
// compiled limits with an error status and a message naming the problem;
// init_params is reproducible and follows the manifest.
//
//===----------------------------------------------------------------------===//

#include "MixedKindModels.h"
#include "ModelTestSupport.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

using namespace lap;
using namespace lap::test;

namespace {

// GPT-2-like: the default normal(0.02) initialisation, so wte (512 x 64)
// is a big normal tensor; biases, LayerNorm weights and biases, and zero
// output projections are constants.
const char *kGpt = R"(model:
  family: gpt
  layers: 2
  width: 64
  heads: 4
  norm: {type: layernorm}
  vocab: 512
  context: 8
  init: {zero_out_proj: true}
attention:
  laplacian_heads: 2
)";

// A ViT with trunc_normal initialisation and LayerScale.
const char *kVit = R"(model:
  family: vit
  layers: 1
  width: 32
  heads: 2
  image_size: 8
  patch: 4
  channels: 3
  classes: 5
  layer_scale: 0.1
  init: {distribution: trunc_normal, std: 0.05}
attention:
  kinds: [attn, laplacian]
)";

// nanochat's uniform fan_in initialisation.
const char *kUniform = R"(model:
  family: gpt
  layers: 1
  width: 64
  heads: 2
  activation: relu2
  norm: {type: rmsnorm, weight: false}
  positions: {type: rope}
  bias: false
  vocab: 256
  context: 8
  init: {distribution: uniform, std: fan_in, embedding_std: 1.0, head_std: 0.001}
)";

constexpr int64_t kMaxBatch = 3, kMaxSeq = 8, kVocab = 512;

/// Runs `make` and returns the message of the std::runtime_error it
/// throws; fails the test when it throws nothing.
template <typename F> std::string errorOf(F make) {
  try {
    make();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::runtime_error was thrown";
  return "";
}

/// The library of spec "gpt", "vit" or "uniform".
const std::string &path(const std::string &name) {
  const char *yaml = name == "gpt" ? kGpt : name == "vit" ? kVit : kUniform;
  return compiled("loading_" + name, yaml, kMaxBatch,
                  name == "vit" ? 0 : kMaxSeq);
}

//===----------------------------------------------------------------------===//
// Libraries that are not models
//===----------------------------------------------------------------------===//

/// `message` names `file` and contains every one of `parts`.
void expectMessage(const std::string &message, const std::string &file,
                   const std::vector<std::string> &parts) {
  EXPECT_NE(message.find(file), std::string::npos) << message;
  for (const std::string &part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(ModelLoadingTest, NonexistentPath) {
  TempDir dir;
  std::string file = dir.file("no-such-dir/model.so");
  expectMessage(errorOf([&] { LoadedModel m(file); }), file,
                {"cannot open", "No such file or directory"});
}

TEST(ModelLoadingTest, TruncatedLibrary) {
  // The first 4096 bytes of a real model.so: an ELF header whose segments
  // lie past the end of the file.
  TempDir dir;
  std::string file = dir.file("truncated.so");
  std::filesystem::copy_file(path("gpt"), file);
  std::filesystem::resize_file(file, 4096);
  expectMessage(errorOf([&] { LoadedModel m(file); }), file,
                {"not a loadable shared library", "truncated"});
}

TEST(ModelLoadingTest, NotAnElfFile) {
  TempDir dir;
  std::string file = dir.file("model.so");
  std::ofstream(file) << kGpt;
  expectMessage(errorOf([&] { LoadedModel m(file); }), file,
                {"not a shared library (no ELF header)"});
}

TEST(ModelLoadingTest, ForeignSharedLibrary) {
  std::string file = "/usr/lib/x86_64-linux-gnu/libz.so.1";
  if (!std::filesystem::exists(file))
    GTEST_SKIP() << file << " is not installed";
  expectMessage(errorOf([&] { LoadedModel m(file); }), file,
                {"not a lap model library", "no 'lap_model_abi_version'"});
}

TEST(ModelLoadingTest, OtherAbiVersion) {
  std::string file = LAP_FAKE_MODEL;
  expectMessage(errorOf([&] { LoadedModel m(file); }), file,
                {"ABI version 999",
                 "version " + std::to_string(LAP_MODEL_ABI_VERSION) + ";",
                 "recompile"});
}

TEST(ModelLoadingTest, RealModelLoads) {
  LoadedModel m(path("gpt"));
  EXPECT_EQ(m.maxBatch(), kMaxBatch);
  EXPECT_EQ(m.maxSeq(), kMaxSeq);
  EXPECT_EQ(m.manifest()["limits"]["vocab"], kVocab);
  EXPECT_GT(m.workspaceBytes(), 0);
}

//===----------------------------------------------------------------------===//
// Batches outside the compiled limits
//===----------------------------------------------------------------------===//

/// Both entry points refuse `batch` with LAP_INVALID_ARGUMENT and a last
/// error that contains every one of `parts`.
void expectRefused(ModelRun &run, const lap_batch *batch,
                   const std::vector<std::string> &parts) {
  // Logits for anything up to twice the limits, so a missed check cannot
  // write out of bounds.
  std::vector<float> logits(size_t(2 * kMaxBatch * 2 * kMaxSeq * kVocab));
  float loss = 0;
  lap_status forward = run.model.forward(run.param(), batch, run.workspace.data,
                                         &loss, logits.data());
  EXPECT_EQ(forward, LAP_INVALID_ARGUMENT);
  std::string error = run.model.lastError();
  for (const std::string &part : parts)
    EXPECT_NE(error.find(part), std::string::npos) << "forward: " << error;
  const uint64_t seed = 0;
  lap_status train = run.model.trainStep(run.param(), run.grad(), batch, &seed,
                                         run.workspace.data, &loss);
  EXPECT_EQ(train, LAP_INVALID_ARGUMENT);
  error = run.model.lastError();
  for (const std::string &part : parts)
    EXPECT_NE(error.find(part), std::string::npos) << "train_step: " << error;
}

TEST(ModelLoadingTest, BatchOutsideLimits) {
  ModelRun run(path("gpt"));
  ASSERT_EQ(run.model.initParams(run.param(), 1), LAP_OK);
  // Storage for the largest shapes tried; the sizes are in the lap_batch.
  Batch b = textBatch(2 * kMaxBatch, 2 * kMaxSeq, kVocab, 3);
  lap_batch v = b.view();

  v.batch = 0, v.seq = 4;
  expectRefused(run, &v, {"batch size 0", "1..3", "--max-batch"});
  v.batch = kMaxBatch + 1;
  expectRefused(run, &v, {"batch size 4", "1..3"});
  v.batch = 2, v.seq = kMaxSeq + 1;
  expectRefused(run, &v, {"sequence length 9", "1..8", "--max-seq"});
  v.seq = 0;
  expectRefused(run, &v, {"sequence length 0"});

  // The limits themselves are fine, and an error does not stick.
  v.batch = kMaxBatch, v.seq = kMaxSeq;
  std::vector<float> logits(size_t(kMaxBatch * kMaxSeq * kVocab));
  float loss = 0;
  EXPECT_EQ(run.model.forward(run.param(), &v, run.workspace.data, &loss,
                              logits.data()),
            LAP_OK)
      << run.model.lastError();
  EXPECT_TRUE(std::isfinite(loss));
}

TEST(ModelLoadingTest, TokensOutsideVocabulary) {
  ModelRun run(path("gpt"));
  ASSERT_EQ(run.model.initParams(run.param(), 1), LAP_OK);
  Batch b = textBatch(2, 5, kVocab, 3);
  // Element [1, 2] of [2, 5] tensors.
  b.tokens[7] = kVocab;
  lap_batch v = b.view();
  expectRefused(run, &v, {"'tokens'", "holds 512 at [1, 2]", "0..511"});
  b.tokens[7] = -1; // -1 is only for targets
  expectRefused(run, &v, {"'tokens'", "holds -1 at [1, 2]"});
  b.tokens[7] = 0;
  b.targets[3] = kVocab;
  expectRefused(run, &v, {"'targets'", "holds 512 at [0, 3]"});
  b.targets[3] = -2;
  expectRefused(run, &v, {"'targets'", "holds -2 at [0, 3]"});
  b.targets[3] = -1; // ignored, not an error
  float loss = 0;
  const uint64_t seed = 0;
  EXPECT_EQ(run.model.trainStep(run.param(), run.grad(), &v, &seed,
                                run.workspace.data, &loss),
            LAP_OK)
      << run.model.lastError();
}

TEST(ModelLoadingTest, NullPointers) {
  ModelRun run(path("gpt"));
  ASSERT_EQ(run.model.initParams(run.param(), 1), LAP_OK);
  Batch b = textBatch(2, 5, kVocab, 3);
  lap_batch v = b.view();

  const void *withNull[] = {b.tokens.data(), nullptr};
  lap_batch nullTensor = v;
  nullTensor.tensors = withNull;
  expectRefused(run, &nullTensor, {"batch tensor 'targets' is null"});
  expectRefused(run, nullptr, {"the batch is null"});
  lap_batch noTensors = v;
  noTensors.tensors = nullptr;
  expectRefused(run, &noTensors, {"the batch is null"});
  lap_batch oneTensor = v;
  oneTensor.count = 1;
  expectRefused(run, &oneTensor, {"1 tensors", "takes 2"});

  float loss = 0;
  std::vector<float> logits(size_t(2 * 5 * kVocab));
  EXPECT_EQ(
      run.model.forward(nullptr, &v, run.workspace.data, &loss, logits.data()),
      LAP_INVALID_ARGUMENT);
  EXPECT_NE(run.model.lastError().find("must not be null"), std::string::npos);
  const uint64_t seed = 0;
  EXPECT_EQ(
      run.model.trainStep(run.param(), run.grad(), &v, &seed, nullptr, &loss),
      LAP_INVALID_ARGUMENT);
  EXPECT_NE(run.model.lastError().find("must not be null"), std::string::npos);
  EXPECT_EQ(run.model.trainStep(run.param(), run.grad(), &v, nullptr,
                                run.workspace.data, &loss),
            LAP_INVALID_ARGUMENT);
  EXPECT_NE(run.model.lastError().find("must not be null"), std::string::npos);
  EXPECT_EQ(run.model.initParams(nullptr, 1), LAP_INVALID_ARGUMENT);
  EXPECT_NE(run.model.lastError().find("params is null"), std::string::npos);
}

TEST(ModelLoadingTest, ImageModelChecksBatchAndImageSize) {
  ModelRun run(path("vit"));
  ASSERT_EQ(run.model.initParams(run.param(), 1), LAP_OK);
  Batch b = imageBatch(kMaxBatch + 1, 3, 8, 5, 3);
  lap_batch v = b.view();
  v.batch = kMaxBatch + 1;
  expectRefused(run, &v, {"batch size 4", "1..3"});
  v.batch = 0;
  expectRefused(run, &v, {"batch size 0"});
  // seq picks an image size by its tokens (lap/model.h): 0 or the compiled
  // size's; this model has no other.
  const int64_t tokens = run.model.manifest()["images"]["tokens"][0];
  v.batch = 2, v.seq = 1000;
  expectRefused(run, &v,
                {"sequence length 1000", std::to_string(tokens), "0 is the"});
  float loss = 0;
  std::vector<float> logits(size_t(2 * 5));
  for (int64_t seq : {int64_t(0), tokens}) {
    v.seq = seq;
    EXPECT_EQ(run.model.forward(run.param(), &v, run.workspace.data, &loss,
                                logits.data()),
              LAP_OK)
        << run.model.lastError();
  }
}

//===----------------------------------------------------------------------===//
// Initialisation
//===----------------------------------------------------------------------===//

TEST(ModelLoadingTest, InitIsReproducibleAndSeeded) {
  for (const char *name : {"gpt", "vit", "uniform"}) {
    SCOPED_TRACE(name);
    ModelRun a(path(name)), b(path(name));
    ASSERT_EQ(a.model.initParams(a.param(), 42), LAP_OK);
    ASSERT_EQ(b.model.initParams(b.param(), 42), LAP_OK);
    EXPECT_EQ(
        std::memcmp(a.param(), b.param(), size_t(a.elements()) * sizeof(float)),
        0);
    ASSERT_EQ(b.model.initParams(b.param(), 43), LAP_OK);
    // Another seed changes every random tensor (almost every entry) and no
    // constant one.
    for (const ParameterInfo &p : a.model.parameters()) {
      int64_t same = 0;
      for (int64_t i = p.offset; i < p.offset + p.elements; ++i)
        same += a.param()[i] == b.param()[i];
      if (p.init == "constant")
        EXPECT_EQ(same, p.elements) << p.name;
      else
        EXPECT_LE(same, p.elements / 100) << p.name;
    }
  }
}

/// The standard deviation the manifest's init implies: the value itself for
/// normal and uniform (a = sqrt(3) std); for trunc_normal, a normal of that
/// std cut at 2 std, whose std is 0.8796 of it.
double expectedStd(const ParameterInfo &p) {
  return p.init == "trunc_normal" ? 0.87962 * p.initValue : p.initValue;
}

TEST(ModelLoadingTest, InitFollowsManifest) {
  for (const char *name : {"gpt", "vit", "uniform"}) {
    SCOPED_TRACE(name);
    ModelRun run(path(name));
    ASSERT_EQ(run.model.initParams(run.param(), 5), LAP_OK);
    for (const ParameterInfo &p : run.model.parameters()) {
      SCOPED_TRACE(p.name);
      const float *x = run.param() + p.offset;
      if (p.init == "constant") {
        for (int64_t i = 0; i < p.elements; ++i)
          ASSERT_EQ(x[i], float(p.initValue)) << "entry " << i;
        continue;
      }
      double sum = 0, sq = 0, top = 0, sigma = expectedStd(p);
      for (int64_t i = 0; i < p.elements; ++i) {
        sum += x[i];
        sq += double(x[i]) * x[i];
        top = std::max(top, std::abs(double(x[i])));
      }
      double n = double(p.elements), mean = sum / n;
      double sd = std::sqrt(sq / n - mean * mean);
      // Five standard errors: of the mean, std / sqrt(n); of the sample
      // std, at most 0.75 std / sqrt(n) for these distributions.
      EXPECT_NEAR(mean, 0, 5 * sigma / std::sqrt(n));
      EXPECT_NEAR(sd, sigma, 5 * 0.75 * sigma / std::sqrt(n));
      if (p.init == "uniform")
        EXPECT_LE(top, std::sqrt(3.0) * p.initValue * (1 + 1e-6));
      if (p.init == "trunc_normal")
        EXPECT_LE(top, 2 * p.initValue * (1 + 1e-6));
    }
  }
}

// The spec's zero and one initialisations, by name: biases and LayerNorm
// shifts 0, LayerNorm scales 1, output projections 0 (zero_out_proj),
// LayerScale at layer_scale.
TEST(ModelLoadingTest, InitConstantsByName) {
  for (std::string name : {"gpt", "vit"}) {
    SCOPED_TRACE(name);
    ModelRun run(path(name));
    ASSERT_EQ(run.model.initParams(run.param(), 5), LAP_OK);
    bool zeroOutProj = name == "gpt"; // only the gpt spec sets it
    int checked = 0;
    for (const ParameterInfo &p : run.model.parameters()) {
      const std::string &n = p.name;
      auto ends = [&](const std::string &suffix) {
        return n.size() >= suffix.size() &&
               n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      float value = 0;
      if (ends(".bias") ||
          (zeroOutProj && (ends("attn.proj.weight") || ends("fc2.weight"))))
        value = 0;
      else if (n.find("norm") != std::string::npos && ends(".weight"))
        value = 1;
      else if (ends(".ls1") || ends(".ls2"))
        value = 0.1f;
      else
        continue;
      ++checked;
      const float *x = run.param() + p.offset;
      for (int64_t i = 0; i < p.elements; ++i)
        ASSERT_EQ(x[i], value) << n << " entry " << i;
    }
    // gpt: 10 per block and the final norm's 2; vit: 10 in its block and 4.
    EXPECT_EQ(checked, name == "gpt" ? 22 : 14);
  }
}

// A big normal tensor: wte.weight, 512 x 64 at std 0.02. Besides its mean
// and std, 4.55% of a normal lies beyond 2 std (a uniform or truncated
// distribution of the same std has none or few there).
TEST(ModelLoadingTest, InitNormalOnBigTensor) {
  ModelRun run(path("gpt"));
  ASSERT_EQ(run.model.initParams(run.param(), 123), LAP_OK);
  const ParameterInfo &p = run.info("wte.weight");
  ASSERT_EQ(p.init, "normal");
  ASSERT_DOUBLE_EQ(p.initValue, 0.02);
  ASSERT_EQ(p.elements, 512 * 64);
  const float *x = run.param() + p.offset;
  double sum = 0, sq = 0;
  int64_t tails = 0;
  for (int64_t i = 0; i < p.elements; ++i) {
    sum += x[i];
    sq += double(x[i]) * x[i];
    tails += std::abs(x[i]) > 0.04f;
  }
  double n = double(p.elements), mean = sum / n,
         sd = std::sqrt(sq / n - mean * mean);
  // Standard errors: mean 0.02 / 181 = 1.1e-4; std 0.02 / 256 = 7.8e-5;
  // tail fraction sqrt(0.0455 * 0.9545 / n) = 1.2e-3. Five of each.
  EXPECT_NEAR(mean, 0, 5.5e-4);
  EXPECT_NEAR(sd, 0.02, 4e-4);
  EXPECT_NEAR(double(tails) / n, 0.0455, 6e-3);
}

// A training step reads its seed through the pointer when it runs (what
// lets a step captured in a CUDA graph draw new masks at each replay): the
// same pointer holding another seed draws other dropout masks (GPT-2-style
// model: the dropout kernels) and drop-path masks (ViT: drawn in generated
// loops), and holding the first seed again, the first step's bits.
TEST(ModelLoadingTest, TrainStepReadsItsSeedThroughThePointer) {
  namespace mixed = lap::test::mixed;
  for (const mixed::Case &c : {mixed::kCases[0], mixed::kCases[2]}) {
    SCOPED_TRACE(c.name);
    ModelRun run(compiled(std::string("seed_") + c.name, c.yaml,
                          mixed::kMaxBatch, c.image ? 0 : mixed::kMaxSeq));
    ASSERT_EQ(run.model.initParams(run.param(), 5), LAP_OK);
    Batch b = c.image ? imageBatch(3, 3, 8, 5, 7) : textBatch(3, 11, 64, 7);
    lap_batch v = b.view();
    uint64_t seed = 1;
    auto step = [&] {
      float loss = 0;
      EXPECT_EQ(run.model.trainStep(run.param(), run.grad(), &v, &seed,
                                    run.workspace.data, &loss),
                LAP_OK)
          << run.model.lastError();
      return loss;
    };
    float first = step();
    seed = 2;
    EXPECT_NE(step(), first);
    seed = 1;
    EXPECT_EQ(step(), first);
  }
}

} // namespace
