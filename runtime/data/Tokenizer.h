//===- Tokenizer.h - Byte-level BPE tokenizer (tiktoken semantics) -*- C++ -*-//
//
// The tokenizer `lapc-run tokenize` uses: byte-level BPE as in GPT-2,
// tiktoken and nanochat.
//
//  - Token ids are uint32 ranks. Every single byte is a token, so any byte
//    string encodes and decode(encode(s)) == s, valid UTF-8 or not.
//  - Text is first split into chunks by a regex (PCRE2, UTF + UCP): the
//    GPT-4 (cl100k) pattern by default, GPT-2's for GPT-2 files. Bytes that
//    are not valid UTF-8 become chunks of their own. Within a chunk, the
//    adjacent pair whose concatenation has the lowest rank is merged until
//    no concatenation is a token (tiktoken's byte_pair_merge).
//  - Special tokens (`<|bos|>`, ...) have ids after the ranks; encode()
//    never produces them from text, callers insert them by id. A trained
//    tokenizer reserves nanochat's nine (kReservedSpecials): the eight that
//    render conversations, then `<|bos|>`, the last id.
//
// Files:
//  - `<path>`: tiktoken ranks, one `base64(token bytes) rank` per line,
//    ranks dense from 0 (what tiktoken's load_tiktoken_bpe reads).
//  - `<path>.json` (written by save(), optional for loadTiktoken()):
//    {"pattern": "<split regex>", "special_tokens": {"<|bos|>": 2048}}.
//
// Errors (missing file, malformed line) throw std::runtime_error naming the
// file and, where there is one, the line.
//
// A Tokenizer is immutable and cheap to copy (copies share state);
// encode() may be called from several threads at once. Encoding is in
// Tokenizer.cpp, training in TokenizerTraining.cpp, the files in
// TokenizerFiles.cpp, the split into chunks in TextSplitter.h.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_TOKENIZER_H
#define LAP_RUNTIME_DATA_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lap::data {

class Tokenizer {
public:
  /// GPT-4 / cl100k split pattern (nanochat's default).
  static const char *const kGpt4Pattern;
  /// GPT-2's split pattern.
  static const char *const kGpt2Pattern;
  /// The special token nanochat prepends to every document.
  static const char *const kBos;
  /// GPT-2's and tiktoken's name for it, which bosId() falls back to.
  static const char *const kEndOfText;
  /// The special tokens train() reserves by default, in id order:
  /// nanochat's `<|user_start|>`, `<|user_end|>`, `<|assistant_start|>`,
  /// `<|assistant_end|>`, `<|python_start|>`, `<|python_end|>`,
  /// `<|output_start|>`, `<|output_end|>`, then `<|bos|>` (so that it is
  /// the vocabulary's last id, data.bos's default).
  static const std::vector<std::string> kReservedSpecials;

  using SpecialTokens = std::vector<std::pair<std::string, uint32_t>>;

  /// Learns byte-level BPE on `texts`. `vocabSize` counts everything: 256
  /// bytes, the merges and `specials` (ids after the merges, in order).
  /// Each step merges the most frequent adjacent pair, ties going to the
  /// smallest (left id, right id); training stops early when no pair is left.
  static Tokenizer
  train(const std::vector<std::string_view> &texts, uint32_t vocabSize,
        const std::vector<std::string> &specials = kReservedSpecials,
        const std::string &pattern = kGpt4Pattern);

  /// Builds a tokenizer from token bytes indexed by rank. Throws unless the
  /// tokens are distinct, include all 256 single bytes, and the special ids
  /// do not collide with ranks or each other.
  static Tokenizer fromRanks(std::vector<std::string> tokens,
                             const SpecialTokens &specials = {},
                             const std::string &pattern = kGpt4Pattern);

  /// Reads a tiktoken ranks file; pattern and special tokens come from the
  /// `<path>.json` sidecar when there is one, else the GPT-4 pattern and no
  /// special tokens.
  static Tokenizer loadTiktoken(const std::string &path);
  /// Reads a tiktoken ranks file with the given pattern and special tokens
  /// (e.g. cl100k_base's `<|endoftext|>` = 100257); ignores any sidecar.
  static Tokenizer loadTiktoken(const std::string &path,
                                const std::string &pattern,
                                const SpecialTokens &specials);

  /// Reads OpenAI's GPT-2 files: encoder.json (GPT-2's unicode-remapped
  /// token strings to ids) and vocab.bpe (merges in rank order). Ids must be
  /// the ranks vocab.bpe implies (bytes in bytes_to_unicode order, then one
  /// per merge); encoder.json entries that are not merges (`<|endoftext|>`)
  /// become special tokens. Splits with kGpt2Pattern.
  static Tokenizer loadGpt2(const std::string &encoderJsonPath,
                            const std::string &vocabBpePath);

  /// Writes `path` (tiktoken ranks) and `path + ".json"` (pattern, specials).
  void save(const std::string &path) const;

  /// Token ids of `text`; never special tokens.
  std::vector<uint32_t> encode(std::string_view text) const;
  /// The bytes of `ids`; a special token decodes to its name. Throws
  /// std::out_of_range on an id that is not a token.
  std::string decode(const std::vector<uint32_t> &ids) const;

  /// One past the largest id, special tokens included.
  uint32_t vocabSize() const;
  /// Number of ranked (non-special) tokens.
  uint32_t numRanks() const;
  /// Bytes of ranked token `id` (throws std::out_of_range).
  const std::string &tokenBytes(uint32_t id) const;
  std::optional<uint32_t> specialId(std::string_view name) const;
  /// Id of `<|bos|>`, else of `<|endoftext|>` (GPT-2's and tiktoken's
  /// files); nullopt if there is neither.
  std::optional<uint32_t> findBos() const;
  /// findBos(), or a std::runtime_error when there is none.
  uint32_t bosId() const;
  const SpecialTokens &specialTokens() const;
  const std::string &pattern() const;

  struct Impl;

private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl)
      : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_TOKENIZER_H
