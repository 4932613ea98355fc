//===- TokenShardsTest.cpp - token shards and the LM data loader ----------===//
//
// Shards are written by writeShard or by hand (for the malformed ones) into
// a fresh temporary directory; the loader is checked on streams whose tokens
// equal their own offsets, so every token says where it came from.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TokenShards.h"
#include "test/unit/TempDir.h"

#include <gtest/gtest.h>

#include <cmath>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <stdexcept>

using namespace lap;
namespace fs = std::filesystem;

namespace {

class TokenShardsTest : public ::testing::Test {
protected:
  std::string file(const std::string &name) const { return dir_.file(name); }

  /// Writes a header and `payload` raw bytes of tokens, as given.
  std::string rawShard(const std::string &name, int32_t magic, int32_t version,
                       int32_t count, size_t payload) const {
    std::string path = file(name);
    int32_t header[kShardHeaderInts] = {magic, version, count};
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(header), sizeof header);
    std::string bytes(payload, '\0');
    out.write(bytes.data(), bytes.size());
    return path;
  }

  /// A shard holding tokens first, first + 1, ...
  std::string iotaShard(const std::string &name, uint32_t first, size_t n,
                        uint32_t vocab = 1u << 24) {
    std::vector<uint32_t> tokens(n);
    std::iota(tokens.begin(), tokens.end(), first);
    std::string path = file(name);
    writeShard(path, tokens, vocab);
    return path;
  }

  lap::test::TempDir dir_;
};

/// The error message of `f`, or "" if it did not throw std::runtime_error.
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

std::vector<uint32_t> randomTokens(size_t n, uint32_t vocab, uint32_t seed) {
  std::vector<uint32_t> tokens(n);
  uint64_t x = seed;
  for (uint32_t &t : tokens) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t = static_cast<uint32_t>(x >> 33) % vocab;
  }
  return tokens;
}

//===----------------------------------------------------------------------===//
// Shards
//===----------------------------------------------------------------------===//

TEST_F(TokenShardsTest, RoundTripVersion1) {
  auto tokens = randomTokens(1000, 50257, 1);
  tokens[0] = 50256;
  std::string path = file("v1.bin");
  writeShard(path, tokens, 50257);
  EXPECT_EQ(fs::file_size(path), kShardHeaderBytes + 2 * tokens.size());
  TokenShard shard(path);
  EXPECT_EQ(shard.version(), 1);
  EXPECT_EQ(shard.tokenBytes(), 2);
  EXPECT_EQ(shard.size(), tokens.size());
  EXPECT_EQ(shard.tokens(), tokens);
  EXPECT_EQ(shard.maxToken(), 50256u);
  EXPECT_NO_THROW(shard.checkVocab(50257));
  std::string err = errorOf([&] { shard.checkVocab(50256); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("token 50256 at index 0"), std::string::npos) << err;
}

TEST_F(TokenShardsTest, RoundTripVersion2) {
  auto tokens = randomTokens(777, 200000, 2);
  tokens[5] = 199999;
  std::string path = file("v2.bin");
  writeShard(path, tokens, 200000);
  EXPECT_EQ(fs::file_size(path), kShardHeaderBytes + 4 * tokens.size());
  TokenShard shard(path);
  EXPECT_EQ(shard.version(), 2);
  EXPECT_EQ(shard.size(), tokens.size());
  EXPECT_EQ(shard.tokens(), tokens);
  EXPECT_EQ(shard.maxToken(), 199999u);
  std::vector<uint32_t> part(10);
  shard.read(100, 10, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), tokens.begin() + 100));
  EXPECT_THROW(shard.read(770, 10, part.data()), std::runtime_error);
}

TEST_F(TokenShardsTest, UnigramEntropyByHand) {
  // Two shards together: tokens 3 and 7 twice each, 9 four times:
  // p = (1/4, 1/4, 1/2), H = 1.5 ln 2. One repeated token: H = 0.
  writeShard(file("a.bin"), {3, 7, 9, 9}, 16);
  writeShard(file("b.bin"), {9, 3, 7, 9}, 16);
  writeShard(file("c.bin"), {5, 5, 5}, 16);
  std::vector<TokenShard> two;
  two.emplace_back(file("a.bin"));
  two.emplace_back(file("b.bin"));
  EXPECT_NEAR(unigramEntropy(two), 1.5 * std::log(2.0), 1e-12);
  std::vector<TokenShard> one;
  one.emplace_back(file("c.bin"));
  EXPECT_EQ(unigramEntropy(one), 0.0);
}

TEST_F(TokenShardsTest, EmptyShard) {
  std::string path = file("empty.bin");
  writeShard(path, {}, 100);
  TokenShard shard(path);
  EXPECT_EQ(shard.size(), 0u);
  EXPECT_EQ(shard.maxToken(), 0u);
}

TEST_F(TokenShardsTest, VersionFollowsVocabulary) {
  std::vector<uint32_t> tokens = {0, 1, 65535};
  writeShard(file("a.bin"), tokens, 65536);
  writeShard(file("b.bin"), tokens, 65537);
  TokenShard a(file("a.bin")), b(file("b.bin"));
  EXPECT_EQ(a.version(), 1);
  EXPECT_EQ(b.version(), 2);
  EXPECT_EQ(a.tokens(), tokens);
  EXPECT_EQ(b.tokens(), tokens);
}

TEST_F(TokenShardsTest, WriteRefusesOutOfVocabularyAndLeavesNothing) {
  std::string path = file("bad.bin");
  std::string err = errorOf([&] { writeShard(path, {1, 2, 100}, 100); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("token 100 at index 2"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_empty(dir_.path()));
}

TEST_F(TokenShardsTest, WriteReplacesAtomicallyWithoutTemporaries) {
  std::string path = file("s.bin");
  writeShard(path, {1, 2, 3}, 10);
  writeShard(path, {4, 5}, 10);
  EXPECT_EQ(TokenShard(path).tokens(), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), {}), 1);
}

TEST_F(TokenShardsTest, BadMagic) {
  std::string path = rawShard("m.bin", 12345, 1, 0, 0);
  std::string err = errorOf([&] { TokenShard s(path); });
  EXPECT_EQ(err, path + ": bad magic 12345 (expected 20240520: not a token "
                        "shard)");
}

TEST_F(TokenShardsTest, WrongVersion) {
  std::string path = rawShard("v.bin", kShardMagic, 7, 0, 0);
  std::string err = errorOf([&] { TokenShard s(path); });
  EXPECT_NE(err.find(path + ": unsupported version 7"), std::string::npos)
      << err;
}

TEST_F(TokenShardsTest, Truncated) {
  std::string path = rawShard("t.bin", kShardMagic, 1, 1000, 1500);
  std::string err = errorOf([&] { TokenShard s(path); });
  EXPECT_EQ(err, path + ": truncated: header says 1000 tokens (2000 bytes) "
                        "but 1500 bytes follow");
}

TEST_F(TokenShardsTest, TrailingBytes) {
  std::string path = rawShard("x.bin", kShardMagic, 2, 10, 41);
  std::string err = errorOf([&] { TokenShard s(path); });
  EXPECT_EQ(err, path + ": trailing bytes: header says 10 tokens (40 bytes) "
                        "but 41 bytes follow");
}

TEST_F(TokenShardsTest, ShorterThanHeader) {
  std::string path = file("short.bin");
  std::ofstream(path) << "hello";
  std::string err = errorOf([&] { TokenShard s(path); });
  EXPECT_NE(err.find(path + ": too small for a token shard"), std::string::npos)
      << err;
}

TEST_F(TokenShardsTest, MissingFile) {
  std::string path = file("nope.bin");
  std::string err = errorOf([&] { TokenShard s(path); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
}

TEST_F(TokenShardsTest, SplitTokens) {
  std::vector<uint32_t> tokens(100);
  std::iota(tokens.begin(), tokens.end(), 0);
  auto [train, val] = splitTokens(tokens, 0.1);
  EXPECT_EQ(train.size(), 90u);
  EXPECT_EQ(val.size(), 10u);
  EXPECT_EQ(val.front(), 90u);
  EXPECT_EQ(splitPoint(100, 0), 100u);
  EXPECT_EQ(splitPoint(100, 1), 0u);
  EXPECT_THROW(splitPoint(100, 1.5), std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Loader
//===----------------------------------------------------------------------===//

/// Window starts of the next `batches` batches, read back from the tokens
/// (each token is its own stream offset).
std::vector<uint32_t> drawStarts(LmLoader &loader, int batches) {
  std::vector<uint32_t> starts;
  LmBatch batch;
  for (int i = 0; i < batches; ++i) {
    loader.next(batch);
    for (int64_t b = 0; b < batch.batch; ++b)
      starts.push_back(static_cast<uint32_t>(batch.inputs[b * batch.seq]));
  }
  return starts;
}

TEST_F(TokenShardsTest, LoaderEpochCoversEveryWindowOnce) {
  // Three shards, uneven, so windows cross shard boundaries, of both
  // versions; 1001 tokens and T = 10 give exactly 100 windows, 25 batches.
  std::vector<std::string> paths = {iotaShard("0.bin", 0, 333, 50257),
                                    iotaShard("1.bin", 333, 500),
                                    iotaShard("2.bin", 833, 168)};
  LmLoader loader(paths, {/*batch=*/4, /*seq=*/10, /*seed=*/42});
  ASSERT_EQ(loader.tokens(), 1001u);
  ASSERT_EQ(loader.trainWindows(), 100u);

  std::set<uint32_t> seen;
  LmBatch batch;
  for (int i = 0; i < 25; ++i) {
    loader.next(batch);
    ASSERT_EQ(batch.inputs.size(), 40u);
    for (int b = 0; b < 4; ++b) {
      uint32_t start = batch.inputs[b * 10];
      EXPECT_EQ(start % 10, 0u);
      EXPECT_TRUE(seen.insert(start).second) << "window " << start << " twice";
      for (int t = 0; t < 10; ++t) {
        EXPECT_EQ(batch.inputs[b * 10 + t], int32_t(start + t));
        EXPECT_EQ(batch.targets[b * 10 + t], int32_t(start + t + 1));
      }
    }
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(loader.position(), 100u);
  EXPECT_EQ(loader.epoch(), 1u);

  // The next epoch is another permutation of the same windows.
  std::vector<uint32_t> second = drawStarts(loader, 25);
  EXPECT_EQ(std::set<uint32_t>(second.begin(), second.end()), seen);
}

TEST_F(TokenShardsTest, LoaderOrderFollowsSeed) {
  std::vector<std::string> paths = {iotaShard("s.bin", 0, 2001)};
  LmLoader a(paths, {8, 10, 1}), b(paths, {8, 10, 1}), c(paths, {8, 10, 2});
  std::vector<uint32_t> first = drawStarts(a, 25);
  EXPECT_EQ(first, drawStarts(b, 25));
  EXPECT_NE(first, drawStarts(c, 25));
  // Shuffled, not in stream order; and the next epoch reshuffles.
  std::vector<uint32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(first, sorted);
  EXPECT_NE(first, drawStarts(a, 25));
}

TEST_F(TokenShardsTest, LoaderBatchesCrossEpochs) {
  // 7 windows, batches of 3: nothing is dropped at an epoch's end.
  std::vector<std::string> paths = {iotaShard("s.bin", 0, 71)};
  LmLoader loader(paths, {3, 10, 5});
  ASSERT_EQ(loader.trainWindows(), 7u);
  std::vector<uint32_t> starts = drawStarts(loader, 7); // three epochs
  for (int e = 0; e < 3; ++e) {
    std::set<uint32_t> epoch(starts.begin() + 7 * e,
                             starts.begin() + 7 * (e + 1));
    EXPECT_EQ(epoch.size(), 7u) << "epoch " << e;
  }
}

TEST_F(TokenShardsTest, LoaderSeekResumesExactly) {
  std::vector<std::string> paths = {iotaShard("a.bin", 0, 1000),
                                    iotaShard("b.bin", 1000, 1001)};
  LmLoaderOptions opts{4, 16, 9};
  LmLoader run(paths, opts);
  drawStarts(run, 37); // past the first epoch (125 windows)
  uint64_t saved = run.position();
  EXPECT_EQ(saved, 148u);

  LmBatch want, got;
  LmLoader resumed(paths, opts);
  resumed.seek(saved);
  for (int i = 0; i < 60; ++i) {
    run.next(want);
    resumed.next(got);
    ASSERT_EQ(want.inputs, got.inputs) << "batch " << i;
    ASSERT_EQ(want.targets, got.targets) << "batch " << i;
  }
  EXPECT_EQ(run.position(), resumed.position());
}

TEST_F(TokenShardsTest, LoaderValidationSplit) {
  // 1000 tokens, 20% held out: train [0, 800), validation [800, 1000).
  std::vector<std::string> paths = {iotaShard("s.bin", 0, 1000)};
  LmLoaderOptions opts{2, 10, 3};
  opts.valFraction = 0.2;
  LmLoader loader(paths, opts);
  EXPECT_EQ(loader.valBegin(), 800u);
  EXPECT_EQ(loader.trainWindows(), 79u);
  EXPECT_EQ(loader.valWindows(), 19u);

  // Training windows, over several epochs, never read a validation token.
  LmBatch batch;
  for (int i = 0; i < 200; ++i) {
    loader.next(batch);
    for (int32_t t : batch.targets)
      ASSERT_LT(t, 800);
  }

  // Validation: in order, deterministic, only validation tokens.
  auto val = loader.validation(3);
  std::vector<int32_t> starts;
  while (val.next(batch))
    for (int b = 0; b < 2; ++b) {
      starts.push_back(batch.inputs[b * 10]);
      for (int t = 0; t < 10; ++t)
        EXPECT_EQ(batch.targets[b * 10 + t], batch.inputs[b * 10 + t] + 1);
    }
  EXPECT_EQ(starts, (std::vector<int32_t>{800, 810, 820, 830, 840, 850}));

  auto all = loader.validation();
  int batches = 0;
  std::vector<int32_t> again;
  while (all.next(batch)) {
    ++batches;
    for (int32_t t : batch.inputs)
      EXPECT_GE(t, 800);
    if (batches <= 3)
      for (int b = 0; b < 2; ++b)
        again.push_back(batch.inputs[b * 10]);
  }
  EXPECT_EQ(batches, 9); // 19 windows, batches of 2
  EXPECT_EQ(again, starts);
  EXPECT_THROW(loader.validation(10), std::runtime_error);
}

TEST_F(TokenShardsTest, LoaderWholeFileValidation) {
  std::vector<std::string> paths = {iotaShard("val.bin", 0, 41)};
  LmLoaderOptions opts{2, 10, 0};
  opts.valFraction = 1;
  LmLoader loader(paths, opts);
  EXPECT_EQ(loader.trainWindows(), 0u);
  EXPECT_EQ(loader.valWindows(), 4u);
  EXPECT_THROW(loader.next(), std::runtime_error);
  auto val = loader.validation();
  LmBatch batch;
  ASSERT_TRUE(val.next(batch));
  EXPECT_EQ(batch.inputs[0], 0);
  ASSERT_TRUE(val.next(batch));
  EXPECT_EQ(batch.inputs[10], 30);
  EXPECT_FALSE(val.next(batch));
}

// Padded rows: each holds the first document that starts in its window (a
// window inside a document holds it whole), up to the next one or the
// window's end; inputs 0 and targets -1 after it, its length apart.
TEST_F(TokenShardsTest, LoaderPadsOneDocumentPerRow) {
  std::vector<uint32_t> tokens(41);
  std::iota(tokens.begin(), tokens.end(), 0u);
  const uint32_t bos = 99;
  tokens[3] = tokens[7] = tokens[25] = bos;
  std::string path = file("docs.bin");
  writeShard(path, tokens, 100);
  LmLoaderOptions opts{1, 10, 0};
  opts.valFraction = 1;
  opts.paddedBos = bos;
  LmLoader loader({path}, opts);
  auto val = loader.validation();
  LmBatch batch;
  std::vector<int32_t> lengths;
  for (uint32_t window = 0; val.next(batch); window += 10) {
    ASSERT_EQ(batch.lengths.size(), 1u);
    const int32_t length = batch.lengths[0];
    lengths.push_back(length);
    const uint32_t from = window == 0 ? 3 : window == 20 ? 25 : window;
    for (int32_t t = 0; t < 10; ++t) {
      EXPECT_EQ(batch.inputs[size_t(t)],
                t < length ? int32_t(tokens[from + uint32_t(t)]) : 0);
      EXPECT_EQ(batch.targets[size_t(t)],
                t < length ? int32_t(tokens[from + uint32_t(t) + 1]) : -1);
    }
    EXPECT_EQ(batch.tensors().size(), 3u);
  }
  // 3 .. 6 (the next document starts at 7), 10 .. 19 (inside one), 25 ..
  // 29 (cut at the window's end), 30 .. 39.
  EXPECT_EQ(lengths, (std::vector<int32_t>{4, 10, 5, 10}));
}

TEST_F(TokenShardsTest, LoaderChecksVocabulary) {
  std::vector<std::string> paths = {iotaShard("s.bin", 0, 100)};
  LmLoaderOptions opts{1, 10, 0};
  opts.vocabSize = 50;
  std::string err = errorOf([&] { LmLoader l(paths, opts); });
  EXPECT_NE(err.find(paths[0] + ": token 50 at index 50"), std::string::npos)
      << err;
}

} // namespace
