//===- TokenShards.h - Token shards and the LM data loader ------*- C++ -*-===//
//
// Pre-tokenised training text in llm.c's .bin format, and the loader that
// cuts it into [B,T] batches for the model ABI.
//
// A shard is a header of 256 little-endian int32 followed by the tokens:
//   header[0] = 20240520 (magic), header[1] = version, header[2] = count,
//   the rest zero. Version 1 stores uint16 tokens (llm.c; vocabularies up to
//   65,536). Version 2 is lap's extension for larger vocabularies: the same
//   header, uint32 tokens. The file is exactly 1024 + count * width bytes;
//   anything else is refused, so a half-copied shard is an error, not data.
//
// The loader sees its shards as one concatenated stream of N tokens. Window
// i covers tokens [i*T, i*T + T] (T+1 tokens): inputs are the first T,
// targets the last T, so consecutive windows share one token and every token
// after the first is a target exactly once per pass. Training windows come
// in a permutation of all window positions fixed by seed + epoch; the last
// fraction of the stream can be held out for validation, read in order.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_TOKENSHARDS_H
#define LAP_RUNTIME_DATA_TOKENSHARDS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lap {

constexpr int32_t kShardMagic = 20240520;
constexpr int kShardHeaderInts = 256;
constexpr uint64_t kShardHeaderBytes = kShardHeaderInts * 4;
/// The largest vocabulary a version 1 (uint16) shard can hold.
constexpr uint32_t kShardV1MaxVocab = 65536;

/// Writes `tokens` as a shard: version 1 when vocabSize <= 65,536, else 2.
/// The file appears whole or not at all: it is written to a temporary file
/// in the same directory, fsynced and renamed over `path`. Throws
/// std::runtime_error (naming `path`) for a token >= vocabSize, more tokens
/// than the int32 count can say, or any I/O failure.
void writeShard(const std::string &path, const std::vector<uint32_t> &tokens,
                uint32_t vocabSize);

/// The index where the last `valFraction` (in [0, 1]) of n tokens begins.
uint64_t splitPoint(uint64_t n, double valFraction);

/// Splits a token stream into (train, val) at splitPoint: val is the tail.
std::pair<std::vector<uint32_t>, std::vector<uint32_t>>
splitTokens(const std::vector<uint32_t> &tokens, double valFraction);

/// A shard, memory-mapped read-only and validated on open. The file must not
/// be truncated while it is open (the mapping would fault).
class TokenShard {
public:
  /// Opens and validates `path`; throws std::runtime_error "PATH: PROBLEM".
  explicit TokenShard(const std::string &path);
  ~TokenShard();
  TokenShard(TokenShard &&other) noexcept;
  TokenShard &operator=(TokenShard &&other) noexcept;
  TokenShard(const TokenShard &) = delete;
  TokenShard &operator=(const TokenShard &) = delete;

  const std::string &path() const { return path_; }
  int version() const { return version_; }
  /// Bytes per token: 2 (version 1) or 4 (version 2).
  int tokenBytes() const { return version_ == 1 ? 2 : 4; }
  uint64_t size() const { return count_; }

  uint32_t operator[](uint64_t i) const {
    return version_ == 1 ? static_cast<const uint16_t *>(tokens_)[i]
                         : static_cast<const uint32_t *>(tokens_)[i];
  }
  /// Copies tokens [begin, begin + count) to `out`; throws if out of range.
  void read(uint64_t begin, uint64_t count, uint32_t *out) const;
  std::vector<uint32_t> tokens() const;

  /// The largest token (0 for an empty shard). Scans the shard on the first
  /// call and caches the result; that first call is not thread-safe.
  uint32_t maxToken() const;
  /// Throws std::runtime_error unless every token is < vocabSize.
  void checkVocab(uint32_t vocabSize) const;

private:
  void close();

  std::string path_;
  void *map_ = nullptr;
  size_t mapBytes_ = 0;
  const void *tokens_ = nullptr;
  uint64_t count_ = 0;
  int version_ = 0;
  mutable std::optional<uint32_t> maxToken_;
};

/// The entropy (nats per token) of the unigram distribution of the tokens of
/// `shards`: the loss of a model that ignores context, which a language
/// model must beat.
double unigramEntropy(const std::vector<TokenShard> &shards);

/// One batch in the layout the model ABI takes: row-major int32 [B,T].
struct LmBatch {
  int64_t batch = 0, seq = 0;
  std::vector<int32_t> inputs, targets;
  /// Padded rows (LmLoaderOptions::paddedBos): each row's length [B]; its
  /// inputs past it are 0 and its targets -1. Empty otherwise.
  std::vector<int32_t> lengths;
  /// The model ABI's batch tensors: inputs, targets and any lengths.
  std::vector<const void *> tensors() const {
    std::vector<const void *> t{inputs.data(), targets.data()};
    if (!lengths.empty())
      t.push_back(lengths.data());
    return t;
  }
};

struct LmLoaderOptions {
  int64_t batch = 0; ///< B, windows per batch.
  int64_t seq = 0;   ///< T, tokens per window (plus one for the targets).
  uint64_t seed = 0;
  /// The last fraction of the stream held out for validation; 1 makes the
  /// whole stream a validation set (e.g. a separate val.bin).
  double valFraction = 0;
  /// When nonzero, every shard is scanned on open and refused if it holds a
  /// token >= vocabSize (an embedding lookup would read out of bounds).
  uint32_t vocabSize = 0;
  /// train.data.packing: padded, documents starting with this token (-1:
  /// none): each row is the first document that starts in its window (the
  /// whole window inside a longer one), cut at the window's end; the rest
  /// of the row is padding.
  int64_t paddedBos = -1;
};

/// Batches of shuffled training windows and in-order validation windows
/// over the concatenation of one or more shards.
class LmLoader {
public:
  LmLoader(const std::vector<std::string> &paths, const LmLoaderOptions &opts);

  int64_t batchSize() const { return opts_.batch; }
  int64_t seqLen() const { return opts_.seq; }
  uint64_t tokens() const { return total_; }
  const std::vector<TokenShard> &shards() const { return shards_; }
  /// Training windows per epoch, all within [0, splitPoint).
  uint64_t trainWindows() const { return trainWindows_; }
  /// Validation windows, all within [splitPoint, tokens()).
  uint64_t valWindows() const { return valWindows_; }
  /// The first token of the validation split.
  uint64_t valBegin() const { return valBegin_; }

  /// The next training batch. Batches run over epoch boundaries: a batch may
  /// end one epoch and begin the next, so no window is ever skipped.
  void next(LmBatch &out);
  LmBatch next();

  /// Training windows consumed so far, over all epochs: epoch = position /
  /// trainWindows(), index in the epoch's order = position % trainWindows().
  /// Saving it and calling seek() later continues exactly where it stopped.
  uint64_t position() const { return position_; }
  void seek(uint64_t position) { position_ = position; }
  uint64_t epoch() const;

  /// The window start (token index) at `position` in the training order.
  uint64_t trainWindowStart(uint64_t position) const;

  /// Yields `batches` batches of validation windows in stream order, always
  /// from the start of the split; 0 means every full batch of the split.
  class ValIterator {
  public:
    /// Fills `out` and returns true, or returns false once done.
    bool next(LmBatch &out);

  private:
    friend class LmLoader;
    ValIterator(const LmLoader &loader, uint64_t batches)
        : loader_(&loader), batches_(batches) {}
    const LmLoader *loader_;
    uint64_t batches_, done_ = 0;
  };
  ValIterator validation(uint64_t batches = 0) const;

private:
  void readStream(uint64_t begin, uint64_t count, uint32_t *out) const;
  void fill(LmBatch &out, const uint64_t *starts) const;

  LmLoaderOptions opts_;
  std::string source_; ///< the shards' paths, for messages
  std::vector<TokenShard> shards_;
  std::vector<uint64_t> shardBegin_; // stream offset of each shard
  uint64_t total_ = 0, valBegin_ = 0;
  uint64_t trainWindows_ = 0, valWindows_ = 0;
  uint64_t position_ = 0;
};

} // namespace lap

#endif // LAP_RUNTIME_DATA_TOKENSHARDS_H
