//===- RankAgreement.cpp - The ranks of a run agree before it starts ------===//

#include "runtime/train/RankAgreement.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <stdexcept>

using namespace lap;

namespace {

/// Every rank's `text`, in rank order: the lengths first, then the bytes
/// in whole 8-byte words (the communicator's smallest element).
std::vector<std::string> gatherText(comm::Communicator &comm,
                                    const std::string &text) {
  const size_t ranks = size_t(comm.size()), rank = size_t(comm.rank());
  std::vector<int64_t> lengths(ranks, 0), ones(ranks, 1);
  lengths[rank] = int64_t(text.size());
  comm.allGather(lengths.data(), ones, comm::DataType::I64);
  std::vector<int64_t> words(ranks, 0), offsets(ranks + 1, 0);
  for (size_t r = 0; r < ranks; ++r) {
    words[r] = (lengths[r] + 7) / 8;
    offsets[r + 1] = offsets[r] + words[r];
  }
  std::vector<int64_t> data(size_t(offsets.back()), 0);
  std::memcpy(data.data() + offsets[rank], text.data(), text.size());
  comm.allGather(data.data(), words, comm::DataType::I64);
  std::vector<std::string> texts;
  for (size_t r = 0; r < ranks; ++r)
    texts.emplace_back(reinterpret_cast<const char *>(data.data() + offsets[r]),
                       size_t(lengths[r]));
  return texts;
}

} // namespace

void lap::train::agreeAcrossRanks(comm::Communicator &comm,
                                  const std::vector<SharedSetting> &settings) {
  if (comm.size() == 1)
    return;
  nlohmann::json mine = nlohmann::json::array();
  for (const auto &[name, value] : settings)
    mine.push_back({name, value});
  std::vector<std::string> all = gatherText(comm, mine.dump());
  nlohmann::json first = nlohmann::json::parse(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    nlohmann::json other = nlohmann::json::parse(all[r]);
    if (other.size() != first.size())
      throw std::runtime_error(fmt::format(
          "the ranks disagree on what they compare ({} settings on rank 0, "
          "{} on rank {}): every rank must run the same lapc-run",
          first.size(), other.size(), r));
    for (size_t i = 0; i < first.size(); ++i)
      if (first[i] != other[i])
        throw std::runtime_error(fmt::format(
            "the ranks disagree on {}: rank 0 has {}, rank {} has {}; every "
            "rank of a run must be given the same model, spec and flags",
            first[i][0].get<std::string>(), first[i][1].dump(), r,
            other[i][1].dump()));
  }
}
