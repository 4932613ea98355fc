//===- LmRegime.cpp - Language modelling: data, batches, evaluation -*- C++ -*-===//

#include "runtime/train/LmRegime.h"

#include "runtime/data/TextCorpus.h"
#include "runtime/platform/Files.h"
#include "runtime/train/Checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

using namespace lap;
using namespace lap::train;
namespace fs = std::filesystem;

namespace {

/// A file as the cache knows it: its contents (size and hash), and where
/// it was, for messages; a copy or a move of the same bytes is no change.
nlohmann::json fileStamp(const std::string &path) {
  return {{"path", fs::absolute(path).lexically_normal().string()},
          {"bytes", platform::regularFileSize(path)},
          {"xxh3", platform::fileContentHash(path)}};
}

bool sameContents(const nlohmann::json &a, const nlohmann::json &b) {
  return a.is_object() && b.is_object() && a.contains("xxh3") &&
         a.value("bytes", -1) == b.value("bytes", -2) &&
         a["xxh3"] == b.value("xxh3", "");
}

/// What RUNDIR/data is made from: the corpus files, the tokenizer, the
/// vocabulary and the split. Recorded in data/source.json; a cache made
/// from anything else is stale.
nlohmann::json textSource(const dsl::Spec &spec) {
  const dsl::DataSpec &data = spec.train.data;
  nlohmann::json corpus = nlohmann::json::array();
  for (const std::string &file : data::corpusFiles(data.train))
    corpus.push_back(fileStamp(file));
  bool trained = data.tokenizer.empty() || data.tokenizer == "train";
  return {{"corpus", corpus},
          {"tokenizer",
           trained ? nlohmann::json("train") : fileStamp(data.tokenizer)},
          {"vocab", spec.model.vocab},
          {"val_fraction", data.valFraction}};
}

/// How the cache's recorded source differs from `source` ("" when it does
/// not): the first key that changed.
std::string sourceChange(const std::string &recordPath,
                         const nlohmann::json &source) {
  if (!fs::exists(recordPath))
    return "its source is not recorded";
  nlohmann::json recorded = nlohmann::json::parse(
      platform::readRegularFile(recordPath, 1 << 24), nullptr, false);
  if (!recorded.is_object())
    return "its source record " + recordPath + " is unreadable";
  const nlohmann::json &was = recorded["corpus"], &is = source["corpus"];
  for (size_t i = 0; i < std::max(was.size(), is.size()); ++i)
    if (i >= was.size() || i >= is.size() || !sameContents(was[i], is[i]))
      return "the corpus file " +
             (i < is.size() ? is[i] : was[i]).value("path", "?");
  const nlohmann::json &tokenizer = source["tokenizer"];
  if (tokenizer.is_string() ? recorded["tokenizer"] != tokenizer
                            : !sameContents(recorded["tokenizer"], tokenizer))
    return "the tokenizer";
  for (const char *key : {"vocab", "val_fraction"})
    if (recorded[key] != source[key])
      return std::string("the ") + key;
  return "";
}

} // namespace

std::optional<data::Tokenizer>
lap::train::runTokenizer(const dsl::Spec &spec, const std::string &runDir) {
  const std::string &named = spec.train.data.tokenizer;
  if (!named.empty() && named != "train")
    return data::Tokenizer::loadTiktoken(named);
  std::string trained = runDir + "/data/tokenizer.tiktoken";
  if (spec.train.data.format == dsl::DataFormat::Text && fs::exists(trained))
    return data::Tokenizer::loadTiktoken(trained);
  return std::nullopt;
}

data::Tokenizer lap::train::requireRunTokenizer(const dsl::Spec &spec,
                                                const std::string &runDir) {
  if (std::optional<data::Tokenizer> tokenizer = runTokenizer(spec, runDir))
    return *tokenizer;
  throw std::runtime_error(runDir +
                           "/data/tokenizer.tiktoken: no tokenizer; train "
                           "the model in this run directory first");
}

LmRegime::LmRegime(const dsl::Spec &spec, ModelCalls &calls,
                   const float *params, const std::string &runDir,
                   int64_t batch, int64_t seq, std::FILE *log, DataShard shard)
    : spec(spec), calls(calls), model(calls.model()), params(params),
      batch(batch), seq(seq), shard(shard),
      logits(size_t(batch * seq * spec.model.vocab) * 4) {
  const dsl::DataSpec &data = spec.train.data;
  uint32_t vocab = uint32_t(spec.model.vocab);
  std::vector<std::string> trainPaths, valPaths;
  double valFraction = 0;
  if (data.format == dsl::DataFormat::Text) {
    std::string dir = runDir + "/data";
    fs::create_directories(dir);
    std::string tokenizerPath = dir + "/tokenizer.tiktoken";
    std::string trainBin = dir + "/train.bin", valBin = dir + "/val.bin";
    std::string recordPath = dir + "/source.json";
    nlohmann::json source = textSource(spec);
    bool cached =
        fs::exists(tokenizerPath) && fs::exists(trainBin) && fs::exists(valBin);
    std::string changed = cached ? sourceChange(recordPath, source) : "";
    if (!changed.empty()) {
      // Checkpoints were trained on the cached tokens: other data, or
      // another tokenizer, would silently train or evaluate something else.
      if (latestCheckpoint(runDir + "/checkpoints"))
        throw std::runtime_error(
            dir + ": " + changed +
            " changed since this run prepared its data, and the run's "
            "checkpoints were trained on that; give a new --run-dir to "
            "train on the new data");
      fmt::print(log,
                 "data: {} changed since {} was prepared; preparing it "
                 "again\n",
                 changed, dir);
    }
    bool prepared = cached && changed.empty();
    bool trainsTokenizer = source["tokenizer"] == "train";
    if (prepared || !trainsTokenizer)
      tokenizer_ = runTokenizer(spec, runDir);
    if (!prepared) {
      std::vector<std::string> docs = data::readDocuments(data.train);
      if (!tokenizer_) {
        auto start = std::chrono::steady_clock::now();
        std::vector<std::string_view> views(docs.begin(), docs.end());
        tokenizer_ = data::Tokenizer::train(views, vocab);
        fmt::print(log,
                   "tokenizer: byte-level BPE of {} tokens trained on {} "
                   "documents in {:.1f} s\n",
                   vocab, docs.size(),
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count());
      }
      data::TextShards shards = data::writeTextShards(
          docs, *tokenizer_, data.valFraction, vocab, trainBin, valBin);
      tokenizer_->save(tokenizerPath);
      // Last: an interrupted preparation leaves no record, and is redone.
      platform::writeFileAtomically(recordPath, source.dump(2) + "\n");
      fmt::print(
          log, "data: {} documents, {} tokens: {} train, {} validation ({})\n",
          shards.documents, shards.trainTokens + shards.valTokens,
          shards.trainTokens, shards.valTokens, dir);
    }
    trainPaths = {trainBin};
    valPaths = {valBin};
  } else if (data.format == dsl::DataFormat::Shards) {
    trainPaths = {data.train};
    if (!data.val.empty())
      valPaths = {data.val};
    else
      valFraction = data.valFraction;
    tokenizer_ = runTokenizer(spec, runDir);
  } else {
    throw std::runtime_error("this lm regime reads text or token shards");
  }
  // The model finds documents by the spec's token: where the tokenizer
  // has a <|bos|> (which starts every document lap prepares; GPT-2's
  // <|endoftext|>), that one.
  std::optional<uint32_t> bos =
      tokenizer_ ? tokenizer_->findBos() : std::nullopt;
  if (data.packing != dsl::Packing::None && bos && int64_t(*bos) != data.bos)
    throw std::runtime_error(
        "train.data.bos is " + std::to_string(data.bos) +
        ", but the tokenizer's <|bos|>, which starts every document, is " +
        std::to_string(*bos) + ": set train.data.bos: " + std::to_string(*bos));
  LmLoaderOptions options{
      batch,       seq,   uint64_t(spec.train.seed),
      valFraction, vocab, data.packing == dsl::Packing::Padded ? data.bos : -1};
  train = std::make_unique<LmLoader>(trainPaths, options);
  options.valFraction = 1;
  val = valPaths.empty() ? nullptr
                         : std::make_unique<LmLoader>(valPaths, options);
}

std::string LmRegime::microBatchText(int64_t micro) const {
  return std::to_string(micro) + " x " + std::to_string(seq) + " tokens";
}

int64_t LmRegime::next(lap_batch &out) {
  train->seek(shard.global(windowsRead));
  windowsRead += uint64_t(batch);
  train->next(current);
  pointers = current.tensors();
  out = {batch, seq, int32_t(pointers.size()), pointers.data()};
  return batch * seq;
}

nlohmann::json LmRegime::evaluate(int64_t batches) {
  const LmLoader &source = validationLoader();
  // A small split holds fewer batches than asked for: use them all.
  uint64_t available = source.valWindows() / uint64_t(batch);
  auto it = source.validation(
      batches > 0 ? std::min<uint64_t>(uint64_t(batches), available) : 0);
  return evaluateBatches(calls, params, tokenizer_ ? &*tokenizer_ : nullptr,
                         logits.as<float>(),
                         [&](LmBatch &b) { return it.next(b); });
}

nlohmann::json
lap::train::evaluateBatches(ModelCalls &calls, const float *params,
                            const data::Tokenizer *tokenizer, float *logits,
                            const std::function<bool(LmBatch &)> &next) {
  double nats = 0, bytes = 0, tokens = 0;
  LmBatch b;
  while (next(b)) {
    // The loss is the mean over the targets that count (not padding's); a
    // batch without any has none.
    double counted = double(std::count_if(b.targets.begin(), b.targets.end(),
                                          [](int32_t t) { return t >= 0; }));
    if (counted == 0)
      continue;
    std::vector<const void *> ptrs = b.tensors();
    lap_batch view{b.batch, b.seq, int32_t(ptrs.size()), ptrs.data()};
    float loss = calls.forward(params, view, logits);
    nats += double(loss) * counted;
    tokens += counted;
    // Bits per byte count the bytes the targets stand for (specials: none),
    // so models with different tokenizers compare.
    if (tokenizer)
      for (int32_t t : b.targets)
        if (uint32_t(t) < tokenizer->numRanks())
          bytes += double(tokenizer->tokenBytes(uint32_t(t)).size());
  }
  if (tokens == 0)
    throw std::runtime_error("the validation split holds no full batch");
  nlohmann::json out{{"val_loss", nats / tokens}};
  if (bytes > 0)
    out["val_bpb"] = nats / std::log(2.0) / bytes;
  return out;
}
