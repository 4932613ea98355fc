//===- Variants.cpp - The variants of a spec's sweep ----------------------===//

#include "runtime/sweep/Variants.h"

#include "dsl/SpecParser.h"
#include "dsl/SpecPrinter.h"
#include "runtime/platform/FileNames.h"
#include "runtime/platform/Files.h"
#include "runtime/platform/Hash.h"

#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace lap::sweep {

std::vector<Variant> readVariants(const std::string &dir) {
  nlohmann::json index = nlohmann::json::parse(
      platform::readRegularFile(dir + "/sweep.json", 1 << 26));
  std::vector<Variant> variants;
  for (const nlohmann::json &v : index.at("variants")) {
    Variant variant;
    variant.name = v.at("name");
    platform::pathInDirectory(dir, variant.name, "the variant name");
    variant.specFile = platform::pathInDirectory(
        dir, v.at("spec").get<std::string>(), "the variant spec");
    variant.axes = v.at("axes").get<std::vector<std::string>>();
    variant.values = v.at("values").get<std::map<std::string, std::string>>();
    variants.push_back(std::move(variant));
  }
  return variants;
}

std::vector<std::string> groupModels(std::vector<Variant> &variants,
                                     const std::string &modelsDir) {
  std::map<std::string, std::string> groupOfKey;
  std::vector<std::string> groups;
  for (Variant &v : variants) {
    dsl::Diagnostics diags;
    std::optional<dsl::Spec> spec = dsl::loadSpec(v.specFile, diags);
    if (!spec)
      throw std::runtime_error(v.specFile + ": lapc wrote a spec it cannot "
                                            "read back");
    v.seed = spec->train.seed;
    dsl::Spec key = *spec;
    key.name.clear();
    key.train.seed = 0;
    std::string hash = platform::contentHash(dsl::printSpec(key));
    auto [it, fresh] = groupOfKey.emplace(hash, "");
    if (fresh) {
      std::string name = v.name;
      if (v.values.count(kSeedAxis))
        if (size_t at = name.find("-seed=" + v.values[kSeedAxis]);
            at != std::string::npos)
          name.erase(at, 6 + v.values[kSeedAxis].size());
      it->second = name;
      groups.push_back(name);
      platform::writeFileAtomically(
          platform::pathInDirectory(modelsDir, name + ".yaml", "the model"),
          dsl::printSpec(*spec));
    }
    v.group = it->second;
  }
  // Members train with their own seed unless it is the library's; seed 0
  // cannot be given as --seed (0 means the spec's there), so the library's
  // own seed must be the one.
  std::map<std::string, int64_t> librarySeed;
  for (const Variant &v : variants)
    librarySeed.emplace(v.group, v.seed);
  for (Variant &v : variants) {
    v.passSeed = v.seed != librarySeed[v.group];
    if (v.passSeed && v.seed < 1)
      throw std::runtime_error(
          v.specFile + ": train.seed 0 cannot share a library with other "
                       "seeds; sweep seeds from 1");
  }
  return groups;
}

std::optional<nlohmann::json> finishedSummary(const std::string &runDir) {
  std::string path = runDir + "/summary.json";
  if (!fs::exists(path))
    return std::nullopt;
  auto summary = nlohmann::json::parse(platform::readRegularFile(path, 1 << 24),
                                       nullptr, false);
  if (summary.is_discarded() || !summary.value("finished", false))
    return std::nullopt;
  return summary;
}

} // namespace lap::sweep
