//===- ConversationBatches.h - Conversations packed into rows ---*- C++ -*-===//
//
// Fine-tuning batches as nanochat's chat_sft makes them (BOS-aligned
// best-fit packing): rows of seq + 1 tokens, each filled with whole
// rendered conversations (each starting with <|bos|>), the largest of a
// buffer of the next 100 that still fits; when none fits, the rest of the
// row is padding (<|bos|> tokens, not trained). No token is ever cut but
// those of a conversation longer than a row, which is cut to one. Targets
// are the next tokens where the template trains them, -1 elsewhere.
//
// Training rows: each epoch reads the conversations in a new seeded order
// and packs them again, so a position (rows read over all epochs) names
// one row exactly, for checkpoints and data-parallel shares. Validation
// rows: the conversations in order, once; the last batch is filled with
// empty rows (all targets -1), so every conversation counts.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_CONVERSATIONBATCHES_H
#define LAP_RUNTIME_DATA_CONVERSATIONBATCHES_H

#include "runtime/data/Conversations.h"
#include "runtime/data/TokenShards.h"

#include <cstdint>
#include <map>
#include <vector>

namespace lap::data {

struct ConversationBatchOptions {
  int64_t batch = 0, seq = 0;
  uint64_t seed = 0;
  uint32_t bos = 0;     ///< the padding token
  bool lengths = false; ///< fill LmBatch::lengths (packing: padded)
};

class ConversationBatches {
public:
  /// Rows of `conversations`: shuffled each epoch when `shuffle`
  /// (training), else in order (validation).
  ConversationBatches(std::vector<RenderedConversation> conversations,
                      bool shuffle, const ConversationBatchOptions &options);

  /// Rows in the first epoch (later epochs pack another order and may
  /// hold a row more or less).
  uint64_t rowsPerEpoch() { return epochRows(0).size(); }
  uint64_t conversations() const { return conversations_.size(); }
  /// Tokens of all conversations (after cutting to a row), and of those
  /// trained.
  uint64_t tokens() const { return tokens_; }
  uint64_t trainedTokens() const { return trained_; }

  /// The batch of rows [position, position + batch) over all epochs.
  void fill(uint64_t position, LmBatch &out);
  /// Validation: the number of batches, and batch `index` of them.
  uint64_t batches() {
    return (rowsPerEpoch() + opts_.batch - 1) / opts_.batch;
  }
  void validationBatch(uint64_t index, LmBatch &out);

private:
  /// One row: the conversations in it, in order.
  using Row = std::vector<uint32_t>;
  const std::vector<Row> &epochRows(uint64_t epoch);
  void fillRow(const Row *row, int64_t b, LmBatch &out) const;

  std::vector<RenderedConversation> conversations_;
  bool shuffle_;
  ConversationBatchOptions opts_;
  uint64_t tokens_ = 0, trained_ = 0;
  std::map<uint64_t, std::vector<Row>> packed_; ///< by epoch, a few kept
  std::vector<uint64_t> epochSizes_;            ///< rows of epochs packed
};

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_CONVERSATIONBATCHES_H
