//===- LmRegime.h - Language modelling: data, batches, evaluation -*- C++ -*-===//
//
// Text or token shards in, shuffled windows out. Text (a file or a directory
// of files, e.g. Debian's fortunes; `%` lines separate documents) gets a
// byte-level BPE tokenizer trained on it (`tokenizer: train`) or loaded from
// a tiktoken file, each document starting with <|bos|>; the tokens are split
// into train and validation shards in the run directory, reused on resume.
// Evaluation reports validation loss and bits per byte.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_LMREGIME_H
#define LAP_RUNTIME_TRAIN_LMREGIME_H

#include "dsl/Spec.h"
#include "runtime/data/TokenShards.h"
#include "runtime/data/Tokenizer.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/DataShard.h"
#include "runtime/train/Regime.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>

namespace lap::train {

/// The tokenizer of a run of `spec` in `runDir`: the spec's tiktoken file
/// when it names one, else the one trained into DIR/data (none before the
/// run prepared its data, or for shards without a tokenizer).
std::optional<data::Tokenizer> runTokenizer(const dsl::Spec &spec,
                                            const std::string &runDir);
/// runTokenizer, or an error naming where the run's tokenizer would be:
/// for the commands that generate text with a trained run.
data::Tokenizer requireRunTokenizer(const dsl::Spec &spec,
                                    const std::string &runDir);

/// Validation loss (nats per counted target: not padding's, not -1) and
/// bits per byte (of `tokenizer`'s ranked tokens, when given) over the
/// batches `next` yields until it returns false; `logits` holds a batch's.
nlohmann::json evaluateBatches(ModelCalls &calls, const float *params,
                               const data::Tokenizer *tokenizer, float *logits,
                               const std::function<bool(LmBatch &)> &next);

class LmRegime final : public Regime {
public:
  /// Prepares data for `spec`'s train section under `runDir` (tokenizer,
  /// shards) with micro-batches of `batch` x `seq` of `shard` (this rank's
  /// share of the stream). Evaluation runs through `calls`, in the
  /// workspace training uses (the two never run at once), with the
  /// parameters `params` (its device's memory).
  LmRegime(const dsl::Spec &spec, ModelCalls &calls, const float *params,
           const std::string &runDir, int64_t batch, int64_t seq,
           std::FILE *log, DataShard shard = {});

  const char *unit() const override { return "tok"; }
  const char *units() const override { return "tokens"; }
  std::string microBatchText(int64_t micro) const override;
  /// Optimizer steps in one pass over the training windows.
  int64_t stepsPerEpoch(int64_t accumulation) const override {
    return std::max<int64_t>(1, int64_t(train->trainWindows()) /
                                    (batch * accumulation));
  }
  int64_t next(lap_batch &out) override;
  uint64_t position() const override { return shard.reached(windowsRead); }
  void seek(uint64_t position) override { windowsRead = shard.local(position); }
  bool evaluates() const override { return true; }
  nlohmann::json evaluate() override {
    return evaluate(spec.train.eval.batches);
  }
  /// The unigram entropy of the training tokens, the loss a model that
  /// ignores context reaches.
  nlohmann::json summary() const override {
    return {{"unigram_entropy", unigramEntropy()}};
  }

  const std::optional<data::Tokenizer> &tokenizer() const { return tokenizer_; }
  /// The loader whose validation windows evaluate() reads.
  const LmLoader &validationLoader() const { return val ? *val : *train; }
  /// The unigram entropy of the training tokens (nats per token).
  double unigramEntropy() const { return lap::unigramEntropy(train->shards()); }
  /// Validation loss (nats per token) and bits per byte over `batches`
  /// batches (0: the whole split).
  nlohmann::json evaluate(int64_t batches);

private:
  const dsl::Spec &spec;
  ModelCalls &calls;
  const LoadedModel &model;
  const float *params;
  int64_t batch, seq;
  DataShard shard;
  uint64_t windowsRead = 0; ///< of this rank's share
  std::optional<data::Tokenizer> tokenizer_;
  std::unique_ptr<LmLoader> train, val;
  LmBatch current;
  std::vector<const void *> pointers;
  AlignedBuffer logits;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_LMREGIME_H
