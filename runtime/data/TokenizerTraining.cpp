//===- TokenizerTraining.cpp - Learning a byte-level BPE vocabulary -------===//
//
// nanochat rustbpe's scheme: count the distinct chunks of the texts, then
// merge the most frequent adjacent pair again and again, with incremental
// pair counts and a lazily updated max-heap.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Tokenizer.h"

#include "runtime/data/TextSplitter.h"
#include "runtime/platform/Errors.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace lap::data {

namespace {

using lap::platform::fail;

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
    fail("tokenizer", "vocabulary size " + std::to_string(vocabSize) +
                          " is below 256 bytes + " +
                          std::to_string(specials.size()) + " special tokens");
  uint32_t numMerges = vocabSize - 256 - uint32_t(specials.size());

  // Distinct chunks with their counts: merging works per distinct chunk.
  TextSplitter splitter(pattern);
  std::unordered_map<std::string_view, int64_t> chunkCounts;
  for (std::string_view text : texts)
    splitter.forEachChunk(text, [&](std::string_view c) { ++chunkCounts[c]; });
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

} // namespace lap::data
