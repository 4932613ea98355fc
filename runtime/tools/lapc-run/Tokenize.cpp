//===- Tokenize.cpp - lapc-run tokenize ---------------------------*- C++ -*-===//
//
// Text to token shards: trains a byte-level BPE tokenizer on the text (or
// loads a tiktoken or GPT-2 tokenizer) and writes train and validation
// shards plus the tokenizer, for specs with `data.format: shards`.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TextCorpus.h"
#include "runtime/tools/lapc-run/Commands.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>

using namespace lap;

int lap::cli::tokenize(const TokenizeOptions &options) {
  std::vector<std::string> docs = data::readDocuments(options.text);
  auto start = std::chrono::steady_clock::now();
  std::optional<data::Tokenizer> tokenizer;
  if (!options.tiktoken.empty())
    tokenizer = data::Tokenizer::loadTiktoken(options.tiktoken);
  else if (!options.gpt2Encoder.empty())
    tokenizer =
        data::Tokenizer::loadGpt2(options.gpt2Encoder, options.gpt2Merges);
  else {
    std::vector<std::string_view> views(docs.begin(), docs.end());
    tokenizer = data::Tokenizer::train(views, options.vocab);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  uint32_t vocab = options.vocab ? options.vocab : tokenizer->vocabSize();
  std::filesystem::create_directories(options.out);
  data::TextShards shards = data::writeTextShards(
      docs, *tokenizer, options.valFraction, vocab, options.out + "/train.bin",
      options.out + "/val.bin");
  tokenizer->save(options.out + "/tokenizer.tiktoken");
  int64_t bytes = 0;
  for (const std::string &d : docs)
    bytes += int64_t(d.size());
  fmt::print("tokenizer: {} tokens ({:.2f} s); {} documents, {} bytes -> {} "
             "train and {} "
             "validation tokens ({:.2f} bytes per token)\nwrote "
             "{}/{{train.bin, val.bin, "
             "tokenizer.tiktoken}}\n",
             tokenizer->vocabSize(), seconds, shards.documents, bytes,
             shards.trainTokens, shards.valTokens,
             double(bytes) / double(shards.trainTokens + shards.valTokens),
             options.out);
  return 0;
}
