//===- TokenizerTest.cpp - byte-level BPE tokenizer -----------------------===//
//
// Round trips on any byte string, training on corpora with known merges,
// save/load, and tiny handwritten tiktoken and GPT-2 files with ids worked
// out by hand.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Tokenizer.h"
#include "test/unit/TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using lap::data::Tokenizer;
namespace fs = std::filesystem;

namespace {

using lap::test::TempDir;

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string corpus() {
  return "The quick brown fox jumps over the lazy dog. "
         "The dog doesn't care; the fox is quick and the dog is lazy.\n"
         "Numbers: 12345 678 9 and 2024-01-01, prices $3.50 and $12.99!\n"
         "Über café naïve façade — 東京 北京 你好世界 こんにちは "
         "😀👍🏽\n";
}

// A corpus of generated "sentences": Zipf-distributed words built from
// syllables, with punctuation and numbers.
std::string generatedText(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  const char *syll[] = {"th", "e",  "an", "re", "on", "at", "en", "nd",
                        "ti", "es", "or", "te", "of", "ed", "is", "it",
                        "al", "ar", "st", "to", "nt", "ng", "se", "ha"};
  std::vector<std::string> words;
  for (int i = 0; i < 5000; ++i) {
    std::string w;
    int n = 1 + int(rng() % 4);
    for (int k = 0; k < n; ++k)
      w += syll[rng() % 24];
    words.push_back(w);
  }
  std::vector<double> weights;
  for (size_t i = 0; i < words.size(); ++i)
    weights.push_back(1.0 / double(i + 1));
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::string out;
  out.reserve(bytes + 64);
  bool capital = true;
  while (out.size() < bytes) {
    std::string w = words[pick(rng)];
    if (capital)
      w[0] = char(w[0] - 'a' + 'A');
    capital = false;
    out += w;
    unsigned r = rng() % 100;
    if (r < 8) {
      out += ". ";
      capital = true;
    } else if (r < 12) {
      out += ", ";
    } else if (r < 13) {
      out += " " + std::to_string(rng() % 10000) + " ";
    } else if (r < 14) {
      out += ".\n\n";
      capital = true;
    } else {
      out += ' ';
    }
  }
  return out;
}

std::vector<std::string> unicodeSamples() {
  return {
      "",
      "a",
      "Hello, world! It's 2024; we'll see.  Tabs\tand\r\nnewlines\n\n\n",
      "日本語のテキストと中文文本，还有한국어 텍스트。",
      "Emoji: 😀👍🏽👨‍👩‍👧‍👦🏳️‍🌈 flags "
      "🇫🇷🇯🇵",
      "Combining: e\xCC\x81 a\xCC\x8A\xCC\x81 Z\xCC\x87\xCC\xA8 "
      "\xE0\xA4\xA8\xE0\xA4\xBF (नमस्ते)",
      "Ελληνικά, русский, العربية, עברית, ไทย",
      "   leading and trailing spaces   ",
      "1234567890 3.14159 1e-9 0xDEADBEEF",
      std::string("nul\0inside\0\0text", 17),
  };
}

Tokenizer trainedOnCorpus(uint32_t vocab = 400) {
  std::string text = corpus() + generatedText(20000, 1);
  static std::string keep; // views must outlive train() only
  keep = text;
  return Tokenizer::train({keep}, vocab);
}

// GPT-2's bytes_to_unicode, written out independently: the code point that
// stands for byte b, and the order in which bytes get ranks 0..255.
std::vector<int> gpt2ByteOrder() {
  std::vector<int> order;
  for (int b = '!'; b <= '~'; ++b)
    order.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b)
    order.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b)
    order.push_back(b);
  for (int b = 0; b < 256; ++b)
    if (std::find(order.begin(), order.end(), b) == order.end())
      order.push_back(b);
  return order;
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string gpt2Char(int byte) {
  std::vector<int> order = gpt2ByteOrder();
  // The first 188 bytes are printable and stand for themselves.
  auto pos =
      size_t(std::find(order.begin(), order.end(), byte) - order.begin());
  return pos < 188 ? utf8(uint32_t(byte)) : utf8(uint32_t(256 + pos - 188));
}

std::string gpt2Token(const std::string &bytes) {
  std::string s;
  for (unsigned char c : bytes)
    s += gpt2Char(c);
  return s;
}

// Expects `f` to throw std::runtime_error whose message contains `needle`.
template <typename F> void expectError(F f, const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning " << needle;
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << e.what() << "\n  should mention: " << needle;
  }
}

} // namespace

//--- Round trips --------------------------------------------------------------

TEST(Tokenizer, BytesOnlyRoundTrip) {
  Tokenizer t = Tokenizer::train({}, 265);
  EXPECT_EQ(t.numRanks(), 256u);
  EXPECT_EQ(t.vocabSize(), 265u);
  for (const std::string &s : unicodeSamples()) {
    std::vector<uint32_t> ids = t.encode(s);
    EXPECT_EQ(ids.size(), s.size());
    EXPECT_EQ(t.decode(ids), s);
  }
}

TEST(Tokenizer, AsciiAndUnicodeRoundTrip) {
  Tokenizer t = trainedOnCorpus();
  for (const std::string &s : unicodeSamples())
    EXPECT_EQ(t.decode(t.encode(s)), s) << s;
  EXPECT_EQ(t.decode(t.encode(corpus())), corpus());
}

TEST(Tokenizer, RandomBytesRoundTrip) {
  Tokenizer t = trainedOnCorpus();
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s(rng() % 64, '\0');
    for (char &c : s)
      c = char(rng() % 256);
    // Mix in valid text so invalid bytes sit next to real chunks.
    if (iter % 3 == 0)
      s.insert(rng() % (s.size() + 1), "héllo 世界 ");
    ASSERT_EQ(t.decode(t.encode(s)), s) << "iteration " << iter;
  }
  for (std::string s :
       {std::string("\xFF"), std::string("\xC3"), std::string("ab\xE4\xB8"),
        std::string("\xED\xA0\x80 surrogate"), std::string("\xC0\xAF over"),
        std::string("\xF4\x90\x80\x80 too big"), std::string("\0", 1),
        std::string(" \xFF\xFE text \x80\x80\x80")})
    EXPECT_EQ(t.decode(t.encode(s)), s);
}

TEST(Tokenizer, LongRunsRoundTrip) {
  Tokenizer t = trainedOnCorpus();
  for (std::string s : {std::string(100000, ' '), std::string(100000, 'a'),
                        std::string(50000, '\n'), std::string(30000, '7')})
    EXPECT_EQ(t.decode(t.encode(s)), s);
}

//--- Training -----------------------------------------------------------------

TEST(Tokenizer, TrainLearnsMostFrequentPairsFirst) {
  // Chunks: "ab" x1, " ab" x2, " abc" x1. (a,b) occurs 4 times, then
  // (' ', ab) 3 times, then (" ab", c) once.
  std::string text = "ab ab ab abc";
  Tokenizer t = Tokenizer::train({text}, 256 + 3 + 9);
  ASSERT_EQ(t.numRanks(), 259u);
  EXPECT_EQ(t.tokenBytes(256), "ab");
  EXPECT_EQ(t.tokenBytes(257), " ab");
  EXPECT_EQ(t.tokenBytes(258), " abc");
  EXPECT_EQ(t.bosId(), 267u);
  EXPECT_EQ(t.encode(text), (std::vector<uint32_t>{256, 257, 257, 258}));
}

TEST(Tokenizer, TrainBreaksTiesBySmallestPair) {
  // "xy" and "zw" both occur twice: (x,y) < (z,w) by id, so "xy" first.
  std::string text = "zw\nxy\nzw\nxy";
  Tokenizer t = Tokenizer::train({text}, 256 + 2 + 9);
  EXPECT_EQ(t.tokenBytes(256), "xy");
  EXPECT_EQ(t.tokenBytes(257), "zw");
}

TEST(Tokenizer, TrainCountsAcrossTextsAndStopsWhenNothingIsLeft) {
  std::string a = "aaaa", b = "aaaa";
  Tokenizer t = Tokenizer::train({a, b}, 1000);
  // "aaaa" -> aa,aa -> aaaa: two merges and then no pair is left.
  EXPECT_EQ(t.numRanks(), 258u);
  EXPECT_EQ(t.tokenBytes(256), "aa");
  EXPECT_EQ(t.tokenBytes(257), "aaaa");
  EXPECT_EQ(t.encode("aaaaaa"), (std::vector<uint32_t>{257, 256}));
}

TEST(Tokenizer, TrainIsDeterministicAndReducesLength) {
  std::string text = generatedText(100000, 3);
  Tokenizer t1 = Tokenizer::train({text}, 512);
  Tokenizer t2 = Tokenizer::train({text}, 512);
  EXPECT_EQ(t1.vocabSize(), 512u);
  EXPECT_EQ(t1.numRanks(), 503u);
  for (uint32_t r = 0; r < t1.numRanks(); ++r)
    ASSERT_EQ(t1.tokenBytes(r), t2.tokenBytes(r));
  std::string sample = generatedText(5000, 99);
  std::vector<uint32_t> ids = t1.encode(sample);
  EXPECT_LT(ids.size() * 2, sample.size()); // > 2 bytes per token
  EXPECT_EQ(t1.decode(ids), sample);
}

// Naive BPE: recount every pair of every word at each step.
TEST(Tokenizer, TrainMatchesNaiveReference) {
  std::mt19937 rng(5);
  const char *syll[] = {"ab", "ra", "ca", "da", "b", "r", "a", "aa"};
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    if (i)
      text += ' ';
    for (int k = 1 + int(rng() % 3); k > 0; --k)
      text += syll[rng() % 8];
  }
  // With lowercase words and single spaces the chunks are "w" and " w".
  std::map<std::vector<uint32_t>, int64_t> wordCounts;
  for (size_t i = 0; i < text.size();) {
    size_t j = text.find(' ', i + 1);
    j = j == std::string::npos ? text.size() : j;
    ++wordCounts[std::vector<uint32_t>(text.begin() + long(i),
                                       text.begin() + long(j))];
    i = j;
  }
  std::vector<std::pair<std::vector<uint32_t>, int64_t>> words(
      wordCounts.begin(), wordCounts.end());
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b)
    tokens.emplace_back(1, char(b));
  for (int step = 0; step < 60; ++step) {
    std::map<std::pair<uint32_t, uint32_t>, int64_t> pairs;
    for (const auto &[w, c] : words)
      for (size_t i = 0; i + 1 < w.size(); ++i)
        pairs[{w[i], w[i + 1]}] += c;
    auto best = pairs.begin(); // smallest pair among the most frequent
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second)
        best = it;
    auto [a, b] = best->first;
    uint32_t id = uint32_t(tokens.size());
    tokens.push_back(tokens[a] + tokens[b]);
    for (auto &[w, c] : words) {
      std::vector<uint32_t> out;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == a && w[i + 1] == b) {
          out.push_back(id);
          ++i;
        } else {
          out.push_back(w[i]);
        }
      }
      w = out;
    }
  }
  Tokenizer t = Tokenizer::train({text}, 256 + 60 + 9);
  ASSERT_EQ(t.numRanks(), tokens.size());
  for (uint32_t r = 256; r < tokens.size(); ++r)
    EXPECT_EQ(t.tokenBytes(r), tokens[r]) << "rank " << r;
}

TEST(Tokenizer, TrainRejectsTooSmallVocabulary) {
  expectError([] { Tokenizer::train({}, 256); }, "vocabulary size");
}

//--- Special tokens -----------------------------------------------------------

TEST(Tokenizer, TrainingReservesNanochatsNineSpecialTokens) {
  std::string text = "<|user_start|> hi <|assistant_end|><|bos|>";
  Tokenizer t = trainedOnCorpus(300);
  const std::vector<std::string> names = {
      "<|user_start|>",    "<|user_end|>",     "<|assistant_start|>",
      "<|assistant_end|>", "<|python_start|>", "<|python_end|>",
      "<|output_start|>",  "<|output_end|>",   "<|bos|>"};
  ASSERT_EQ(t.specialTokens().size(), names.size());
  EXPECT_EQ(t.numRanks(), 300u - 9u); // counted in the vocabulary
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(t.specialId(names[i]), t.numRanks() + i) << names[i];
  EXPECT_EQ(t.bosId(), 299u); // the last id, data.bos's default
  for (uint32_t id : t.encode(text))
    EXPECT_LT(id, t.numRanks()) << "a special token from text";
  EXPECT_EQ(t.decode({*t.specialId("<|python_start|>")}), "<|python_start|>");
}

TEST(Tokenizer, BosFallsBackToEndOfText) {
  std::vector<std::string> ranks;
  for (int b = 0; b < 256; ++b)
    ranks.push_back(std::string(1, char(b)));
  Tokenizer gpt2 = Tokenizer::fromRanks(ranks, {{"<|endoftext|>", 256}});
  EXPECT_EQ(gpt2.bosId(), 256u);
  Tokenizer none = Tokenizer::fromRanks(ranks);
  EXPECT_FALSE(none.findBos());
  expectError([&] { none.bosId(); }, "no <|bos|> or <|endoftext|> token");
}

TEST(Tokenizer, SpecialTokensComeAfterRanksAndNeverFromText) {
  std::string text = "<|bos|> hello <|bos|>";
  Tokenizer t = Tokenizer::train({text}, 300, {"<|bos|>", "<|user_start|>"});
  EXPECT_EQ(t.specialId("<|bos|>"), t.numRanks());
  EXPECT_EQ(t.specialId("<|user_start|>"), t.numRanks() + 1);
  EXPECT_EQ(t.vocabSize(), t.numRanks() + 2);
  EXPECT_FALSE(t.specialId("<|nope|>"));
  std::vector<uint32_t> ids = t.encode(text);
  for (uint32_t id : ids)
    EXPECT_LT(id, t.numRanks());
  EXPECT_EQ(t.decode({t.bosId()}), "<|bos|>");
  EXPECT_THROW(t.decode({t.vocabSize()}), std::out_of_range);
}

//--- Files --------------------------------------------------------------------

TEST(Tokenizer, SaveLoadRoundTrip) {
  TempDir dir;
  Tokenizer t = trainedOnCorpus(600);
  std::string path = dir.file("tok.tiktoken");
  t.save(path);
  Tokenizer u = Tokenizer::loadTiktoken(path);
  EXPECT_EQ(u.vocabSize(), t.vocabSize());
  EXPECT_EQ(u.bosId(), t.bosId());
  EXPECT_EQ(u.pattern(), t.pattern());
  for (const std::string &s : unicodeSamples())
    EXPECT_EQ(u.encode(s), t.encode(s));
  EXPECT_EQ(u.encode(corpus()), t.encode(corpus()));

  // The ranks file alone is a plain tiktoken file.
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "AA== 0");
}

TEST(Tokenizer, TiktokenFixtureGivesHandComputedIds) {
  TempDir dir;
  std::string path = dir.file("tiny.tiktoken");
  std::ostringstream f;
  const char *b64 =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int b = 0; b < 256; ++b)
    f << b64[b >> 2] << b64[(b & 3) << 4] << "== " << b << "\n";
  f << "aGU= 256\n"      // "he"
    << "bGw= 257\n"      // "ll"
    << "bGxv 258\n"      // "llo"
    << "IHc= 259\n"      // " w"
    << "IHdvcmxk 260\n"; // " world"
  writeFile(path, f.str());
  Tokenizer t = Tokenizer::loadTiktoken(path, Tokenizer::kGpt4Pattern,
                                        {{"<|endoftext|>", 300}});
  EXPECT_EQ(t.vocabSize(), 301u);
  // "hello": he (256), ll (257), llo (258): [he, llo]. " world" is a token.
  EXPECT_EQ(t.encode("hello world"), (std::vector<uint32_t>{256, 258, 260}));
  // " wor": " w" then nothing: [259, o, r].
  EXPECT_EQ(t.encode(" wor"), (std::vector<uint32_t>{259, 'o', 'r'}));
  EXPECT_EQ(t.specialId("<|endoftext|>"), 300u);
  EXPECT_EQ(t.decode({256, 258, 300}), "hello<|endoftext|>");
  EXPECT_THROW(t.decode({280}), std::out_of_range);
}

TEST(Tokenizer, Gpt2FixtureGivesHandComputedIds) {
  TempDir dir;
  std::vector<int> order = gpt2ByteOrder();
  nlohmann::json enc = nlohmann::json::object();
  for (size_t r = 0; r < 256; ++r)
    enc[gpt2Char(order[r])] = r;
  std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {" ", "w"}, {"o", "r"}, {"3", "4"}};
  std::string bpe = "#version: 0.2\n";
  uint32_t id = 256;
  for (const auto &[l, r] : merges) {
    bpe += gpt2Token(l) + " " + gpt2Token(r) + "\n";
    enc[gpt2Token(l + r)] = id++;
  }
  enc["<|endoftext|>"] = id; // 262
  writeFile(dir.file("encoder.json"), enc.dump());
  writeFile(dir.file("vocab.bpe"), bpe);
  EXPECT_EQ(gpt2Token(" w"), "\xC4\xA0w"); // Ġw

  Tokenizer t =
      Tokenizer::loadGpt2(dir.file("encoder.json"), dir.file("vocab.bpe"));
  EXPECT_EQ(t.vocabSize(), 263u);
  EXPECT_EQ(t.specialId("<|endoftext|>"), 262u);
  EXPECT_EQ(t.pattern(), Tokenizer::kGpt2Pattern);
  // Byte ids follow bytes_to_unicode: '!' is 0, so 'o' = 78, 'l' = 75,
  // 'd' = 67. "hello" -> [hell (258), o]; " world" -> [Ġw, or, l, d].
  EXPECT_EQ(t.encode("hello world"),
            (std::vector<uint32_t>{258, 78, 259, 260, 75, 67}));
  // GPT-2 keeps digit runs whole, so "34" merges; GPT-4 would split 123|45.
  uint32_t one = '1' - '!', two = '2' - '!', five = '5' - '!';
  EXPECT_EQ(t.encode("12345"), (std::vector<uint32_t>{one, two, 261, five}));
  // Space is not printable in GPT-2's table: its id is past the 188.
  EXPECT_GE(t.encode(" ")[0], 188u);
  EXPECT_EQ(t.decode({258, 78, 262}), "hello<|endoftext|>");
  std::string s = "It's 2024 — naïve 東京 \xFF\xFE";
  EXPECT_EQ(t.decode(t.encode(s)), s);
}

//--- Errors -------------------------------------------------------------------

TEST(Tokenizer, MissingFilesNameThePath) {
  TempDir dir;
  std::string missing = dir.file("nope.tiktoken");
  expectError([&] { Tokenizer::loadTiktoken(missing); }, missing);
  expectError(
      [&] { Tokenizer::loadGpt2(dir.file("e.json"), dir.file("v.bpe")); },
      "v.bpe");
}

TEST(Tokenizer, MalformedTiktokenFilesAreRejected) {
  TempDir dir;
  std::string good;
  const char *b64 =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  auto byteLine = [&](int b) {
    return std::string{b64[b >> 2], b64[(b & 3) << 4], '=', '='} + " " +
           std::to_string(b) + "\n";
  };
  for (int b = 0; b < 256; ++b)
    good += byteLine(b);
  std::string path = dir.file("bad.tiktoken");

  writeFile(path, byteLine(0) + "QQ== 1 extra\n");
  expectError([&] { Tokenizer::loadTiktoken(path); }, path + ":2:");
  writeFile(path, byteLine(0) + "Q!== 1\n");
  expectError([&] { Tokenizer::loadTiktoken(path); },
              path + ":2: invalid base64");
  writeFile(path, byteLine(0) + byteLine(1) + "QQ== x1\n");
  expectError([&] { Tokenizer::loadTiktoken(path); },
              path + ":3: invalid rank");
  writeFile(path, good + "YWI= 5\n");
  expectError([&] { Tokenizer::loadTiktoken(path); }, path + ":257: rank 5");
  writeFile(path, good + "YWI= 300\n");
  expectError([&] { Tokenizer::loadTiktoken(path); }, "rank 256 is missing");
  writeFile(path, byteLine(0) + byteLine(1));
  expectError([&] { Tokenizer::loadTiktoken(path); }, "byte 2 is not a token");
  writeFile(path, good + "YQ== 256\n"); // "a" again
  expectError([&] { Tokenizer::loadTiktoken(path); }, "repeats");

  writeFile(path, good);
  writeFile(path + ".json", "{\"special_tokens\": {\"<|bos|>\": 3}}");
  expectError([&] { Tokenizer::loadTiktoken(path); }, "is a rank");
  writeFile(path + ".json", "{\"special_tokens\": ");
  expectError([&] { Tokenizer::loadTiktoken(path); }, path + ".json");
}

TEST(Tokenizer, MalformedGpt2FilesAreRejected) {
  TempDir dir;
  std::vector<int> order = gpt2ByteOrder();
  nlohmann::json enc = nlohmann::json::object();
  for (size_t r = 0; r < 256; ++r)
    enc[gpt2Char(order[r])] = r;
  std::string encPath = dir.file("encoder.json");
  std::string bpePath = dir.file("vocab.bpe");
  writeFile(encPath, enc.dump());

  writeFile(bpePath, "#version: 0.2\nh e\nl l l\n");
  expectError([&] { Tokenizer::loadGpt2(encPath, bpePath); }, bpePath + ":3:");
  writeFile(bpePath, "#version: 0.2\nh xyz\n");
  expectError([&] { Tokenizer::loadGpt2(encPath, bpePath); },
              bpePath + ":2: 'xyz' is not a token");
  // encoder.json lacks the merge's token.
  writeFile(bpePath, "#version: 0.2\nh e\n");
  expectError([&] { Tokenizer::loadGpt2(encPath, bpePath); }, encPath);
  // Wrong id for the merge.
  enc["he"] = 999;
  writeFile(encPath, enc.dump());
  expectError([&] { Tokenizer::loadGpt2(encPath, bpePath); }, "has id 999");
  writeFile(encPath, "{\"a\": 0,");
  expectError([&] { Tokenizer::loadGpt2(encPath, bpePath); }, encPath);
}

//--- Speed --------------------------------------------------------------------

// Not run by default: `--gtest_also_run_disabled_tests`. Trains vocab 2048 on
// $LAP_TOKENIZER_CORPUS, or on 5 MB of generated text.
TEST(Tokenizer, DISABLED_TrainSpeed) {
  std::string text;
  if (const char *p = std::getenv("LAP_TOKENIZER_CORPUS")) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    text = generatedText(5 << 20, 11);
  }
  auto t0 = std::chrono::steady_clock::now();
  Tokenizer t = Tokenizer::train({text}, 2048);
  auto t1 = std::chrono::steady_clock::now();
  std::vector<uint32_t> ids = t.encode(text);
  auto t2 = std::chrono::steady_clock::now();
  auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
  std::printf("train: %.2f MB, vocab %u in %.2f s; encode %.2f s, %.2f "
              "bytes/token\n",
              double(text.size()) / 1e6, t.vocabSize(), secs(t1 - t0),
              secs(t2 - t1), double(text.size()) / double(ids.size()));
  EXPECT_EQ(t.decode(ids), text);
}
