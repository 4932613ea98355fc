//===- TextCorpus.h - Text files to token shards ----------------*- C++ -*-===//
//
// Text for language modelling: a file or a directory of files (e.g.
// Debian's fortunes), split into documents at lines holding only `%`. Each
// document is encoded after a <|bos|> token and the stream is split into
// train and validation shards.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_TEXTCORPUS_H
#define LAP_RUNTIME_DATA_TEXTCORPUS_H

#include "runtime/data/Tokenizer.h"

#include <string>
#include <vector>

namespace lap::data {

/// The files of the corpus `path`: the file itself, or every regular file of
/// the directory in name order (fortune index files `.dat` and symlinks
/// skipped). Throws when there are none or `path` is no regular file.
std::vector<std::string> corpusFiles(const std::string &path);

/// The documents of corpusFiles(path), in order.
std::vector<std::string> readDocuments(const std::string &path);

/// What writeTextShards wrote.
struct TextShards {
  int64_t documents = 0, trainTokens = 0, valTokens = 0;
};

/// Encodes `documents` (each after <|bos|>), keeps the last `valFraction` of
/// the tokens for validation, and writes `trainPath` and `valPath` for a
/// model of `vocab` tokens.
TextShards writeTextShards(const std::vector<std::string> &documents,
                           const Tokenizer &tokenizer, double valFraction,
                           uint32_t vocab, const std::string &trainPath,
                           const std::string &valPath);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_TEXTCORPUS_H
