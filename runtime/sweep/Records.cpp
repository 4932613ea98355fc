//===- Records.cpp - How each variant of a sweep was trained --------------===//

#include "runtime/sweep/Records.h"

#include "runtime/platform/Files.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;

namespace lap::sweep {

namespace {

/// What differs between the record a run directory holds and `wanted`:
/// "" when they agree.
std::string recordDifference(const std::string &runDir,
                             const nlohmann::json &wanted) {
  std::string path = runDir + "/sweep-record.json";
  if (!fs::exists(fs::symlink_status(path)))
    return "its run directory has no record of how it was trained";
  nlohmann::json was = nlohmann::json::parse(
      platform::readRegularFile(path, 1 << 16), nullptr, false);
  if (was.is_discarded() || !was.is_object())
    return path + " is not a sweep's record";
  auto steps = [](const nlohmann::json &n) {
    return n.is_number_integer() && n.get<int64_t>() > 0
               ? "--steps " + n.dump()
               : std::string("the spec's steps");
  };
  std::vector<std::string> differences;
  if (was.value("library", "") != wanted["library"])
    differences.push_back("its model library differs (the spec or "
                          "--max-batch changed)");
  if (was["seed"] != wanted["seed"])
    differences.push_back("it trained with seed " + was["seed"].dump() +
                          ", this sweep's is " + wanted["seed"].dump());
  if (was["steps"] != wanted["steps"])
    differences.push_back("it trained with " + steps(was["steps"]) +
                          ", this sweep asks for " + steps(wanted["steps"]));
  std::string text;
  for (const std::string &d : differences)
    text += (text.empty() ? "" : "; ") + d;
  return text;
}

} // namespace

nlohmann::json trainingRecord(const Variant &v, const std::string &libraryHash,
                              int64_t steps) {
  return {{"library", libraryHash}, {"seed", v.seed}, {"steps", steps}};
}

bool checkRecords(const std::vector<Variant> &variants,
                  const std::vector<nlohmann::json> &records,
                  const std::string &runs, bool retrain) {
  size_t stale = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    std::string run = runs + "/" + variants[i].name;
    if (!fs::exists(fs::symlink_status(run)))
      continue;
    std::string why = recordDifference(run, records[i]);
    if (why.empty())
      continue;
    if (retrain) {
      fmt::print("retrain {}: {}\n", variants[i].name, why);
      fs::remove_all(run);
      fs::remove(run + ".log");
      continue;
    }
    fmt::print(stderr, "lapc-run: error: {}: {}\n", variants[i].name, why);
    ++stale;
  }
  if (stale)
    fmt::print(stderr,
               "lapc-run: error: {} variant{} trained otherwise than this "
               "sweep asks: run it with the settings they were trained "
               "with, or add --retrain to train them again from scratch\n",
               stale, stale == 1 ? " was" : "s were");
  std::fflush(stderr);
  return stale == 0;
}

} // namespace lap::sweep
