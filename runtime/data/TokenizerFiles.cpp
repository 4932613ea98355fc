//===- TokenizerFiles.cpp - Tokenizers in tiktoken's and GPT-2's files ----===//
//
// tiktoken's ranks file (a base64 token and its rank a line; lap keeps the
// pattern and special tokens in a JSON file beside it) and GPT-2's
// encoder.json + vocab.bpe, whose tokens are written through GPT-2's
// bytes_to_unicode table. Errors name the file and line.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Tokenizer.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <sys/stat.h>

namespace lap::data {

namespace {

using lap::platform::fail;

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();

//--- Base64 -----------------------------------------------------------------

const char kB64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v =
        (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (size_t rest = in.size() - i) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (rest == 2)
      v |= uint8_t(in[i + 1]) << 8;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += rest == 2 ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view in) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t;
    t.fill(-1);
    for (int i = 0; i < 64; ++i)
      t[uint8_t(kB64[i])] = int8_t(i);
    return t;
  }();
  if (in.empty() || in.size() % 4)
    return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && in[in.size() - 1 - pad] == '=')
    ++pad;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    int8_t v = table[uint8_t(in[i])];
    if (v < 0)
      return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
    }
  }
  return out;
}

//--- GPT-2's bytes_to_unicode -------------------------------------------------

// Byte b is written in GPT-2 files as code point byteToCp[b]; printable
// Latin-1 bytes map to themselves, the others to 256 + n in byte order.
// Also the order in which GPT-2 ranks the single bytes.
struct Gpt2Bytes {
  std::array<uint32_t, 256> byteToCp{};
  std::vector<uint8_t> rankOrder; // byte with rank i
  std::unordered_map<uint32_t, uint8_t> cpToByte;
  Gpt2Bytes() {
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
             (b >= 0xAE && b <= 0xFF);
    };
    for (int b = 0; b < 256; ++b)
      if (printable(b)) {
        rankOrder.push_back(uint8_t(b));
        byteToCp[b] = uint32_t(b);
      }
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b)
      if (!printable(b)) {
        rankOrder.push_back(uint8_t(b));
        byteToCp[b] = 256 + n++;
      }
    for (int b = 0; b < 256; ++b)
      cpToByte[byteToCp[b]] = uint8_t(b);
  }
  // The bytes a GPT-2 token string stands for; nullopt if it is not valid
  // UTF-8 or has a code point outside the table.
  std::optional<std::string> decode(std::string_view s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      uint8_t c = uint8_t(s[i]);
      uint32_t cp;
      size_t len;
      if (c < 0x80) {
        cp = c;
        len = 1;
      } else if ((c & 0xE0) == 0xC0) {
        cp = c & 0x1F;
        len = 2;
      } else if ((c & 0xF0) == 0xE0) {
        cp = c & 0x0F;
        len = 3;
      } else {
        return std::nullopt; // The table stops at U+0143.
      }
      if (i + len > s.size())
        return std::nullopt;
      for (size_t k = 1; k < len; ++k) {
        uint8_t cc = uint8_t(s[i + k]);
        if ((cc & 0xC0) != 0x80)
          return std::nullopt;
        cp = (cp << 6) | (cc & 0x3F);
      }
      auto it = cpToByte.find(cp);
      if (it == cpToByte.end())
        return std::nullopt;
      out += char(it->second);
      i += len;
    }
    return out;
  }
};

const Gpt2Bytes &gpt2Bytes() {
  static const Gpt2Bytes table;
  return table;
}

bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// A decimal uint32 with nothing else around it.
std::optional<uint32_t> parseRank(std::string_view s) {
  if (s.empty() || s.size() > 10)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v >= kNoRank)
    return std::nullopt;
  return uint32_t(v);
}

// Whitespace-separated fields of a line.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t')
      ++j;
    if (j > i)
      out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

} // namespace

void Tokenizer::save(const std::string &path) const {
  std::string ranks;
  for (uint32_t r = 0; r < numRanks(); ++r)
    ranks += base64Encode(tokenBytes(r)) + ' ' + std::to_string(r) + '\n';
  nlohmann::json side;
  side["pattern"] = pattern();
  side["special_tokens"] = nlohmann::json::object();
  for (const auto &[name, id] : specialTokens())
    side["special_tokens"][name] = id;
  // The side file first: a reader that finds the ranks finds both whole.
  platform::writeFileAtomically(path + ".json", side.dump(2) + "\n");
  platform::writeFileAtomically(path, ranks);
}

Tokenizer Tokenizer::loadTiktoken(const std::string &path) {
  std::string sidePath = path + ".json";
  if (!fileExists(sidePath))
    return loadTiktoken(path, kGpt4Pattern, {});
  std::ifstream in = platform::openRegularFile(sidePath);
  std::string pattern = kGpt4Pattern;
  SpecialTokens specials;
  try {
    nlohmann::json side = nlohmann::json::parse(in);
    if (!side.is_object())
      throw std::runtime_error("expected a JSON object");
    if (side.contains("pattern"))
      pattern = side.at("pattern").get<std::string>();
    if (side.contains("special_tokens"))
      for (const auto &[name, id] : side.at("special_tokens").items()) {
        if (!id.is_number_unsigned() || id.get<uint64_t>() >= kNoRank)
          throw std::runtime_error("special token " + name +
                                   ": id is not a uint32");
        specials.emplace_back(name, id.get<uint32_t>());
      }
  } catch (const std::exception &e) {
    fail(sidePath, e.what());
  }
  return loadTiktoken(path, pattern, specials);
}

Tokenizer Tokenizer::loadTiktoken(const std::string &path,
                                  const std::string &pattern,
                                  const SpecialTokens &specials) {
  std::ifstream in = platform::openRegularFile(path);
  std::vector<std::string> tokens;
  std::vector<size_t> lineOfRank;
  std::string line;
  size_t lineNo = 0;
  auto where = [&] { return path + ":" + std::to_string(lineNo); };
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    std::vector<std::string_view> f = fields(line);
    if (f.empty())
      continue;
    if (f.size() != 2)
      fail(where(), "expected `base64-token rank`");
    std::optional<std::string> bytes = base64Decode(f[0]);
    if (!bytes)
      fail(where(), "invalid base64 token '" + std::string(f[0]) + "'");
    std::optional<uint32_t> rank = parseRank(f[1]);
    if (!rank)
      fail(where(), "invalid rank '" + std::string(f[1]) + "'");
    // Ranks are dense, so a rank far past the line count is malformed.
    if (*rank > lineNo + (1u << 20))
      fail(where(), "rank " + std::to_string(*rank) + " leaves a gap");
    if (*rank >= tokens.size()) {
      tokens.resize(*rank + 1);
      lineOfRank.resize(*rank + 1, 0);
    }
    if (lineOfRank[*rank])
      fail(where(), "rank " + std::to_string(*rank) +
                        " already given on line " +
                        std::to_string(lineOfRank[*rank]));
    tokens[*rank] = std::move(*bytes);
    lineOfRank[*rank] = lineNo;
  }
  if (in.bad())
    fail(path, "read error");
  for (size_t r = 0; r < tokens.size(); ++r)
    if (!lineOfRank[r])
      fail(path, "rank " + std::to_string(r) + " is missing");
  try {
    return fromRanks(std::move(tokens), specials, pattern);
  } catch (const std::runtime_error &e) {
    fail(path, e.what());
  }
}

Tokenizer Tokenizer::loadGpt2(const std::string &encoderJsonPath,
                              const std::string &vocabBpePath) {
  const Gpt2Bytes &g2 = gpt2Bytes();
  // Ranks from vocab.bpe: bytes in bytes_to_unicode order, then the merges.
  std::vector<std::string> tokens;
  std::unordered_map<std::string, uint32_t> rankOf;
  for (uint8_t b : g2.rankOrder) {
    rankOf.emplace(std::string(1, char(b)), uint32_t(tokens.size()));
    tokens.emplace_back(1, char(b));
  }
  {
    std::ifstream in = platform::openRegularFile(vocabBpePath);
    std::string line;
    size_t lineNo = 0;
    auto where = [&] { return vocabBpePath + ":" + std::to_string(lineNo); };
    while (std::getline(in, line)) {
      ++lineNo;
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line.empty() || (lineNo == 1 && line.rfind("#version", 0) == 0))
        continue;
      // Split on the one space: `Ġ` and friends stand for spaces in tokens.
      size_t sp = line.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() ||
          line.find(' ', sp + 1) != std::string::npos)
        fail(where(), "expected `left right`");
      std::string merged;
      for (std::string_view part : {std::string_view(line).substr(0, sp),
                                    std::string_view(line).substr(sp + 1)}) {
        std::optional<std::string> bytes = g2.decode(part);
        if (!bytes || !rankOf.count(*bytes))
          fail(where(), "'" + std::string(part) + "' is not a token");
        merged += *bytes;
      }
      if (!rankOf.emplace(merged, uint32_t(tokens.size())).second)
        fail(where(), "merge repeats an earlier token");
      tokens.push_back(std::move(merged));
    }
    if (in.bad())
      fail(vocabBpePath, "read error");
  }

  std::ifstream in = platform::openRegularFile(encoderJsonPath);
  nlohmann::json enc;
  try {
    enc = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    fail(encoderJsonPath, e.what());
  }
  if (!enc.is_object())
    fail(encoderJsonPath, "expected a JSON object");
  SpecialTokens specials;
  size_t ranked = 0;
  for (const auto &[key, value] : enc.items()) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() >= kNoRank)
      fail(encoderJsonPath, "id of '" + key + "' is not a uint32");
    uint32_t id = value.get<uint32_t>();
    std::optional<std::string> bytes = g2.decode(key);
    auto it = bytes ? rankOf.find(*bytes) : rankOf.end();
    if (it == rankOf.end()) {
      specials.emplace_back(key, id); // e.g. <|endoftext|>
      continue;
    }
    if (it->second != id)
      fail(encoderJsonPath, "'" + key + "' has id " + std::to_string(id) +
                                " but rank " + std::to_string(it->second) +
                                " in " + vocabBpePath);
    ++ranked;
  }
  if (ranked != tokens.size())
    fail(encoderJsonPath, "has " + std::to_string(ranked) + " of the " +
                              std::to_string(tokens.size()) + " tokens of " +
                              vocabBpePath);
  std::sort(specials.begin(), specials.end(),
            [](const auto &x, const auto &y) { return x.second < y.second; });
  try {
    return fromRanks(std::move(tokens), specials, kGpt2Pattern);
  } catch (const std::runtime_error &e) {
    fail(encoderJsonPath, e.what());
  }
}

} // namespace lap::data
