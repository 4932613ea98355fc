//===- Sweep.cpp - lapc-run sweep ---------------------------------*- C++ -*-===//
//
// Trains every variant of a spec's sweep (docs/spec.md, "sweep"):
//  1. `lapc SPEC --emit=sweep -o OUT/specs` expands the variants (its spec
//     errors are lapc's, with the line and a caret);
//  2. each distinct model is compiled once into OUT/models/: variants that
//     differ only in train.seed share a library and train with --seed
//     (runtime/sweep/Variants.h);
//  3. each variant trains in OUT/runs/<variant>/, --jobs at a time, and
//     records how (runtime/sweep/Runs.h, Records.h); running the same
//     command again continues an interrupted sweep;
//  4. OUT/results.csv, a printed table and OUT/plots/ give each metric as
//     mean ± std over the seeds (runtime/sweep/Results.h).
// A sweep stopped by a signal exits with 128 + the signal.
//
//===----------------------------------------------------------------------===//

#include "runtime/platform/FileNames.h"
#include "runtime/platform/Files.h"
#include "runtime/platform/Hash.h"
#include "runtime/platform/Process.h"
#include "runtime/sweep/Records.h"
#include "runtime/sweep/Results.h"
#include "runtime/sweep/Runs.h"
#include "runtime/tools/lapc-run/Commands.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <stdexcept>

using namespace lap;
namespace fs = std::filesystem;

namespace {

/// lapc beside lapc-run (a build or an install), else lapc on PATH.
std::string lapcPath() {
  fs::path beside = fs::path(platform::executablePath()).parent_path() / "lapc";
  return fs::exists(beside) ? beside.string() : std::string("lapc");
}

void compileModels(const std::vector<std::string> &groups,
                   const std::string &modelsDir, int64_t maxBatch) {
  for (const std::string &group : groups) {
    std::string spec = modelsDir + "/" + group + ".yaml",
                library = modelsDir + "/" + group + ".so",
                stamp = library + ".spec";
    // Compiled before from the same spec and flags: keep it.
    std::string made = platform::readRegularFile(spec, 1 << 24) +
                       "# lapc --max-batch " + std::to_string(maxBatch) + "\n";
    if (fs::exists(library) && fs::exists(stamp) &&
        platform::readRegularFile(stamp, 1 << 24) == made)
      continue;
    fmt::print("compiling {}\n", library);
    std::fflush(stdout);
    std::vector<std::string> argv = {lapcPath(), spec, "-o", library};
    if (maxBatch)
      argv.insert(argv.end(), {"--max-batch", std::to_string(maxBatch)});
    if (int status = platform::waitFor(platform::spawn(argv, "")); status != 0)
      throw std::runtime_error(
          fmt::format("lapc failed on {} (exit {})", spec, status));
    platform::writeFileAtomically(stamp, made);
  }
}

} // namespace

int lap::cli::sweep(const SweepOptions &options) {
  std::string out = options.out, specs = out + "/specs",
              models = out + "/models", runs = out + "/runs";
  fs::create_directories(models);
  fs::create_directories(runs);
  std::vector<std::string> expand = {lapcPath(), options.spec, "--emit=sweep",
                                     "-o", specs};
  if (int status = platform::waitFor(platform::spawn(expand, "")); status != 0)
    return status; // lapc has reported the spec's errors
  std::vector<sweep::Variant> variants = sweep::readVariants(specs);
  std::vector<std::string> groups = sweep::groupModels(variants, models);
  fmt::print("{} variants, {} distinct model{}\n", variants.size(),
             groups.size(), groups.size() == 1 ? "" : "s");
  compileModels(groups, models, options.maxBatch);
  std::map<std::string, std::string> libraryHash;
  for (const std::string &group : groups)
    libraryHash[group] =
        platform::fileContentHash(models + "/" + group + ".so");
  std::vector<nlohmann::json> records;
  for (const sweep::Variant &v : variants)
    records.push_back(
        sweep::trainingRecord(v, libraryHash[v.group], options.steps));
  if (!sweep::checkRecords(variants, records, runs, options.retrain))
    return 2;
  nlohmann::json libraries = nlohmann::json::array();
  for (const sweep::Variant &v : variants)
    libraries.push_back({{"name", v.name},
                         {"library", models + "/" + v.group + ".so"},
                         {"run", runs + "/" + v.name}});
  platform::writeFileAtomically(models + "/variants.json",
                                libraries.dump(2) + "\n");

  sweep::RunOutcome outcome =
      sweep::trainVariants(variants, records,
                           {platform::executablePath(), models, runs,
                            options.jobs, options.steps, options.stopAt});
  for (const std::string &f : outcome.failures)
    fmt::print(stderr, "lapc-run: error: {}\n", f);
  if (!outcome.failures.empty())
    return 1;
  if (outcome.finished < variants.size()) {
    fmt::print("{} of {} variants trained; the same command continues the "
               "sweep\n",
               outcome.finished, variants.size());
    return outcome.stopSignal ? 128 + outcome.stopSignal : 0;
  }
  sweep::Results results = sweep::tabulate(variants);
  sweep::writeTable(results, out);
  sweep::writePlots(results, variants, out);
  fmt::print("wrote {0}/results.csv and {0}/plots/\n", out);
  return 0;
}

int lap::cli::analyzeSweep(const AnalyzeOptions &options) {
  const std::string &dir = options.models[0];
  std::string index = dir + "/models/variants.json";
  if (!fs::exists(index))
    throw std::runtime_error(dir +
                             ": no models/variants.json: run lapc-run "
                             "sweep with --out " +
                             dir + " first");
  int analysed = 0;
  for (const nlohmann::json &v :
       nlohmann::json::parse(platform::readRegularFile(index, 1 << 26))) {
    std::string name = v.at("name"), run = v.at("run");
    if (!sweep::finishedSummary(run)) {
      fmt::print("{}: not trained yet, skipped\n", name);
      continue;
    }
    AnalyzeOptions one = options;
    one.models = {v.at("library").get<std::string>()};
    one.runDirs = {run};
    one.labels = {name};
    one.out =
        platform::pathInDirectory(dir + "/analysis", name, "the variant name");
    fmt::print("== {}\n", name);
    if (int status = analyze(one); status != 0)
      return status;
    ++analysed;
  }
  fmt::print("analysed {} variants into {}/analysis/\n", analysed, dir);
  return 0;
}
