//===- ChatRegime.h - Fine-tuning on conversations --------------*- C++ -*-===//
//
// Supervised fine-tuning as nanochat's chat_sft: a language model (started
// from a pretrained run's checkpoint with `lapc-run train --init-from`)
// learns the assistant's side of conversations (`data.format:
// conversations`). The conversations come from one JSONL file or a mixture
// of them, each read a number of times per epoch; they are rendered with
// the pretrained tokenizer (data.tokenizer) and packed into rows
// (ConversationBatches.h). Evaluation reports the loss and bits per byte of
// the held-out conversations' trained tokens (data.val, or val_fraction of
// each file).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_CHATREGIME_H
#define LAP_RUNTIME_TRAIN_CHATREGIME_H

#include "dsl/Spec.h"
#include "runtime/data/ConversationBatches.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/DataShard.h"
#include "runtime/train/Regime.h"

#include <memory>

namespace lap::train {

class ChatRegime final : public Regime {
public:
  /// Reads and renders the spec's conversations for micro-batches of
  /// `batch` rows of `seq` tokens of `shard` (this rank's share).
  /// Evaluation runs through `calls` with the parameters `params`.
  ChatRegime(const dsl::Spec &spec, ModelCalls &calls, const float *params,
             int64_t batch, int64_t seq, std::FILE *log, DataShard shard = {});

  const char *unit() const override { return "tok"; }
  const char *units() const override { return "tokens"; }
  std::string microBatchText(int64_t micro) const override;
  int64_t stepsPerEpoch(int64_t accumulation) const override;
  int64_t next(lap_batch &out) override;
  uint64_t position() const override { return shard.reached(rowsRead); }
  void seek(uint64_t position) override { rowsRead = shard.local(position); }
  bool evaluates() const override { return val != nullptr; }
  nlohmann::json evaluate() override;
  /// The pretrained model's loss on the conversations: what fine-tuning
  /// must beat.
  bool evaluatesInitialModel() const override { return true; }

  const data::Tokenizer &tokenizer() const { return tokenizer_; }

private:
  const dsl::Spec &spec;
  ModelCalls &calls;
  const float *params;
  int64_t batch, seq;
  DataShard shard;
  uint64_t rowsRead = 0;     ///< of this rank's share
  uint64_t rowsPerEpoch = 0; ///< of the first epoch
  data::Tokenizer tokenizer_;
  std::unique_ptr<data::ConversationBatches> train, val;
  LmBatch current;
  std::vector<const void *> pointers;
  AlignedBuffer logits;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_CHATREGIME_H
