//===- ChatRegime.cpp - Fine-tuning on conversations ----------------------===//

#include "runtime/train/ChatRegime.h"

#include "runtime/platform/Random.h"
#include "runtime/train/LmRegime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lap::train {

namespace {

/// The conversations of one mixture file, split into the part trained on
/// and the tail held out (val_fraction).
struct TaskFile {
  std::vector<data::RenderedConversation> train, held;
};

TaskFile renderFile(const std::string &path, const data::Tokenizer &tokenizer,
                    size_t maxTokens, double heldFraction) {
  std::vector<data::Conversation> conversations = data::readConversations(path);
  size_t held = size_t(std::ceil(heldFraction * double(conversations.size())));
  if (heldFraction > 0 && held >= conversations.size())
    throw std::runtime_error(path +
                             ": val_fraction holds out every one of "
                             "its " +
                             std::to_string(conversations.size()) +
                             " conversations");
  TaskFile file;
  for (size_t i = 0; i < conversations.size(); ++i) {
    data::RenderedConversation r =
        data::renderConversation(conversations[i], tokenizer, maxTokens);
    (i + held < conversations.size() ? file.train : file.held)
        .push_back(std::move(r));
  }
  return file;
}

/// `epochs` readings of `conversations`: whole repeats, then the first part
/// of a seeded order for a fraction.
void addEpochs(std::vector<data::RenderedConversation> &mixture,
               const std::vector<data::RenderedConversation> &conversations,
               double epochs, uint64_t seed) {
  for (double e = 1; e <= epochs; ++e)
    mixture.insert(mixture.end(), conversations.begin(), conversations.end());
  double fraction = epochs - std::floor(epochs);
  size_t part = size_t(std::llround(fraction * double(conversations.size())));
  std::vector<size_t> order(conversations.size());
  std::iota(order.begin(), order.end(), size_t(0));
  seededShuffle(order, seed);
  for (size_t i = 0; i < part; ++i)
    mixture.push_back(conversations[order[i]]);
}

} // namespace

ChatRegime::ChatRegime(const dsl::Spec &spec, ModelCalls &calls,
                       const float *params, int64_t batch, int64_t seq,
                       std::FILE *log, DataShard shard)
    : spec(spec), calls(calls), params(params), batch(batch), seq(seq),
      shard(shard),
      tokenizer_(data::Tokenizer::loadTiktoken(spec.train.data.tokenizer)),
      logits(size_t(batch * seq * spec.model.vocab) * 4) {
  const dsl::DataSpec &data = spec.train.data;
  if (tokenizer_.vocabSize() > uint32_t(spec.model.vocab))
    throw std::runtime_error(
        fmt::format("{}: {} tokens, more than the model's vocabulary of {}",
                    data.tokenizer, tokenizer_.vocabSize(), spec.model.vocab));
  // Each conversation starts with the tokenizer's <|bos|>: where the
  // model finds documents (packing: documents) it must be the spec's.
  if (data.packing != dsl::Packing::None &&
      int64_t(tokenizer_.bosId()) != data.bos)
    throw std::runtime_error(
        "train.data.bos is " + std::to_string(data.bos) +
        ", but the tokenizer's <|bos|>, which starts every conversation, "
        "is " +
        std::to_string(tokenizer_.bosId()) +
        ": set train.data.bos: " + std::to_string(tokenizer_.bosId()));
  std::vector<std::pair<std::string, double>> files = data.mixture;
  if (files.empty())
    files.emplace_back(data.train, 1.0);
  // A conversation longer than a row is cut to one (nanochat's max_tokens).
  const size_t rowTokens = size_t(seq) + 1;
  const double heldFraction = data.val.empty() ? data.valFraction : 0;
  std::vector<data::RenderedConversation> mixture, held;
  for (size_t f = 0; f < files.size(); ++f) {
    TaskFile file =
        renderFile(files[f].first, tokenizer_, rowTokens, heldFraction);
    addEpochs(mixture, file.train, files[f].second,
              uint64_t(spec.train.seed) + f);
    held.insert(held.end(), std::make_move_iterator(file.held.begin()),
                std::make_move_iterator(file.held.end()));
  }
  if (!data.val.empty())
    for (data::Conversation &c : data::readConversations(data.val))
      held.push_back(data::renderConversation(c, tokenizer_, rowTokens));

  data::ConversationBatchOptions options{batch, seq, uint64_t(spec.train.seed),
                                         tokenizer_.bosId(),
                                         data.packing == dsl::Packing::Padded};
  train = std::make_unique<data::ConversationBatches>(std::move(mixture), true,
                                                      options);
  rowsPerEpoch = train->rowsPerEpoch();
  fmt::print(log,
             "data: {} conversations from {} file{} ({} tokens, {:.0f}% "
             "trained) in {} rows of {} tokens",
             train->conversations(), files.size(), files.size() > 1 ? "s" : "",
             train->tokens(),
             100.0 * double(train->trainedTokens()) /
                 double(std::max<uint64_t>(1, train->tokens())),
             rowsPerEpoch, rowTokens);
  if (!held.empty()) {
    val = std::make_unique<data::ConversationBatches>(std::move(held), false,
                                                      options);
    fmt::print(log, "; {} validation conversations", val->conversations());
  }
  fmt::print(log, "\n");
}

std::string ChatRegime::microBatchText(int64_t micro) const {
  return std::to_string(micro) + " x " + std::to_string(seq) + " tokens";
}

int64_t ChatRegime::stepsPerEpoch(int64_t accumulation) const {
  return std::max<int64_t>(1, int64_t(rowsPerEpoch) / (batch * accumulation));
}

int64_t ChatRegime::next(lap_batch &out) {
  train->fill(shard.global(rowsRead), current);
  rowsRead += uint64_t(batch);
  pointers = current.tensors();
  out = {batch, seq, int32_t(pointers.size()), pointers.data()};
  return batch * seq;
}

nlohmann::json ChatRegime::evaluate() {
  uint64_t batches = val->batches();
  if (spec.train.eval.batches > 0)
    batches = std::min<uint64_t>(batches, uint64_t(spec.train.eval.batches));
  uint64_t index = 0;
  return evaluateBatches(calls, params, &tokenizer_, logits.as<float>(),
                         [&](LmBatch &b) {
                           if (index >= batches)
                             return false;
                           val->validationBatch(index++, b);
                           return true;
                         });
}

} // namespace lap::train
