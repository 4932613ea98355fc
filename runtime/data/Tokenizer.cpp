//===- Tokenizer.cpp - Byte-level BPE tokenizer (tiktoken semantics) ------===//
//
// Splitting by PCRE2 (JIT when available), tiktoken's byte_pair_merge for
// encoding, nanochat rustbpe's training scheme (count unique chunks, then
// merge with incremental pair counts and a lazily updated max-heap), and the
// tiktoken / GPT-2 file formats.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Tokenizer.h"
#include "runtime/platform/Files.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <sys/stat.h>

namespace lap::data {

const char *const Tokenizer::kGpt4Pattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char *const Tokenizer::kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char *const Tokenizer::kBos = "<|bos|>";

namespace {

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
// Bounds the chunk cache; natural text has far fewer distinct chunks.
constexpr size_t kMaxCacheEntries = 1 << 20;

[[noreturn]] void fail(const std::string &msg) {
  throw std::runtime_error(msg);
}

struct CodeDeleter {
  void operator()(pcre2_code *c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data *m) const { pcre2_match_data_free(m); }
};

std::shared_ptr<pcre2_code> compilePattern(const std::string &pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // MATCH_INVALID_UTF: invalid bytes never match, so they fall into the gaps
  // between matches instead of making pcre2_match fail.
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof(buf));
    fail("tokenizer split pattern: " +
         std::string(reinterpret_cast<char *>(buf)) + " at offset " +
         std::to_string(offset));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // Interpreter if this fails.
  return std::shared_ptr<pcre2_code>(code, CodeDeleter());
}

// Calls `f` on consecutive chunks covering all of `text`: regex matches, and
// runs of invalid UTF-8 between them as chunks of their own.
template <typename F>
void forEachChunk(const pcre2_code *code, std::string_view text, F &&f) {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(code, nullptr));
  if (!md)
    throw std::bad_alloc();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, n = text.size();
  while (pos < n) {
    int rc = pcre2_match(code, subject, n, pos, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) // Huge chunk: the interpreter copes.
      rc = pcre2_match(code, subject, n, pos, PCRE2_NO_JIT, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      f(text.substr(pos));
      return;
    }
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof(buf));
      fail("tokenizer split: " + std::string(reinterpret_cast<char *>(buf)));
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md.get());
    size_t start = ov[0], end = ov[1];
    if (start > pos)
      f(text.substr(pos, start - pos));
    if (end == start) {
      // Custom patterns may match empty: take one character and go on.
      end = start + 1;
      while (end < n && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        ++end;
    }
    f(text.substr(start, end - start));
    pos = end;
  }
}

//--- Base64 -----------------------------------------------------------------

const char kB64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v =
        (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (size_t rest = in.size() - i) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (rest == 2)
      v |= uint8_t(in[i + 1]) << 8;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += rest == 2 ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view in) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t;
    t.fill(-1);
    for (int i = 0; i < 64; ++i)
      t[uint8_t(kB64[i])] = int8_t(i);
    return t;
  }();
  if (in.empty() || in.size() % 4)
    return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && in[in.size() - 1 - pad] == '=')
    ++pad;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    int8_t v = table[uint8_t(in[i])];
    if (v < 0)
      return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
    }
  }
  return out;
}

//--- GPT-2's bytes_to_unicode -------------------------------------------------

// Byte b is written in GPT-2 files as code point byteToCp[b]; printable
// Latin-1 bytes map to themselves, the others to 256 + n in byte order.
// Also the order in which GPT-2 ranks the single bytes.
struct Gpt2Bytes {
  std::array<uint32_t, 256> byteToCp{};
  std::vector<uint8_t> rankOrder; // byte with rank i
  std::unordered_map<uint32_t, uint8_t> cpToByte;
  Gpt2Bytes() {
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
             (b >= 0xAE && b <= 0xFF);
    };
    for (int b = 0; b < 256; ++b)
      if (printable(b)) {
        rankOrder.push_back(uint8_t(b));
        byteToCp[b] = uint32_t(b);
      }
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b)
      if (!printable(b)) {
        rankOrder.push_back(uint8_t(b));
        byteToCp[b] = 256 + n++;
      }
    for (int b = 0; b < 256; ++b)
      cpToByte[byteToCp[b]] = uint8_t(b);
  }
  // The bytes a GPT-2 token string stands for; nullopt if it is not valid
  // UTF-8 or has a code point outside the table.
  std::optional<std::string> decode(std::string_view s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      uint8_t c = uint8_t(s[i]);
      uint32_t cp;
      size_t len;
      if (c < 0x80) {
        cp = c;
        len = 1;
      } else if ((c & 0xE0) == 0xC0) {
        cp = c & 0x1F;
        len = 2;
      } else if ((c & 0xF0) == 0xE0) {
        cp = c & 0x0F;
        len = 3;
      } else {
        return std::nullopt; // The table stops at U+0143.
      }
      if (i + len > s.size())
        return std::nullopt;
      for (size_t k = 1; k < len; ++k) {
        uint8_t cc = uint8_t(s[i + k]);
        if ((cc & 0xC0) != 0x80)
          return std::nullopt;
        cp = (cp << 6) | (cc & 0x3F);
      }
      auto it = cpToByte.find(cp);
      if (it == cpToByte.end())
        return std::nullopt;
      out += char(it->second);
      i += len;
    }
    return out;
  }
};

const Gpt2Bytes &gpt2Bytes() {
  static const Gpt2Bytes table;
  return table;
}

bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// A decimal uint32 with nothing else around it.
std::optional<uint32_t> parseRank(std::string_view s) {
  if (s.empty() || s.size() > 10)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v >= kNoRank)
    return std::nullopt;
  return uint32_t(v);
}

// Whitespace-separated fields of a line.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t')
      ++j;
    if (j > i)
      out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

} // namespace

//--- Impl -------------------------------------------------------------------

struct Tokenizer::Impl {
  std::vector<std::string> tokens; // bytes by rank; never resized once built
  std::unordered_map<std::string_view, uint32_t> ranks; // views into tokens
  SpecialTokens specials;
  std::unordered_map<uint32_t, std::string> specialById;
  uint32_t vocabSize = 0;
  std::string pattern;
  std::shared_ptr<pcre2_code> code;

  mutable std::mutex cacheMutex;
  mutable std::unordered_map<std::string, std::vector<uint32_t>> cache;

  uint32_t rankOf(std::string_view bytes) const {
    auto it = ranks.find(bytes);
    return it == ranks.end() ? kNoRank : it->second;
  }

  // tiktoken's byte_pair_merge: repeatedly merge the adjacent pair whose
  // concatenation has the lowest rank (leftmost on ties).
  void bytePairEncode(std::string_view piece,
                      std::vector<uint32_t> &out) const {
    // (start of part, rank of this part joined with the next)
    std::vector<std::pair<size_t, uint32_t>> parts;
    parts.reserve(piece.size() + 1);
    for (size_t i = 0; i + 1 < piece.size(); ++i)
      parts.emplace_back(i, rankOf(piece.substr(i, 2)));
    parts.emplace_back(piece.size() - 1, kNoRank);
    parts.emplace_back(piece.size(), kNoRank);
    auto joinedRank = [&](size_t i) {
      if (i + 3 < parts.size())
        return rankOf(
            piece.substr(parts[i].first, parts[i + 3].first - parts[i].first));
      return kNoRank;
    };
    for (;;) {
      uint32_t minRank = kNoRank;
      size_t minIdx = 0;
      for (size_t i = 0; i + 1 < parts.size(); ++i)
        if (parts[i].second < minRank) {
          minRank = parts[i].second;
          minIdx = i;
        }
      if (minRank == kNoRank)
        break;
      if (minIdx > 0)
        parts[minIdx - 1].second = joinedRank(minIdx - 1);
      parts[minIdx].second = joinedRank(minIdx);
      parts.erase(parts.begin() + long(minIdx) + 1);
    }
    for (size_t i = 0; i + 1 < parts.size(); ++i)
      out.push_back(rankOf(
          piece.substr(parts[i].first, parts[i + 1].first - parts[i].first)));
  }

  void encodeChunk(std::string_view chunk, std::vector<uint32_t> &out) const {
    if (uint32_t r = rankOf(chunk); r != kNoRank) {
      out.push_back(r);
      return;
    }
    std::string key(chunk);
    {
      std::lock_guard<std::mutex> lock(cacheMutex);
      auto it = cache.find(key);
      if (it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<uint32_t> ids;
    bytePairEncode(chunk, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (cache.size() >= kMaxCacheEntries)
      cache.clear();
    cache.emplace(std::move(key), std::move(ids));
  }
};

Tokenizer Tokenizer::fromRanks(std::vector<std::string> tokens,
                               const SpecialTokens &specials,
                               const std::string &pattern) {
  auto impl = std::make_shared<Impl>();
  impl->tokens = std::move(tokens);
  impl->ranks.reserve(impl->tokens.size());
  for (size_t r = 0; r < impl->tokens.size(); ++r) {
    const std::string &t = impl->tokens[r];
    if (t.empty())
      fail("tokenizer: rank " + std::to_string(r) + " is an empty token");
    if (!impl->ranks.emplace(std::string_view(t), uint32_t(r)).second)
      fail("tokenizer: rank " + std::to_string(r) +
           " repeats the token of rank " + std::to_string(impl->ranks.at(t)));
  }
  // Every byte must be a token, or some byte strings could not be encoded.
  for (int b = 0; b < 256; ++b)
    if (!impl->ranks.count(std::string_view(std::string(1, char(b)))))
      fail("tokenizer: byte " + std::to_string(b) + " is not a token");
  uint32_t numRanks = uint32_t(impl->tokens.size());
  impl->vocabSize = numRanks;
  for (const auto &[name, id] : specials) {
    if (name.empty())
      fail("tokenizer: empty special token name");
    if (id < numRanks)
      fail("tokenizer: special token " + name + " has id " +
           std::to_string(id) + ", which is a rank");
    if (!impl->specialById.emplace(id, name).second)
      fail("tokenizer: special token id " + std::to_string(id) + " repeats");
    for (const auto &other : impl->specials)
      if (other.first == name)
        fail("tokenizer: special token " + name + " repeats");
    impl->specials.emplace_back(name, id);
    impl->vocabSize = std::max(impl->vocabSize, id + 1);
  }
  impl->pattern = pattern;
  impl->code = compilePattern(pattern);
  return Tokenizer(std::move(impl));
}

//--- Training ---------------------------------------------------------------

namespace {

using Pair = uint64_t;
inline Pair makePair(uint32_t a, uint32_t b) { return (Pair(a) << 32) | b; }

struct MergeJob {
  int64_t count;
  Pair pair;
  // Max-heap order: higher count first, then the smaller pair.
  bool operator<(const MergeJob &o) const {
    return count != o.count ? count < o.count : pair > o.pair;
  }
};

// Replaces every non-overlapping (a, b) in `word`, left to right, with `id`
// and records the change in adjacent-pair counts (per occurrence of the word).
void mergeWord(std::vector<uint32_t> &word, uint32_t a, uint32_t b, uint32_t id,
               std::vector<std::pair<Pair, int64_t>> &deltas) {
  std::vector<uint32_t> out;
  out.reserve(word.size());
  size_t n = word.size();
  for (size_t i = 0; i < n;) {
    if (i + 1 < n && word[i] == a && word[i + 1] == b) {
      if (!out.empty()) {
        deltas.emplace_back(makePair(out.back(), a), -1);
        deltas.emplace_back(makePair(out.back(), id), 1);
      }
      deltas.emplace_back(makePair(a, b), -1);
      if (i + 2 < n) {
        deltas.emplace_back(makePair(b, word[i + 2]), -1);
        deltas.emplace_back(makePair(id, word[i + 2]), 1);
      }
      out.push_back(id);
      i += 2;
    } else {
      out.push_back(word[i++]);
    }
  }
  word.swap(out);
}

} // namespace

Tokenizer Tokenizer::train(const std::vector<std::string_view> &texts,
                           uint32_t vocabSize,
                           const std::vector<std::string> &specials,
                           const std::string &pattern) {
  if (vocabSize < 256 + specials.size())
    fail("tokenizer: vocabulary size " + std::to_string(vocabSize) +
         " is below 256 bytes + " + std::to_string(specials.size()) +
         " special tokens");
  uint32_t numMerges = vocabSize - 256 - uint32_t(specials.size());

  // Distinct chunks with their counts: merging works per distinct chunk.
  std::shared_ptr<pcre2_code> code = compilePattern(pattern);
  std::unordered_map<std::string_view, int64_t> chunkCounts;
  for (std::string_view text : texts)
    forEachChunk(code.get(), text,
                 [&](std::string_view c) { ++chunkCounts[c]; });
  // Sorted so that training does not depend on hash-map iteration order.
  std::vector<std::pair<std::string_view, int64_t>> sortedChunks(
      chunkCounts.begin(), chunkCounts.end());
  std::sort(sortedChunks.begin(), sortedChunks.end());
  chunkCounts.clear();

  std::vector<std::vector<uint32_t>> words;
  std::vector<int64_t> counts;
  words.reserve(sortedChunks.size());
  counts.reserve(sortedChunks.size());
  std::unordered_map<Pair, int64_t> pairCounts;
  std::unordered_map<Pair, std::vector<uint32_t>> where; // may hold repeats
  for (const auto &[chunk, count] : sortedChunks) {
    uint32_t w = uint32_t(words.size());
    words.emplace_back(chunk.begin(), chunk.end());
    for (uint32_t &b : words.back())
      b &= 0xFF; // char -> byte value
    counts.push_back(count);
    const auto &word = words.back();
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      Pair p = makePair(word[i], word[i + 1]);
      pairCounts[p] += count;
      where[p].push_back(w);
    }
  }

  std::priority_queue<MergeJob> heap;
  for (const auto &[p, c] : pairCounts)
    heap.push({c, p});

  std::vector<std::string> tokens;
  tokens.reserve(256 + numMerges);
  std::unordered_map<std::string, uint32_t> tokenIds;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(1, char(b));
    tokenIds.emplace(tokens.back(), uint32_t(b));
  }

  std::vector<std::pair<Pair, int64_t>> deltas;
  std::unordered_set<Pair> grown;
  while (tokens.size() < 256 + size_t(numMerges) && !heap.empty()) {
    MergeJob job = heap.top();
    heap.pop();
    auto pc = pairCounts.find(job.pair);
    int64_t current = pc == pairCounts.end() ? 0 : pc->second;
    if (current <= 0)
      continue;
    // Counts only fall after a pair first appears, so a stale entry is too
    // high: requeue it with the true count and look again.
    if (current != job.count) {
      heap.push({current, job.pair});
      continue;
    }
    uint32_t a = uint32_t(job.pair >> 32), b = uint32_t(job.pair);
    // Different merge paths can spell the same bytes ("ab"+"c", "a"+"bc");
    // ranks must be distinct, so such a merge reuses the existing token.
    // Its pairs may then grow, but requeueing keeps the heap exact.
    std::string merged = tokens[a] + tokens[b];
    auto known = tokenIds.find(merged);
    uint32_t id;
    if (known != tokenIds.end()) {
      id = known->second;
    } else {
      id = uint32_t(tokens.size());
      tokenIds.emplace(merged, id);
      tokens.push_back(std::move(merged));
    }

    std::vector<uint32_t> affected = std::move(where[job.pair]);
    where.erase(job.pair);
    pairCounts.erase(job.pair);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()),
                   affected.end());
    grown.clear();
    for (uint32_t w : affected) {
      deltas.clear();
      mergeWord(words[w], a, b, id, deltas);
      for (const auto &[p, d] : deltas) {
        if (p == job.pair)
          continue;
        pairCounts[p] += d * counts[w];
        if (d > 0) {
          where[p].push_back(w);
          grown.insert(p);
        }
      }
    }
    for (Pair p : grown)
      heap.push({pairCounts[p], p});
  }

  SpecialTokens specialIds;
  for (const std::string &name : specials)
    specialIds.emplace_back(name, uint32_t(tokens.size() + specialIds.size()));
  return fromRanks(std::move(tokens), specialIds, pattern);
}

//--- Encoding ---------------------------------------------------------------

std::vector<uint32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3);
  forEachChunk(impl_->code.get(), text,
               [&](std::string_view c) { impl_->encodeChunk(c, out); });
  return out;
}

std::string Tokenizer::decode(const std::vector<uint32_t> &ids) const {
  std::string out;
  for (uint32_t id : ids) {
    if (id < impl_->tokens.size()) {
      out += impl_->tokens[id];
      continue;
    }
    auto it = impl_->specialById.find(id);
    if (it == impl_->specialById.end())
      throw std::out_of_range("tokenizer: no token with id " +
                              std::to_string(id));
    out += it->second;
  }
  return out;
}

uint32_t Tokenizer::vocabSize() const { return impl_->vocabSize; }
uint32_t Tokenizer::numRanks() const { return uint32_t(impl_->tokens.size()); }

const std::string &Tokenizer::tokenBytes(uint32_t id) const {
  if (id >= impl_->tokens.size())
    throw std::out_of_range("tokenizer: no ranked token with id " +
                            std::to_string(id));
  return impl_->tokens[id];
}

std::optional<uint32_t> Tokenizer::specialId(std::string_view name) const {
  for (const auto &[n, id] : impl_->specials)
    if (n == name)
      return id;
  return std::nullopt;
}

uint32_t Tokenizer::bosId() const {
  if (auto id = specialId(kBos))
    return *id;
  fail(std::string("tokenizer: no ") + kBos + " token");
}

const Tokenizer::SpecialTokens &Tokenizer::specialTokens() const {
  return impl_->specials;
}
const std::string &Tokenizer::pattern() const { return impl_->pattern; }

//--- Files ------------------------------------------------------------------

void Tokenizer::save(const std::string &path) const {
  std::string ranks;
  for (size_t r = 0; r < impl_->tokens.size(); ++r)
    ranks += base64Encode(impl_->tokens[r]) + ' ' + std::to_string(r) + '\n';
  nlohmann::json side;
  side["pattern"] = impl_->pattern;
  side["special_tokens"] = nlohmann::json::object();
  for (const auto &[name, id] : impl_->specials)
    side["special_tokens"][name] = id;
  // The side file first: a reader that finds the ranks finds both whole.
  platform::writeFileAtomically(path + ".json", side.dump(2) + "\n");
  platform::writeFileAtomically(path, ranks);
}

Tokenizer Tokenizer::loadTiktoken(const std::string &path) {
  std::string sidePath = path + ".json";
  if (!fileExists(sidePath))
    return loadTiktoken(path, kGpt4Pattern, {});
  std::ifstream in = platform::openRegularFile(sidePath);
  std::string pattern = kGpt4Pattern;
  SpecialTokens specials;
  try {
    nlohmann::json side = nlohmann::json::parse(in);
    if (!side.is_object())
      fail("expected a JSON object");
    if (side.contains("pattern"))
      pattern = side.at("pattern").get<std::string>();
    if (side.contains("special_tokens"))
      for (const auto &[name, id] : side.at("special_tokens").items()) {
        if (!id.is_number_unsigned() || id.get<uint64_t>() >= kNoRank)
          fail("special token " + name + ": id is not a uint32");
        specials.emplace_back(name, id.get<uint32_t>());
      }
  } catch (const std::exception &e) {
    fail(sidePath + ": " + e.what());
  }
  return loadTiktoken(path, pattern, specials);
}

Tokenizer Tokenizer::loadTiktoken(const std::string &path,
                                  const std::string &pattern,
                                  const SpecialTokens &specials) {
  std::ifstream in = platform::openRegularFile(path);
  std::vector<std::string> tokens;
  std::vector<size_t> lineOfRank;
  std::string line;
  size_t lineNo = 0;
  auto where = [&] { return path + ":" + std::to_string(lineNo) + ": "; };
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    std::vector<std::string_view> f = fields(line);
    if (f.empty())
      continue;
    if (f.size() != 2)
      fail(where() + "expected `base64-token rank`");
    std::optional<std::string> bytes = base64Decode(f[0]);
    if (!bytes)
      fail(where() + "invalid base64 token '" + std::string(f[0]) + "'");
    std::optional<uint32_t> rank = parseRank(f[1]);
    if (!rank)
      fail(where() + "invalid rank '" + std::string(f[1]) + "'");
    // Ranks are dense, so a rank far past the line count is malformed.
    if (*rank > lineNo + (1u << 20))
      fail(where() + "rank " + std::to_string(*rank) + " leaves a gap");
    if (*rank >= tokens.size()) {
      tokens.resize(*rank + 1);
      lineOfRank.resize(*rank + 1, 0);
    }
    if (lineOfRank[*rank])
      fail(where() + "rank " + std::to_string(*rank) +
           " already given on line " + std::to_string(lineOfRank[*rank]));
    tokens[*rank] = std::move(*bytes);
    lineOfRank[*rank] = lineNo;
  }
  if (in.bad())
    fail(path + ": read error");
  for (size_t r = 0; r < tokens.size(); ++r)
    if (!lineOfRank[r])
      fail(path + ": rank " + std::to_string(r) + " is missing");
  try {
    return fromRanks(std::move(tokens), specials, pattern);
  } catch (const std::runtime_error &e) {
    fail(path + ": " + e.what());
  }
}

Tokenizer Tokenizer::loadGpt2(const std::string &encoderJsonPath,
                              const std::string &vocabBpePath) {
  const Gpt2Bytes &g2 = gpt2Bytes();
  // Ranks from vocab.bpe: bytes in bytes_to_unicode order, then the merges.
  std::vector<std::string> tokens;
  std::unordered_map<std::string, uint32_t> rankOf;
  for (uint8_t b : g2.rankOrder) {
    rankOf.emplace(std::string(1, char(b)), uint32_t(tokens.size()));
    tokens.emplace_back(1, char(b));
  }
  {
    std::ifstream in = platform::openRegularFile(vocabBpePath);
    std::string line;
    size_t lineNo = 0;
    auto where = [&] {
      return vocabBpePath + ":" + std::to_string(lineNo) + ": ";
    };
    while (std::getline(in, line)) {
      ++lineNo;
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line.empty() || (lineNo == 1 && line.rfind("#version", 0) == 0))
        continue;
      // Split on the one space: `Ġ` and friends stand for spaces in tokens.
      size_t sp = line.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() ||
          line.find(' ', sp + 1) != std::string::npos)
        fail(where() + "expected `left right`");
      std::string merged;
      for (std::string_view part : {std::string_view(line).substr(0, sp),
                                    std::string_view(line).substr(sp + 1)}) {
        std::optional<std::string> bytes = g2.decode(part);
        if (!bytes || !rankOf.count(*bytes))
          fail(where() + "'" + std::string(part) + "' is not a token");
        merged += *bytes;
      }
      if (!rankOf.emplace(merged, uint32_t(tokens.size())).second)
        fail(where() + "merge repeats an earlier token");
      tokens.push_back(std::move(merged));
    }
    if (in.bad())
      fail(vocabBpePath + ": read error");
  }

  std::ifstream in = platform::openRegularFile(encoderJsonPath);
  nlohmann::json enc;
  try {
    enc = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    fail(encoderJsonPath + ": " + e.what());
  }
  if (!enc.is_object())
    fail(encoderJsonPath + ": expected a JSON object");
  SpecialTokens specials;
  size_t ranked = 0;
  for (const auto &[key, value] : enc.items()) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() >= kNoRank)
      fail(encoderJsonPath + ": id of '" + key + "' is not a uint32");
    uint32_t id = value.get<uint32_t>();
    std::optional<std::string> bytes = g2.decode(key);
    auto it = bytes ? rankOf.find(*bytes) : rankOf.end();
    if (it == rankOf.end()) {
      specials.emplace_back(key, id); // e.g. <|endoftext|>
      continue;
    }
    if (it->second != id)
      fail(encoderJsonPath + ": '" + key + "' has id " + std::to_string(id) +
           " but rank " + std::to_string(it->second) + " in " + vocabBpePath);
    ++ranked;
  }
  if (ranked != tokens.size())
    fail(encoderJsonPath + ": has " + std::to_string(ranked) + " of the " +
         std::to_string(tokens.size()) + " tokens of " + vocabBpePath);
  std::sort(specials.begin(), specials.end(),
            [](const auto &x, const auto &y) { return x.second < y.second; });
  try {
    return fromRanks(std::move(tokens), specials, kGpt2Pattern);
  } catch (const std::runtime_error &e) {
    fail(encoderJsonPath + ": " + e.what());
  }
}

} // namespace lap::data
