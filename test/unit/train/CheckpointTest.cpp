//===- CheckpointTest.cpp - safetensors files and checkpoints -------------===//
//
// The byte format against a hand-written file, every kind of corruption the
// reader must refuse (a flipped data byte by its checksum), state.json's
// validation, and the checkpoint directory's promises: atomic writes that
// survive a full disk, pruning, announcing incomplete checkpoints, and
// refusing a checkpoint of a different model.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"
#include "runtime/platform/Hash.h"
#include "test/unit/TempDir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using lap::CheckpointData;
using lap::DType;
using lap::TensorRef;

namespace {

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[i] = char((v >> (8 * i)) & 0xff);
  return s;
}

/// A file with the given header text and `dataBytes` zero bytes of data.
std::string rawFile(const std::string &header, size_t dataBytes) {
  return le64(header.size()) + header + std::string(dataBytes, '\0');
}

/// The message of the runtime_error `f` throws, or "" if it throws none.
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

class CheckpointTest : public ::testing::Test {
protected:
  void TearDown() override { lap::setCheckpointWriteFaultForTesting(nullptr); }
  std::string path(const std::string &name) const { return dir.file(name); }

  /// A small model checkpoint at `step` whose values depend on the step.
  CheckpointData smallCheckpoint(int64_t step) {
    weights.assign(6, float(step));
    bias.assign(3, float(step) + 0.5f);
    moment.assign(6, float(step) * 2);
    CheckpointData d;
    d.state.step = step;
    d.state.seed = 1234;
    d.state.rngState = {1, 2, uint64_t(step)};
    d.state.dataPosition = step * 4096;
    d.state.specName = "gpt_tiny";
    d.state.manifestHash = "abc123";
    d.parameters = {{"w", {2, 3}, weights.data()}, {"b", {3}, bias.data()}};
    d.optimizer = {{"adamw.m.w", {2, 3}, moment.data()}};
    return d;
  }
  const std::vector<lap::TensorSpec> smallSpec = {{"w", {2, 3}}, {"b", {3}}};

  lap::test::TempDir dir;
  std::vector<float> weights, bias, moment;
};

TEST_F(CheckpointTest, RoundTripsTensorsAndMetadata) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, scalar = {3.25f};
  std::vector<float> b(1000);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i) * 0.001f - 0.5f;
  std::vector<int64_t> counters = {-1, 0, int64_t(1) << 40};
  std::vector<uint8_t> bytes = {0, 1, 255, 7, 9};
  std::string file = path("t.safetensors");
  lap::writeSafetensors(file,
                        {{"layer.a", {2, 3}, a.data()},
                         {"layer.b", {10, 10, 10}, b.data()},
                         {"scalar", {}, scalar.data()},
                         {"empty", {0, 5}, static_cast<const float *>(nullptr)},
                         {"counters", {3}, counters.data()},
                         {"rng", {5}, bytes.data()}},
                        {{"format", "pt"}, {"note", "quote \" and \\"}});

  lap::SafetensorsFile f = lap::readSafetensors(file);
  EXPECT_EQ(f.order, (std::vector<std::string>{"layer.a", "layer.b", "scalar",
                                               "empty", "counters", "rng"}));
  EXPECT_EQ(f.metadata.at("format"), "pt");
  EXPECT_EQ(f.metadata.at("note"), "quote \" and \\");
  EXPECT_EQ(f.tensors.at("layer.a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.tensors.at("layer.a").f32, a);
  EXPECT_EQ(f.tensors.at("layer.b").f32, b);
  EXPECT_EQ(f.tensors.at("scalar").shape, std::vector<int64_t>{});
  EXPECT_EQ(f.tensors.at("scalar").f32, scalar);
  EXPECT_EQ(f.tensors.at("empty").shape, (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(f.tensors.at("empty").f32.empty());
  EXPECT_EQ(f.tensors.at("counters").dtype, DType::I64);
  EXPECT_EQ(f.tensors.at("counters").i64, counters);
  EXPECT_EQ(f.tensors.at("rng").dtype, DType::U8);
  EXPECT_EQ(f.tensors.at("rng").u8, bytes);
  // The data section starts 8-byte aligned.
  std::string raw = readBytes(file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | uint8_t(raw[i]);
  EXPECT_EQ(n % 8, 0u);
}

TEST_F(CheckpointTest, ByteLayoutMatchesTheSafetensorsFormat) {
  std::vector<float> a = {1.0f, -2.0f}, b = {0.5f};
  std::string file = path("tiny.safetensors");
  lap::writeSafetensors(file, {{"a", {2}, a.data()}, {"b", {1, 1}, b.data()}},
                        {{"format", "pt"}});
  std::string sums = R"({\"a\":\")" + lap::platform::contentHash(a.data(), 8) +
                     R"(\",\"b\":\")" +
                     lap::platform::contentHash(b.data(), 4) + R"(\"})";
  // 210 bytes of JSON padded with 6 spaces to 216 = 0xd8.
  std::string expected =
      std::string("\xd8\0\0\0\0\0\0\0", 8) +
      R"({"__metadata__":{"format":"pt","lap.xxh3":")" + sums +
      R"("},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]}})"
      "      " +
      std::string("\x00\x00\x80\x3f"  // 1.0f
                  "\x00\x00\x00\xc0"  // -2.0f
                  "\x00\x00\x00\x3f", // 0.5f
                  12);
  EXPECT_EQ(readBytes(file), expected);
  EXPECT_TRUE(lap::readSafetensors(file).checksummed);
}

TEST_F(CheckpointTest, AFlippedDataByteFailsItsChecksum) {
  std::vector<float> a = {1.0f, -2.0f, 3.0f};
  std::string file = path("flip.safetensors");
  lap::writeSafetensors(file, {{"a", {3}, a.data()}});
  std::string bytes = readBytes(file);
  bytes[bytes.size() - 5] ^= 0x01; // the second value's top byte: still finite
  writeBytes(file, bytes);
  std::string error = errorOf([&] { lap::readSafetensors(file); });
  EXPECT_NE(error.find(file + ": tensor 'a' does not match its checksum"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("the file is corrupt"), std::string::npos) << error;
}

TEST_F(CheckpointTest, ATensorWithoutAChecksumIsRefused) {
  std::string header =
      R"({"__metadata__":{"lap.xxh3":"{}"},)"
      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string file = path("nosum.safetensors");
  writeBytes(file, rawFile(header, 4));
  EXPECT_NE(errorOf([&] {
              lap::readSafetensors(file);
            }).find("tensor 'a' has no checksum in 'lap.xxh3'"),
            std::string::npos);
}

TEST_F(CheckpointTest, RejectsEveryCorruption) {
  std::string good =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  struct Case {
    const char *name;
    std::string bytes;
    const char *problem;
  } cases[] = {
      {"empty", "", "file too small"},
      {"short", "abc", "file too small"},
      {"header_beyond", le64(1000) + "{}", "header length 1000 goes beyond"},
      {"huge_header", le64(~uint64_t(0)) + "{}", "goes beyond the end"},
      {"bad_json", rawFile("{\"a\": [", 0), "invalid JSON header"},
      {"not_object", rawFile("[1,2]", 0), "not an object"},
      {"unknown_dtype",
       rawFile(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8),
       "unknown or unsupported dtype 'Q7'"},
      {"missing_shape",
       rawFile(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8), "'shape'"},
      {"negative_dim",
       rawFile(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "not a non-negative integer"},
      {"out_of_range",
       rawFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
       "go beyond the data section (8 bytes)"},
      {"reversed",
       rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
       "are reversed"},
      {"shape_mismatch",
       rawFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "hold 8 bytes, but shape [3] of F32 needs 12"},
      {"overlap",
       rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12),
       "overlap"},
      {"gap",
       rawFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
       "gap in the data section"},
      {"trailing_data", rawFile(good, 12),
       "data section has 12 bytes but the tensors cover 8"},
      {"truncated", rawFile(good, 5), "go beyond the data section (5 bytes)"},
      {"bad_metadata",
       rawFile(R"({"__metadata__":{"k":1},)" + good.substr(1), 8),
       "not a string"},
  };
  for (const Case &c : cases) {
    std::string file = path(std::string(c.name) + ".safetensors");
    writeBytes(file, c.bytes);
    std::string msg = errorOf([&] { lap::readSafetensors(file); });
    EXPECT_NE(msg.find(file + ": "), std::string::npos)
        << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.problem), std::string::npos) << c.name << ": " << msg;
  }
  std::string missing = path("missing.safetensors");
  EXPECT_NE(errorOf([&] { lap::readSafetensors(missing); }).find(missing),
            std::string::npos);
  // The good header itself is accepted.
  writeBytes(path("good.safetensors"), rawFile(good, 8));
  EXPECT_EQ(lap::readSafetensors(path("good.safetensors")).order.size(), 1u);
}

TEST_F(CheckpointTest, SavesAndLoadsACheckpoint) {
  std::string run = path("run");
  CheckpointData d = smallCheckpoint(200);
  d.state.extra = {{"lr", 0.001}};
  std::string saved = lap::saveCheckpoint(run, d);
  EXPECT_EQ(saved, (fs::path(run) / "step_000200").string());
  for (const char *f :
       {"model.safetensors", "optimizer.safetensors", "state.json"})
    EXPECT_TRUE(fs::is_regular_file(fs::path(saved) / f)) << f;
  EXPECT_EQ(lap::latestCheckpoint(run), saved);

  lap::LoadedCheckpoint c = lap::loadCheckpoint(saved, smallSpec);
  EXPECT_EQ(c.state.step, 200);
  EXPECT_EQ(c.state.seed, 1234u);
  EXPECT_EQ(c.state.rngState, (std::vector<uint64_t>{1, 2, 200}));
  EXPECT_EQ(c.state.dataPosition, 200 * 4096);
  EXPECT_EQ(c.state.specName, "gpt_tiny");
  EXPECT_EQ(c.state.manifestHash, "abc123");
  EXPECT_EQ(c.state.extra.at("lr"), 0.001);
  EXPECT_EQ(c.model.tensors.at("w").f32, weights);
  EXPECT_EQ(c.model.tensors.at("b").f32, bias);
  EXPECT_EQ(c.model.metadata.at("format"), "pt");
  EXPECT_EQ(c.optimizer.tensors.at("adamw.m.w").f32, moment);

  // Saving the same step again replaces it.
  lap::saveCheckpoint(run, smallCheckpoint(200));
  EXPECT_EQ(lap::loadCheckpoint(saved, smallSpec).state.extra.size(), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(run), {}), 1);
}

TEST_F(CheckpointTest, FailedWriteLeavesThePreviousCheckpoint) {
  std::string run = path("run");
  std::string previous = lap::saveCheckpoint(run, smallCheckpoint(100));

  for (const char *failing :
       {"model.safetensors", "optimizer.safetensors", "state.json"}) {
    lap::setCheckpointWriteFaultForTesting([&](const std::string &p) {
      return p.size() >= strlen(failing) &&
                     p.compare(p.size() - strlen(failing), std::string::npos,
                               failing) == 0
                 ? ENOSPC
                 : 0;
    });
    std::string msg =
        errorOf([&] { lap::saveCheckpoint(run, smallCheckpoint(200)); });
    std::string target = (fs::path(run) / "step_000200").string();
    EXPECT_NE(msg.find("cannot write checkpoint '" + target + "'"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(failing), std::string::npos) << msg;
    EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(target)) << failing;
    // Nothing else is left behind: only the previous checkpoint.
    EXPECT_EQ(std::distance(fs::directory_iterator(run), {}), 1) << failing;
    EXPECT_EQ(lap::latestCheckpoint(run), previous);
    EXPECT_EQ(lap::loadCheckpoint(previous, smallSpec).state.step, 100);

    // Failing to replace a checkpoint of the same step keeps the old one.
    msg = errorOf([&] { lap::saveCheckpoint(run, smallCheckpoint(100)); });
    EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
    EXPECT_EQ(std::distance(fs::directory_iterator(run), {}), 1) << failing;
    EXPECT_EQ(
        lap::loadCheckpoint(previous, smallSpec).model.tensors.at("w").f32,
        std::vector<float>(6, 100.0f));
  }
  lap::setCheckpointWriteFaultForTesting(nullptr);
  EXPECT_EQ(lap::latestCheckpoint(run), previous);
  std::string next = lap::saveCheckpoint(run, smallCheckpoint(200));
  EXPECT_EQ(lap::latestCheckpoint(run), next);
}

TEST_F(CheckpointTest, UnwritableDirectoryIsAClearError) {
  writeBytes(path("file"), "not a directory");
  std::string run = path("file") + "/run";
  std::string msg =
      errorOf([&] { lap::saveCheckpoint(run, smallCheckpoint(1)); });
  EXPECT_NE(msg.find("cannot write checkpoint '" + run + "/step_000001'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("cannot create directory '" + run + "'"),
            std::string::npos)
      << msg;
}

TEST_F(CheckpointTest, PermissionDeniedIsAClearError) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "running as root: permission bits do not stop writes, so "
                    "the permission-denied message is not checked";
  std::string locked = path("locked");
  fs::create_directory(locked);
  ::chmod(locked.c_str(), 0555);
  std::string msg =
      errorOf([&] { lap::saveCheckpoint(locked, smallCheckpoint(1)); });
  ::chmod(locked.c_str(), 0755);
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_NE(msg.find(locked), std::string::npos) << msg;
}

TEST_F(CheckpointTest, PruneKeepsTheNewestAndRemovesStaleTemporaries) {
  std::string run = path("run");
  EXPECT_EQ(lap::latestCheckpoint(run), std::nullopt);
  for (int64_t step : {100, 200, 300, 1000, 20000})
    lap::saveCheckpoint(run, smallCheckpoint(step));
  // A writer that died (no such pid), one still running (our parent), and
  // a directory that was never completed.
  fs::create_directories(fs::path(run) / ".step_030000.tmp-999999999");
  std::string live = ".step_030000.tmp-" + std::to_string(::getppid());
  fs::create_directories(fs::path(run) / live);
  fs::create_directories(fs::path(run) / "step_040000");
  EXPECT_EQ(lap::latestCheckpoint(run),
            (fs::path(run) / "step_020000").string());

  std::vector<std::string> removed = lap::pruneCheckpoints(run, 2);
  EXPECT_EQ(removed.size(), 4u);
  std::vector<std::string> left;
  for (const auto &e : fs::directory_iterator(run))
    left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{live, "step_001000", "step_020000",
                                            "step_040000"}));
  EXPECT_EQ(lap::pruneCheckpoints(run, 2).size(), 0u);
}

TEST_F(CheckpointTest, RefusesACheckpointOfAnotherModel) {
  std::string run = path("run");
  std::vector<float> qkv(768 * 256, 0.25f), norm(256, 1.0f);
  CheckpointData d;
  d.state.step = 5;
  d.parameters = {{"blocks.0.norm.weight", {256}, norm.data()},
                  {"blocks.0.attn.qkv.weight", {768, 256}, qkv.data()}};
  std::string saved = lap::saveCheckpoint(run, d);
  std::string model = (fs::path(saved) / "model.safetensors").string();
  std::string before = readBytes(model);

  std::string msg = errorOf([&] {
    lap::loadCheckpoint(saved, {{"blocks.0.norm.weight", {256}},
                                {"blocks.0.attn.qkv.weight", {384, 256}}});
  });
  EXPECT_EQ(msg, model + ": tensor 'blocks.0.attn.qkv.weight' has shape "
                         "[768, 256], the model expects [384, 256]");
  msg = errorOf([&] {
    lap::loadCheckpoint(saved, {{"blocks.0.attn.qkv.weight", {768, 256}}});
  });
  EXPECT_EQ(msg, model + ": tensor 'blocks.0.norm.weight' with shape [256] "
                         "is not a parameter of the model");
  msg = errorOf([&] {
    lap::loadCheckpoint(saved, {{"blocks.0.norm.weight", {256}},
                                {"blocks.0.attn.qkv.weight", {768, 256}},
                                {"head.weight", {10, 256}}});
  });
  EXPECT_EQ(msg, model + ": tensor 'head.weight' is missing, the model "
                         "expects shape [10, 256]");
  EXPECT_EQ(readBytes(model), before);
  EXPECT_EQ(
      lap::loadCheckpoint(saved, {{"blocks.0.norm.weight", {256}},
                                  {"blocks.0.attn.qkv.weight", {768, 256}}})
          .model.tensors.at("blocks.0.attn.qkv.weight")
          .f32,
      qkv);
}

TEST_F(CheckpointTest, RefusesACorruptCheckpointWithoutTouchingIt) {
  std::string saved = lap::saveCheckpoint(path("run"), smallCheckpoint(7));
  std::string model = (fs::path(saved) / "model.safetensors").string();
  std::string truncated = readBytes(model);
  truncated.resize(truncated.size() - 3);
  writeBytes(model, truncated);
  std::string msg = errorOf([&] { lap::loadCheckpoint(saved, smallSpec); });
  EXPECT_EQ(msg.find(model + ": "), 0u) << msg;
  EXPECT_EQ(readBytes(model), truncated);

  std::string state = (fs::path(saved) / "state.json").string();
  writeBytes(state, "{\"step\": ");
  msg = errorOf([&] { lap::loadCheckpoint(saved, smallSpec); });
  EXPECT_NE(msg.find(state + ": invalid JSON"), std::string::npos) << msg;

  msg = errorOf([&] { lap::loadCheckpoint(path("nothing"), smallSpec); });
  EXPECT_NE(msg.find(path("nothing")), std::string::npos) << msg;
}

TEST_F(CheckpointTest, SpecialFilesAreRefusedWithoutBlocking) {
  std::string saved = lap::saveCheckpoint(path("run"), smallCheckpoint(4));
  std::string model = (fs::path(saved) / "model.safetensors").string();
  std::string state = (fs::path(saved) / "state.json").string();
  for (const std::string &file : {model, state}) {
    fs::remove(file);
    ASSERT_EQ(::mkfifo(file.c_str(), 0644), 0) << file;
  }
  // Both would block forever if opened for reading without a writer.
  EXPECT_EQ(errorOf([&] { lap::readSafetensors(model); }),
            model + ": a FIFO, not a regular file");
  EXPECT_EQ(errorOf([&] { lap::loadCheckpoint(saved, smallSpec); }),
            state + ": a FIFO, not a regular file");
}

TEST_F(CheckpointTest, StateJsonIsValidated) {
  std::string saved = lap::saveCheckpoint(path("run"), smallCheckpoint(7));
  std::string state = (fs::path(saved) / "state.json").string();
  nlohmann::json good = nlohmann::json::parse(readBytes(state));
  struct Case {
    const char *key;
    nlohmann::json value; // null: the key removed
    const char *problem;
  } cases[] = {
      {"step", 600,
       "'step' is 600, but the checkpoint's directory is of step 7"},
      {"step", -7, "'step' is -7, outside 0.."},
      {"step", "7", "'step' is not an integer"},
      {"data_position", -1, "'data_position' is -1, outside 0.."},
      {"seed", -3, "'seed' is not a non-negative integer"},
      {"rng_state", {1, -2}, "'rng_state' holds -2"},
      {"manifest_hash", nullptr, "'manifest_hash' is missing"},
      {"schedule", 3, "'schedule' is not an object"},
      {"version", 1, "version 1; this lap reads version 2 checkpoints"},
      {"format", "other", "not a lap checkpoint state"},
  };
  for (const Case &c : cases) {
    nlohmann::json bad = good;
    if (c.value.is_null())
      bad.erase(c.key);
    else
      bad[c.key] = c.value;
    writeBytes(state, bad.dump());
    std::string msg = errorOf([&] { lap::loadCheckpoint(saved, smallSpec); });
    EXPECT_EQ(msg.find(state + ": "), 0u) << c.key << ": " << msg;
    EXPECT_NE(msg.find(c.problem), std::string::npos) << c.key << ": " << msg;
  }
  writeBytes(state, good.dump());
  EXPECT_EQ(lap::loadCheckpoint(saved, smallSpec).state.step, 7);
}

TEST_F(CheckpointTest, ACheckpointWithoutChecksumsIsRefused) {
  std::string saved = lap::saveCheckpoint(path("run"), smallCheckpoint(3));
  std::string model = (fs::path(saved) / "model.safetensors").string();
  std::vector<float> w(6, 3.0f), b(3, 3.5f);
  // The same tensors as a plain safetensors file (as another tool writes).
  std::string header =
      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[24,36]}})";
  writeBytes(model,
             le64(header.size()) + header +
                 std::string(reinterpret_cast<const char *>(w.data()), 24) +
                 std::string(reinterpret_cast<const char *>(b.data()), 12));
  EXPECT_FALSE(lap::readSafetensors(model).checksummed);
  std::string msg = errorOf([&] { lap::loadCheckpoint(saved, smallSpec); });
  EXPECT_NE(msg.find(model + ": has no tensor checksums"), std::string::npos)
      << msg;
}

TEST_F(CheckpointTest, IncompleteCheckpointsNewerThanTheLatestAreListed) {
  std::string run = path("run");
  lap::saveCheckpoint(run, smallCheckpoint(10));
  std::string broken = lap::saveCheckpoint(run, smallCheckpoint(20));
  fs::remove(fs::path(broken) / "state.json");
  fs::create_directories(fs::path(run) / "step_000005"); // older: not listed
  EXPECT_EQ(lap::latestCheckpoint(run),
            (fs::path(run) / "step_000010").string());
  EXPECT_EQ(lap::incompleteCheckpoints(run),
            std::vector<std::string>{broken + " (no state.json)"});
}

TEST_F(CheckpointTest, PythonReadsTheFile) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with torch is not available; the "
                    "Python interoperability check did not run";
  std::vector<float> w = {1.5f, -2.0f, 3.0f, 0.0f, 1e-8f, -7.25f};
  std::vector<float> b = {42.0f};
  std::string file = path("py.safetensors");
  lap::writeSafetensors(
      file, {{"blocks.0.w", {3, 2}, w.data()}, {"bias", {1}, b.data()}},
      {{"format", "pt"}});
  // Reads the file the way the safetensors package does, with nothing but
  // json and struct, then hands the values to torch.
  std::string script = path("read.py");
  writeBytes(script, R"PY(
import json, struct, sys, torch
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
assert (8 + n) % 8 == 0, 'data section not aligned'
header = json.loads(raw[8:8 + n])
meta = header.pop('__metadata__')
assert meta['format'] == 'pt', meta
assert sorted(json.loads(meta['lap.xxh3'])) == ['bias', 'blocks.0.w'], meta
assert list(header) == ['blocks.0.w', 'bias'], list(header)
data = raw[8 + n:]
expect = {'blocks.0.w': ([3, 2], [1.5, -2.0, 3.0, 0.0, 1e-8, -7.25]),
          'bias': ([1], [42.0])}
for name, info in header.items():
    assert info['dtype'] == 'F32'
    b, e = info['data_offsets']
    values = struct.unpack('<%df' % ((e - b) // 4), data[b:e])
    t = torch.tensor(values, dtype=torch.float32).reshape(info['shape'])
    shape, want = expect[name]
    assert list(t.shape) == shape, (name, t.shape)
    assert torch.equal(t.flatten(), torch.tensor(want, dtype=torch.float32)), name
print('ok')
)PY");
  std::string cmd = "/usr/bin/python3 " + script + " " + file + " 2>&1";
  FILE *p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "ok\n");
}

} // namespace
