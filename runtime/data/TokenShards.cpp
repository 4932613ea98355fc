//===- TokenShards.cpp - Token shards and the LM data loader ----*- C++ -*-===//

#include "runtime/data/TokenShards.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"
#include "runtime/platform/Random.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

using namespace lap;

// The format is little-endian and read in place from the mapping.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token shards are read in place: little-endian hosts only");

namespace {

using lap::platform::fail;
using lap::platform::failWithErrno;

/// A bijection of [0, n) keyed by a seed: a balanced Feistel network over
/// the smallest 4^k >= n, cycle-walked back into range. It needs no table,
/// so any position of an epoch of billions of windows is O(1) to compute,
/// and it is the same on every platform (std::shuffle is not).
class Permutation {
public:
  Permutation(uint64_t n, uint64_t seed) : n_(n) {
    while (half_ < 31 && (uint64_t(1) << (2 * half_)) < n)
      ++half_;
    mask_ = (uint64_t(1) << half_) - 1;
    uint64_t state = seed;
    for (uint64_t &key : keys_)
      key = mix64(state += kSplitMixIncrement);
  }

  uint64_t operator()(uint64_t i) const {
    // Each step stays in [0, 4^k); at most 4^k / n < 4 steps on average.
    do
      i = encrypt(i);
    while (i >= n_);
    return i;
  }

private:
  uint64_t encrypt(uint64_t x) const {
    uint64_t left = x >> half_, right = x & mask_;
    for (uint64_t key : keys_) {
      uint64_t next = left ^ (mix64(right + key) & mask_);
      left = right;
      right = next;
    }
    return (left << half_) | right;
  }

  uint64_t n_;
  int half_ = 1;
  uint64_t mask_ = 0;
  uint64_t keys_[6] = {};
};

} // namespace

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void lap::writeShard(const std::string &path,
                     const std::vector<uint32_t> &tokens, uint32_t vocabSize) {
  if (vocabSize == 0)
    fail(path, "vocabulary size must be positive");
  if (tokens.size() > uint64_t(std::numeric_limits<int32_t>::max()))
    fail(path, std::to_string(tokens.size()) +
                   " tokens do not fit one shard (the header's count is "
                   "an int32); split them over several shards");
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocabSize)
      fail(path, "token " + std::to_string(tokens[i]) + " at index " +
                     std::to_string(i) + " is out of range for vocabulary " +
                     std::to_string(vocabSize));
  const int version = vocabSize <= kShardV1MaxVocab ? 1 : 2;

  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = version;
  header[2] = static_cast<int32_t>(tokens.size());

  platform::AtomicFileWriter file(path);
  file.write(header, sizeof header);
  if (version == 2) {
    file.write(tokens.data(), tokens.size() * 4);
  } else {
    std::vector<uint16_t> chunk;
    constexpr size_t kChunk = size_t(1) << 20;
    for (size_t i = 0; i < tokens.size(); i += kChunk) {
      size_t n = std::min(kChunk, tokens.size() - i);
      chunk.assign(tokens.begin() + i, tokens.begin() + i + n);
      file.write(chunk.data(), n * 2);
    }
  }
  file.commit();
}

uint64_t lap::splitPoint(uint64_t n, double valFraction) {
  if (!(valFraction >= 0 && valFraction <= 1))
    throw std::invalid_argument("validation fraction " +
                                std::to_string(valFraction) +
                                " is not in [0, 1]");
  auto val = static_cast<uint64_t>(std::llround(double(n) * valFraction));
  return n - std::min(val, n);
}

std::pair<std::vector<uint32_t>, std::vector<uint32_t>>
lap::splitTokens(const std::vector<uint32_t> &tokens, double valFraction) {
  auto mid = tokens.begin() + splitPoint(tokens.size(), valFraction);
  return {std::vector<uint32_t>(tokens.begin(), mid),
          std::vector<uint32_t>(mid, tokens.end())};
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

TokenShard::TokenShard(const std::string &path) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    failWithErrno(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    failWithErrno(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, platform::notRegularFile(st.st_mode));
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kShardHeaderBytes) {
    ::close(fd);
    fail(path, "too small for a token shard: " + std::to_string(size) +
                   " bytes (the header alone is " +
                   std::to_string(kShardHeaderBytes) + ")");
  }
  map_ = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int saved = errno;
  ::close(fd); // The mapping keeps the file open.
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    errno = saved;
    failWithErrno(path, "cannot mmap");
  }
  mapBytes_ = size;

  try {
    const auto *header = static_cast<const int32_t *>(map_);
    if (header[0] != kShardMagic)
      fail(path, "bad magic " + std::to_string(header[0]) + " (expected " +
                     std::to_string(kShardMagic) + ": not a token shard)");
    version_ = header[1];
    if (version_ != 1 && version_ != 2)
      fail(path, "unsupported version " + std::to_string(version_) +
                     " (expected 1: uint16 tokens, or 2: uint32 tokens)");
    if (header[2] < 0)
      fail(path, "bad token count " + std::to_string(header[2]));
    count_ = static_cast<uint64_t>(header[2]);
    uint64_t want = count_ * tokenBytes(), have = size - kShardHeaderBytes;
    if (have != want)
      fail(path, std::string(have < want ? "truncated" : "trailing bytes") +
                     ": header says " + std::to_string(count_) + " tokens (" +
                     std::to_string(want) + " bytes) but " +
                     std::to_string(have) + " bytes follow");
  } catch (...) {
    close();
    throw;
  }
  tokens_ = static_cast<const char *>(map_) + kShardHeaderBytes;
}

TokenShard::~TokenShard() { close(); }

void TokenShard::close() {
  if (map_)
    ::munmap(map_, mapBytes_);
  map_ = nullptr;
  tokens_ = nullptr;
}

TokenShard::TokenShard(TokenShard &&other) noexcept {
  *this = std::move(other);
}

TokenShard &TokenShard::operator=(TokenShard &&other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    mapBytes_ = std::exchange(other.mapBytes_, 0);
    tokens_ = std::exchange(other.tokens_, nullptr);
    count_ = std::exchange(other.count_, 0);
    version_ = std::exchange(other.version_, 0);
    maxToken_ = std::exchange(other.maxToken_, std::nullopt);
  }
  return *this;
}

void TokenShard::read(uint64_t begin, uint64_t count, uint32_t *out) const {
  if (begin > count_ || count > count_ - begin)
    fail(path_, "read of tokens [" + std::to_string(begin) + ", " +
                    std::to_string(begin + count) + ") past the end (" +
                    std::to_string(count_) + " tokens)");
  if (version_ == 2) {
    std::memcpy(out, static_cast<const uint32_t *>(tokens_) + begin, count * 4);
    return;
  }
  const uint16_t *in = static_cast<const uint16_t *>(tokens_) + begin;
  std::copy(in, in + count, out);
}

std::vector<uint32_t> TokenShard::tokens() const {
  std::vector<uint32_t> out(count_);
  read(0, count_, out.data());
  return out;
}

uint32_t TokenShard::maxToken() const {
  if (!maxToken_) {
    uint32_t best = 0;
    for (uint64_t i = 0; i < count_; ++i)
      best = std::max(best, (*this)[i]);
    maxToken_ = best;
  }
  return *maxToken_;
}

double lap::unigramEntropy(const std::vector<TokenShard> &shards) {
  std::vector<uint64_t> counts;
  uint64_t total = 0;
  for (const TokenShard &shard : shards)
    for (uint64_t i = 0; i < shard.size(); ++i) {
      uint32_t t = shard[i];
      if (t >= counts.size())
        counts.resize(size_t(t) + 1);
      ++counts[t];
      ++total;
    }
  double entropy = 0;
  for (uint64_t c : counts)
    if (c)
      entropy -=
          double(c) / double(total) * std::log(double(c) / double(total));
  return entropy;
}

void TokenShard::checkVocab(uint32_t vocabSize) const {
  if (count_ == 0 || maxToken() < vocabSize)
    return;
  uint64_t i = 0;
  while ((*this)[i] < vocabSize)
    ++i;
  fail(path_, "token " + std::to_string((*this)[i]) + " at index " +
                  std::to_string(i) + " is out of range for vocabulary " +
                  std::to_string(vocabSize));
}

//===----------------------------------------------------------------------===//
// Loader
//===----------------------------------------------------------------------===//

LmLoader::LmLoader(const std::vector<std::string> &paths,
                   const LmLoaderOptions &opts)
    : opts_(opts) {
  if (paths.empty())
    throw std::invalid_argument("LmLoader: no token shards given");
  if (opts.batch <= 0 || opts.seq <= 0)
    throw std::invalid_argument("LmLoader: batch and sequence length must be "
                                "positive (got B=" +
                                std::to_string(opts.batch) +
                                ", T=" + std::to_string(opts.seq) + ")");
  for (const std::string &path : paths) {
    source_ += (source_.empty() ? "" : ", ") + path;
    shards_.emplace_back(path);
    if (opts.vocabSize)
      shards_.back().checkVocab(opts.vocabSize);
    shardBegin_.push_back(total_);
    total_ += shards_.back().size();
  }
  valBegin_ = splitPoint(total_, opts.valFraction);
  const auto T = static_cast<uint64_t>(opts.seq);
  // A window needs T + 1 tokens; window i ends at token i*T + T.
  trainWindows_ = valBegin_ ? (valBegin_ - 1) / T : 0;
  uint64_t valTokens = total_ - valBegin_;
  valWindows_ = valTokens ? (valTokens - 1) / T : 0;
}

uint64_t LmLoader::epoch() const {
  return trainWindows_ ? position_ / trainWindows_ : 0;
}

uint64_t LmLoader::trainWindowStart(uint64_t position) const {
  uint64_t epoch = position / trainWindows_, index = position % trainWindows_;
  Permutation order(trainWindows_, opts_.seed + epoch);
  return order(index) * static_cast<uint64_t>(opts_.seq);
}

void LmLoader::readStream(uint64_t begin, uint64_t count, uint32_t *out) const {
  // The last shard starting at or before `begin`; empty shards share their
  // successor's offset, so this one is non-empty while begin < total_.
  size_t s = std::upper_bound(shardBegin_.begin(), shardBegin_.end(), begin) -
             shardBegin_.begin() - 1;
  while (count > 0) {
    const TokenShard &shard = shards_[s];
    uint64_t offset = begin - shardBegin_[s];
    uint64_t n = std::min(count, shard.size() - offset);
    shard.read(offset, n, out);
    out += n;
    begin += n;
    count -= n;
    ++s;
  }
}

void LmLoader::fill(LmBatch &out, const uint64_t *starts) const {
  const auto B = static_cast<size_t>(opts_.batch);
  const auto T = static_cast<size_t>(opts_.seq);
  out.batch = opts_.batch;
  out.seq = opts_.seq;
  out.inputs.resize(B * T);
  out.targets.resize(B * T);
  out.lengths.assign(opts_.paddedBos >= 0 ? B : 0, 0);
  std::vector<uint32_t> window(T + 1);
  for (size_t b = 0; b < B; ++b) {
    readStream(starts[b], T + 1, window.data());
    for (size_t t = 0; t <= T; ++t)
      if (window[t] > uint32_t(std::numeric_limits<int32_t>::max()))
        throw std::runtime_error("token " + std::to_string(window[t]) +
                                 " at stream offset " +
                                 std::to_string(starts[b] + t) +
                                 " does not fit the model ABI's int32 tokens");
    // Padded: the row takes the window's tokens from its first document
    // start (none: the window is inside a document) to the next one.
    size_t from = 0, length = T;
    if (opts_.paddedBos >= 0) {
      const auto bos = uint32_t(opts_.paddedBos);
      from = size_t(std::find(window.begin(), window.end() - 1, bos) -
                    window.begin()) %
             T;
      const size_t next =
          size_t(std::find(window.begin() + from + 1, window.end(), bos) -
                 window.begin());
      length = std::min(T, next) - from;
      out.lengths[b] = int32_t(length);
    }
    for (size_t t = 0; t < T; ++t) {
      const bool real = t < length;
      out.inputs[b * T + t] = real ? int32_t(window[from + t]) : 0;
      out.targets[b * T + t] = real ? int32_t(window[from + t + 1]) : -1;
    }
  }
}

void LmLoader::next(LmBatch &out) {
  if (trainWindows_ == 0)
    throw std::runtime_error(
        source_ + ": no training windows: " + std::to_string(valBegin_) +
        " training tokens, a window needs " + std::to_string(opts_.seq + 1));
  std::vector<uint64_t> starts(static_cast<size_t>(opts_.batch));
  for (uint64_t &start : starts)
    start = trainWindowStart(position_++);
  fill(out, starts.data());
}

LmBatch LmLoader::next() {
  LmBatch out;
  next(out);
  return out;
}

LmLoader::ValIterator LmLoader::validation(uint64_t batches) const {
  uint64_t available = valWindows_ / static_cast<uint64_t>(opts_.batch);
  if (available == 0)
    throw std::runtime_error(
        source_ + ": no validation batch: " + std::to_string(valWindows_) +
        " validation windows of " + std::to_string(opts_.seq + 1) +
        " tokens, a batch needs " + std::to_string(opts_.batch));
  if (batches > available)
    throw std::runtime_error(source_ + ": " + std::to_string(batches) +
                             " validation batches asked for, the split holds " +
                             std::to_string(available));
  return ValIterator(*this, batches ? batches : available);
}

bool LmLoader::ValIterator::next(LmBatch &out) {
  if (done_ == batches_)
    return false;
  const auto B = static_cast<uint64_t>(loader_->opts_.batch);
  const auto T = static_cast<uint64_t>(loader_->opts_.seq);
  std::vector<uint64_t> starts(B);
  for (uint64_t b = 0; b < B; ++b)
    starts[b] = loader_->valBegin_ + (done_ * B + b) * T;
  loader_->fill(out, starts.data());
  ++done_;
  return true;
}
