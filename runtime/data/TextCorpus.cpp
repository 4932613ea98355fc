//===- TextCorpus.cpp - Text files to token shards --------------*- C++ -*-===//

#include "runtime/data/TextCorpus.h"

#include "runtime/data/TokenShards.h"
#include "runtime/platform/Files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace lap::data;
namespace fs = std::filesystem;

std::vector<std::string> lap::data::corpusFiles(const std::string &path) {
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (const auto &entry : fs::directory_iterator(path))
      if (entry.is_regular_file() && !entry.is_symlink() &&
          entry.path().extension() != ".dat")
        files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
  } else {
    lap::platform::regularFileSize(path); // a FIFO would never end
    files.push_back(path);
  }
  if (files.empty())
    throw std::runtime_error(path + ": no text files here");
  return files;
}

std::vector<std::string> lap::data::readDocuments(const std::string &path) {
  std::vector<std::string> docs;
  for (const std::string &file : corpusFiles(path)) {
    std::ifstream in = lap::platform::openRegularFile(file);
    std::string line, doc;
    while (std::getline(in, line)) {
      if (line == "%") {
        if (!doc.empty())
          docs.push_back(std::move(doc));
        doc.clear();
      } else {
        doc += line + "\n";
      }
    }
    if (!doc.empty())
      docs.push_back(std::move(doc));
  }
  return docs;
}

TextShards lap::data::writeTextShards(const std::vector<std::string> &documents,
                                      const Tokenizer &tokenizer,
                                      double valFraction, uint32_t vocab,
                                      const std::string &trainPath,
                                      const std::string &valPath) {
  if (tokenizer.vocabSize() > vocab)
    throw std::runtime_error(
        "the tokenizer has " + std::to_string(tokenizer.vocabSize()) +
        " tokens, the model's vocabulary " + std::to_string(vocab));
  std::vector<uint32_t> tokens;
  for (const std::string &doc : documents) {
    tokens.push_back(tokenizer.bosId());
    std::vector<uint32_t> ids = tokenizer.encode(doc);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
  }
  auto [train, val] = lap::splitTokens(tokens, valFraction);
  lap::writeShard(trainPath, train, vocab);
  lap::writeShard(valPath, val, vocab);
  return {int64_t(documents.size()), int64_t(train.size()),
          int64_t(val.size())};
}
