//===- ConversationBatches.cpp - Conversations packed into rows -----------===//

#include "runtime/data/ConversationBatches.h"

#include "runtime/platform/Random.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace lap::data {

namespace {

/// nanochat's buffer of conversations from which best-fit packing picks.
constexpr size_t kBuffer = 100;

} // namespace

ConversationBatches::ConversationBatches(
    std::vector<RenderedConversation> conversations, bool shuffle,
    const ConversationBatchOptions &options)
    : conversations_(std::move(conversations)), shuffle_(shuffle),
      opts_(options) {
  if (conversations_.empty())
    throw std::runtime_error("no conversations to batch");
  const size_t capacity = size_t(opts_.seq) + 1;
  for (RenderedConversation &c : conversations_) {
    if (c.ids.size() > capacity) {
      c.ids.resize(capacity);
      c.trained.resize(capacity);
    }
    tokens_ += c.ids.size();
    trained_ += uint64_t(std::count(c.trained.begin(), c.trained.end(), 1));
  }
}

const std::vector<ConversationBatches::Row> &
ConversationBatches::epochRows(uint64_t epoch) {
  if (auto it = packed_.find(epoch); it != packed_.end())
    return it->second;
  std::vector<uint32_t> order(conversations_.size());
  std::iota(order.begin(), order.end(), 0u);
  if (shuffle_) {
    seededShuffle(order, opts_.seed ^ splitMix(epoch));
  }
  // Best fit from a buffer of the next conversations in order.
  const size_t capacity = size_t(opts_.seq) + 1;
  std::vector<Row> rows;
  std::vector<uint32_t> buffer;
  size_t next = 0;
  while (next < order.size() || !buffer.empty()) {
    Row row;
    size_t used = 0;
    while (true) {
      while (buffer.size() < kBuffer && next < order.size())
        buffer.push_back(order[next++]);
      size_t best = buffer.size(), bestSize = 0;
      for (size_t i = 0; i < buffer.size(); ++i) {
        size_t n = conversations_[buffer[i]].ids.size();
        if (n <= capacity - used && n > bestSize) {
          best = i;
          bestSize = n;
        }
      }
      if (best == buffer.size())
        break; // nothing fits: the rest is padding
      row.push_back(buffer[best]);
      used += bestSize;
      buffer.erase(buffer.begin() + ptrdiff_t(best));
    }
    rows.push_back(std::move(row));
  }
  if (packed_.size() >= 2) // keep the epoch in use and the one after
    packed_.erase(packed_.begin());
  if (epochSizes_.size() <= epoch)
    epochSizes_.resize(epoch + 1, 0);
  epochSizes_[epoch] = rows.size();
  return packed_.emplace(epoch, std::move(rows)).first->second;
}

void ConversationBatches::fillRow(const Row *row, int64_t b,
                                  LmBatch &out) const {
  const int64_t T = opts_.seq;
  int32_t *inputs = out.inputs.data() + b * T;
  int32_t *targets = out.targets.data() + b * T;
  std::fill(inputs, inputs + T, int32_t(opts_.bos));
  std::fill(targets, targets + T, -1);
  int64_t at = 0; // position in the row of seq + 1 tokens
  if (row)
    for (uint32_t c : *row) {
      const RenderedConversation &conv = conversations_[c];
      for (size_t i = 0; i < conv.ids.size(); ++i, ++at) {
        if (at < T)
          inputs[at] = int32_t(conv.ids[i]);
        if (at > 0 && conv.trained[i])
          targets[at - 1] = int32_t(conv.ids[i]);
      }
    }
  if (opts_.lengths)
    out.lengths[size_t(b)] = int32_t(std::min(at, T));
}

void ConversationBatches::fill(uint64_t position, LmBatch &out) {
  const int64_t B = opts_.batch, T = opts_.seq;
  out.batch = B;
  out.seq = T;
  out.inputs.assign(size_t(B * T), 0);
  out.targets.assign(size_t(B * T), -1);
  out.lengths.assign(opts_.lengths ? size_t(B) : 0, 0);
  // The epoch of `position`: packing epochs in turn counts their rows.
  uint64_t epoch = 0, first = 0;
  while (true) {
    uint64_t rows = epoch < epochSizes_.size() && epochSizes_[epoch]
                        ? epochSizes_[epoch]
                        : epochRows(epoch).size();
    if (position < first + rows)
      break;
    first += rows;
    ++epoch;
  }
  for (int64_t b = 0; b < B; ++b) {
    uint64_t p = position + uint64_t(b);
    while (p >= first + epochSizes_[epoch]) {
      first += epochSizes_[epoch];
      ++epoch;
      epochRows(epoch);
    }
    fillRow(&epochRows(epoch)[p - first], b, out);
  }
}

void ConversationBatches::validationBatch(uint64_t index, LmBatch &out) {
  const int64_t B = opts_.batch, T = opts_.seq;
  const std::vector<Row> &rows = epochRows(0);
  out.batch = B;
  out.seq = T;
  out.inputs.assign(size_t(B * T), 0);
  out.targets.assign(size_t(B * T), -1);
  out.lengths.assign(opts_.lengths ? size_t(B) : 0, 0);
  for (int64_t b = 0; b < B; ++b) {
    uint64_t r = index * uint64_t(B) + uint64_t(b);
    fillRow(r < rows.size() ? &rows[r] : nullptr, b, out);
  }
}

} // namespace lap::data
