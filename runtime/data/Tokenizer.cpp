//===- Tokenizer.cpp - Byte-level BPE tokenizer (tiktoken semantics) ------===//
//
// Encoding as tiktoken's byte_pair_merge does it, within the chunks of the
// split pattern (TextSplitter.h); training is in TokenizerTraining.cpp, the
// file formats in TokenizerFiles.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Tokenizer.h"

#include "runtime/data/TextSplitter.h"
#include "runtime/platform/Errors.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace lap::data {

const char *const Tokenizer::kGpt4Pattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char *const Tokenizer::kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char *const Tokenizer::kBos = "<|bos|>";
const char *const Tokenizer::kEndOfText = "<|endoftext|>";
const std::vector<std::string> Tokenizer::kReservedSpecials = {
    "<|user_start|>",    "<|user_end|>",     "<|assistant_start|>",
    "<|assistant_end|>", "<|python_start|>", "<|python_end|>",
    "<|output_start|>",  "<|output_end|>",   kBos};

namespace {

using lap::platform::fail;

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
// Bounds the chunk cache; natural text has far fewer distinct chunks.
constexpr size_t kMaxCacheEntries = 1 << 20;

} // namespace

struct Tokenizer::Impl {
  std::vector<std::string> tokens; // bytes by rank; never resized once built
  std::unordered_map<std::string_view, uint32_t> ranks; // views into tokens
  SpecialTokens specials;
  std::unordered_map<uint32_t, std::string> specialById;
  uint32_t vocabSize = 0;
  std::string pattern;
  std::optional<TextSplitter> splitter;

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
      fail("tokenizer", "rank " + std::to_string(r) + " is an empty token");
    if (!impl->ranks.emplace(std::string_view(t), uint32_t(r)).second)
      fail("tokenizer", "rank " + std::to_string(r) +
                            " repeats the token of rank " +
                            std::to_string(impl->ranks.at(t)));
  }
  // Every byte must be a token, or some byte strings could not be encoded.
  for (int b = 0; b < 256; ++b)
    if (!impl->ranks.count(std::string_view(std::string(1, char(b)))))
      fail("tokenizer", "byte " + std::to_string(b) + " is not a token");
  uint32_t numRanks = uint32_t(impl->tokens.size());
  impl->vocabSize = numRanks;
  for (const auto &[name, id] : specials) {
    if (name.empty())
      fail("tokenizer", "empty special token name");
    if (id < numRanks)
      fail("tokenizer", "special token " + name + " has id " +
                            std::to_string(id) + ", which is a rank");
    if (!impl->specialById.emplace(id, name).second)
      fail("tokenizer", "special token id " + std::to_string(id) + " repeats");
    for (const auto &other : impl->specials)
      if (other.first == name)
        fail("tokenizer", "special token " + name + " repeats");
    impl->specials.emplace_back(name, id);
    impl->vocabSize = std::max(impl->vocabSize, id + 1);
  }
  impl->pattern = pattern;
  impl->splitter.emplace(pattern);
  return Tokenizer(std::move(impl));
}

//--- Encoding ---------------------------------------------------------------

std::vector<uint32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3);
  impl_->splitter->forEachChunk(
      text, [&](std::string_view c) { impl_->encodeChunk(c, out); });
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

std::optional<uint32_t> Tokenizer::findBos() const {
  if (auto id = specialId(kBos))
    return id;
  return specialId(kEndOfText);
}

uint32_t Tokenizer::bosId() const {
  if (auto id = findBos())
    return *id;
  fail("tokenizer", std::string("no ") + kBos + " or " + kEndOfText + " token");
}

const Tokenizer::SpecialTokens &Tokenizer::specialTokens() const {
  return impl_->specials;
}
const std::string &Tokenizer::pattern() const { return impl_->pattern; }

} // namespace lap::data
