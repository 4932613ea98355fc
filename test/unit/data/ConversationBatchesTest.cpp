//===- ConversationBatchesTest.cpp - Best-fit packing of conversations ----===//
//
// Rows are packed as nanochat's BOS-aligned best fit packs them, targets are
// trained tokens only, every epoch reads every conversation once in a new
// order, and validation batches count every conversation.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ConversationBatches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace lap;
using namespace lap::data;

namespace {

constexpr uint32_t kBos = 1;

/// Conversation `k` of `n` tokens: <|bos|>, then tokens 100k + i, the
/// second half trained.
RenderedConversation conversation(uint32_t k, size_t n) {
  RenderedConversation c;
  for (size_t i = 0; i < n; ++i) {
    c.ids.push_back(i == 0 ? kBos : 100 * k + uint32_t(i));
    c.trained.push_back(i >= n / 2);
  }
  return c;
}

/// The conversations (by k) starting in each row of a batch.
std::vector<std::vector<uint32_t>> rowsOf(const LmBatch &b) {
  std::vector<std::vector<uint32_t>> rows(size_t(b.batch));
  for (int64_t r = 0; r < b.batch; ++r)
    for (int64_t t = 0; t + 1 < b.seq; ++t)
      if (b.inputs[size_t(r * b.seq + t)] == int32_t(kBos) &&
          b.inputs[size_t(r * b.seq + t + 1)] != int32_t(kBos))
        rows[size_t(r)].push_back(
            uint32_t(b.inputs[size_t(r * b.seq + t + 1)]) / 100);
  return rows;
}

TEST(ConversationBatches, PacksTheLargestThatFitsAndPadsTheRest) {
  // Rows of 10 tokens (seq 9): sizes 6, 3, 4, 2, 9 in order.
  std::vector<RenderedConversation> cs = {
      conversation(1, 6), conversation(2, 3), conversation(3, 4),
      conversation(4, 2), conversation(5, 9)};
  ConversationBatches batches(cs, /*shuffle=*/false, {3, 9, 0, kBos, true});
  ASSERT_EQ(batches.rowsPerEpoch(), 3u);
  LmBatch b;
  batches.validationBatch(0, b);
  EXPECT_EQ(rowsOf(b),
            (std::vector<std::vector<uint32_t>>{{5}, {1, 3}, {2, 4}}));
  // Row 0 holds conversation 5 (9 tokens) and one token of padding.
  EXPECT_EQ(b.lengths, (std::vector<int32_t>{9, 9, 5}));
  for (int64_t t = 0; t < 9; ++t) {
    // Target t is input t + 1 where conversation 5 trains it (its tokens 4
    // to 8), -1 elsewhere.
    int32_t expected = t + 1 >= 4 && t + 1 < 9 ? int32_t(500 + t + 1) : -1;
    EXPECT_EQ(b.targets[size_t(t)], expected) << "t " << t;
  }
  // Row 2: conversations 2 (3 tokens) and 4 (2), then padding: <|bos|>
  // inputs, -1 targets.
  const int32_t *inputs = b.inputs.data() + 18,
                *targets = b.targets.data() + 18;
  EXPECT_EQ(std::vector<int32_t>(inputs, inputs + 9),
            (std::vector<int32_t>{1, 201, 202, 1, 401, 1, 1, 1, 1}));
  EXPECT_EQ(std::vector<int32_t>(targets, targets + 9),
            (std::vector<int32_t>{201, 202, -1, 401, -1, -1, -1, -1, -1}));
  EXPECT_EQ(batches.tokens(), 24u);
}

TEST(ConversationBatches, EachEpochReadsEveryConversationOnceInANewOrder) {
  std::vector<RenderedConversation> cs;
  for (uint32_t k = 1; k <= 40; ++k)
    cs.push_back(conversation(k, 3 + k % 5));
  ConversationBatchOptions options{4, 15, 7, kBos, false};
  ConversationBatches batches(cs, true, options);
  uint64_t rows = batches.rowsPerEpoch();
  // Epochs may pack into different numbers of rows: read until every
  // conversation was seen twice.
  std::vector<uint32_t> order;
  for (uint64_t position = 0; order.size() < 80; position += 4) {
    LmBatch b;
    batches.fill(position, b);
    for (const auto &row : rowsOf(b))
      order.insert(order.end(), row.begin(), row.end());
  }
  std::vector<uint32_t> first(order.begin(), order.begin() + 40),
      second(order.begin() + 40, order.begin() + 80);
  EXPECT_NE(first, second);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  for (uint32_t k = 1; k <= 40; ++k) {
    EXPECT_EQ(first[k - 1], k);
    EXPECT_EQ(second[k - 1], k);
  }
  // The same seed packs the same rows; a position names one batch.
  ConversationBatches again(cs, true, options);
  LmBatch a, b;
  batches.fill(rows + 2, a);
  again.fill(rows + 2, b);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.targets, b.targets);
}

TEST(ConversationBatches, ValidationFillsTheLastBatchWithEmptyRows) {
  ConversationBatches val({conversation(1, 5), conversation(2, 5)}, false,
                          {4, 5, 0, kBos, false});
  EXPECT_EQ(val.batches(), 1u);
  LmBatch b;
  val.validationBatch(0, b);
  EXPECT_EQ(std::count_if(b.targets.begin(), b.targets.end(),
                          [](int32_t t) { return t >= 0; }),
            2 * 3); // tokens 2, 3, 4 of each
  for (size_t i = 10; i < b.targets.size(); ++i)
    EXPECT_EQ(b.targets[i], -1);
}

TEST(ConversationBatches, AConversationLongerThanARowIsCut) {
  ConversationBatches batches({conversation(1, 30)}, false,
                              {1, 7, 0, kBos, false});
  EXPECT_EQ(batches.tokens(), 8u);
  EXPECT_EQ(batches.rowsPerEpoch(), 1u);
}

} // namespace
