//===- Sweep.cpp - lapc-run sweep ---------------------------------*- C++ -*-===//
//
// Trains every variant of a spec's sweep (docs/spec.md, "sweep"):
//  1. `lapc SPEC --emit=sweep -o OUT/specs` expands the variants (its spec
//     errors are lapc's, with the line and a caret);
//  2. each distinct model is compiled once into OUT/models/: variants that
//     differ only in train.seed share a library and train with --seed;
//  3. each variant trains as `lapc-run train` in OUT/runs/<variant>/ (its
//     output in OUT/runs/<variant>.log), one after the other or --jobs at a
//     time with the cores split between them; a variant whose summary says
//     it finished is skipped, any other continues from its checkpoint, so
//     running the same command again continues an interrupted sweep;
//     each run directory records how its variant is trained
//     (sweep-record.json: the library's hash, the seed, --steps), and a
//     variant trained otherwise than the sweep now asks is an error, or
//     with --retrain is trained again from scratch, so a table never
//     mixes schedules;
//  4. OUT/results.csv and a printed table give each metric as mean ± std
//     over the seeds for every combination of the other axes; OUT/plots/
//     has each metric against each numeric axis and every variant's loss.
// SIGINT, SIGTERM, SIGHUP and SIGUSR2 to the sweep reach its running
// variants, which checkpoint and stop; the sweep waits for them and exits
// with 128 + the signal. A variant's trainer dies with the sweep (SIGTERM
// when it goes, kill -9 included), so none is left holding its run
// directory.
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecParser.h"
#include "dsl/SpecPrinter.h"
#include "runtime/analysis/Plot.h"
#include "runtime/platform/Csv.h"
#include "runtime/platform/FileNames.h"
#include "runtime/platform/Files.h"
#include "runtime/platform/Hash.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/train/Progress.h"
#include "runtime/train/RunSignals.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace lap;
namespace fs = std::filesystem;

namespace {

constexpr const char *kSeedAxis = "train.seed";

struct Variant {
  std::string name, specFile, group;
  std::vector<std::string> axes;
  std::map<std::string, std::string> values;
  int64_t seed = 0; ///< train.seed, passed as --seed when it differs
  bool passSeed = false;
  nlohmann::json summary; ///< once finished
};

/// This program's own path, for lapc beside it and for the children.
std::string selfPath() { return fs::read_symlink("/proc/self/exe").string(); }

/// lapc beside lapc-run (a build or an install), else lapc on PATH.
std::string lapcPath() {
  fs::path beside = fs::path(selfPath()).parent_path() / "lapc";
  return fs::exists(beside) ? beside.string() : std::string("lapc");
}

/// Runs `argv`, its output appended to `log` (empty: ours; never written
/// through a link), with `extra` added to the environment; returns the pid.
/// Everything the child needs is made before fork: the parent has threads,
/// so the child only calls async-signal-safe functions before exec. The
/// child gets SIGTERM when the sweep ends, however it ends.
pid_t spawn(const std::vector<std::string> &argv, const std::string &log,
            const std::vector<std::string> &extra = {}) {
  std::vector<char *> args, envp;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  for (char **e = environ; *e; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const std::string &x : extra)
      replaced |= entry.substr(0, entry.find('=') + 1) ==
                  std::string_view(x).substr(0, x.find('=') + 1);
    if (!replaced)
      envp.push_back(*e);
  }
  for (const std::string &x : extra)
    envp.push_back(const_cast<char *>(x.c_str()));
  envp.push_back(nullptr);
  int output =
      log.empty()
          ? -1
          : platform::openForWriting(log, O_WRONLY | O_CREAT | O_APPEND);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    if (output >= 0)
      ::close(output);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) // the sweep ended before the line above
      _exit(128 + SIGTERM);
    if (output >= 0) {
      dup2(output, 1);
      dup2(output, 2);
      ::close(output);
    }
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  if (output >= 0)
    ::close(output);
  return pid;
}

/// The exit status of `pid` as the shell reports it (128 + a signal).
int waitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<Variant> readIndex(const std::string &dir) {
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

/// Groups variants that differ only in train.seed under one model: writes
/// OUT/models/<group>.yaml (the first member's spec) and sets each
/// variant's group and seed.
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
    if (int status = waitFor(spawn(argv, "")); status != 0)
      throw std::runtime_error(
          fmt::format("lapc failed on {} (exit {})", spec, status));
    platform::writeFileAtomically(stamp, made);
  }
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

/// The metrics a summary reports: its numbers but the bookkeeping.
std::vector<std::string> metricsOf(const nlohmann::json &summary) {
  static const std::set<std::string> bookkeeping = {
      "steps",
      "seconds",
      "tokens_per_s",
      "images_per_s",
      "ranks",
      "zero",
      "optimizer_state_bytes_per_rank",
      "unigram_entropy"};
  std::vector<std::string> metrics;
  for (auto &[key, value] : summary.items())
    if (value.is_number() && !bookkeeping.count(key))
      metrics.push_back(key);
  return metrics;
}

struct Cell {
  std::vector<std::string> values; ///< of the axes but the seed
  std::map<std::string, std::vector<double>> samples;
};

std::pair<double, double> meanStd(const std::vector<double> &x) {
  double mean = 0;
  for (double v : x)
    mean += v / double(x.size());
  double ss = 0;
  for (double v : x)
    ss += (v - mean) * (v - mean);
  return {mean, x.size() > 1 ? std::sqrt(ss / double(x.size() - 1)) : 0.0};
}

/// The table of a finished sweep: a row per combination of the axes but
/// the seed, each metric's samples over the seeds.
struct Results {
  std::vector<std::string> axes, metrics;
  std::vector<Cell> cells;
};

Results tabulate(const std::vector<Variant> &variants) {
  Results r;
  for (const std::string &a : variants.front().axes)
    if (a != kSeedAxis)
      r.axes.push_back(a);
  r.metrics = metricsOf(variants.front().summary);
  std::map<std::vector<std::string>, size_t> cellOf;
  for (const Variant &v : variants) {
    std::vector<std::string> key;
    for (const std::string &a : r.axes)
      key.push_back(v.values.at(a));
    auto [it, fresh] = cellOf.emplace(key, r.cells.size());
    if (fresh)
      r.cells.push_back({key, {}});
    for (const std::string &m : r.metrics)
      if (v.summary.contains(m) && v.summary[m].is_number())
        r.cells[it->second].samples[m].push_back(v.summary[m].get<double>());
  }
  return r;
}

/// OUT/results.csv, and the same as a printed table.
void writeTable(const Results &r, const std::string &out) {
  std::vector<std::string> columns = r.axes;
  columns.push_back("seeds");
  for (const std::string &m : r.metrics)
    columns.insert(columns.end(), {m + "_mean", m + "_std"});
  std::string csv = platform::csvRow(columns);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = r.axes;
  header.push_back("seeds");
  for (const std::string &m : r.metrics)
    header.push_back(m);
  rows.push_back(header);
  for (const Cell &c : r.cells) {
    std::vector<std::string> row = c.values;
    size_t n = c.samples.empty() ? 0 : c.samples.begin()->second.size();
    row.push_back(std::to_string(n));
    std::vector<std::string> fields = row;
    for (const std::string &m : r.metrics) {
      auto [mean, std] = meanStd(c.samples.at(m));
      fields.insert(fields.end(), {fmt::format("{:.17g}", mean),
                                   fmt::format("{:.17g}", std)});
      row.push_back(fmt::format("{:.4f} ± {:.4f}", mean, std));
    }
    csv += platform::csvRow(fields);
    rows.push_back(row);
  }
  platform::writeFileAtomically(out + "/results.csv", csv);

  std::vector<size_t> width(header.size(), 0);
  auto displayed = [](const std::string &s) { // "±" is one column
    size_t n = 0;
    for (unsigned char c : s)
      n += (c & 0xC0) != 0x80;
    return n;
  };
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], displayed(row[i]));
  for (const auto &row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += (i ? "  " : "") + row[i] +
              std::string(width[i] - displayed(row[i]), ' ');
    fmt::print("{}\n", line.substr(0, line.find_last_not_of(' ') + 1));
  }
}

/// OUT/plots/: each metric against each numeric axis, one line per value of
/// the other axes; every variant's training loss.
void writePlots(const Results &r, const std::vector<Variant> &variants,
                const std::string &out) {
  fs::create_directories(out + "/plots");
  for (size_t a = 0; a < r.axes.size(); ++a)
    for (const std::string &m : r.metrics) {
      std::map<std::string, analysis::Series> lines;
      bool numeric = true;
      for (const Cell &c : r.cells) {
        char *end = nullptr;
        double x = std::strtod(c.values[a].c_str(), &end);
        numeric &= end && *end == '\0' && !c.values[a].empty();
        std::string others;
        for (size_t b = 0; b < r.axes.size(); ++b)
          if (b != a)
            others +=
                (others.empty() ? "" : ", ") + r.axes[b] + "=" + c.values[b];
        analysis::Series &s = lines[others];
        s.label = others;
        s.x.push_back(x);
        s.y.push_back(meanStd(c.samples.at(m)).first);
      }
      if (!numeric)
        continue;
      std::vector<analysis::Series> series;
      for (auto &[label, s] : lines)
        series.push_back(s);
      analysis::PlotOptions options;
      options.title = m + " (mean over seeds)";
      options.xLabel = r.axes[a];
      options.yLabel = m;
      analysis::writeLinePlot(
          fmt::format("{}/plots/{}-vs-{}.png", out, m, r.axes[a]), series,
          options);
    }
  std::vector<analysis::Series> losses;
  for (const Variant &v : variants) {
    train::Recorded loss =
        train::readRecords(out + "/runs/" + v.name + "/metrics.jsonl", "loss");
    if (!loss.steps.empty())
      losses.push_back({v.name, loss.steps, loss.values});
  }
  if (!losses.empty()) {
    analysis::PlotOptions options;
    options.title = "training loss of every variant";
    options.xLabel = "step";
    options.yLabel = "loss";
    analysis::writeLinePlot(out + "/plots/loss.png", losses, options);
  }
}

/// How a variant is trained, as far as its results depend on it: the
/// library's contents (its spec and lapc's flags), the seed, --steps (0:
/// the spec's). --stop-at only pauses a run, so it is not part of it.
nlohmann::json trainingRecord(const Variant &v, const std::string &libraryHash,
                              const cli::SweepOptions &options) {
  return {{"library", libraryHash}, {"seed", v.seed}, {"steps", options.steps}};
}

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

/// Checks every variant already begun against `records`; with `retrain`
/// a variant that differs loses its run directory and log (it trains
/// again), else each is an error and the sweep trains nothing.
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

} // namespace

int lap::cli::sweep(const SweepOptions &options) {
  std::string out = options.out, specs = out + "/specs",
              models = out + "/models", runs = out + "/runs";
  fs::create_directories(models);
  fs::create_directories(runs);
  std::vector<std::string> expand = {lapcPath(), options.spec, "--emit=sweep",
                                     "-o", specs};
  if (int status = waitFor(spawn(expand, "")); status != 0)
    return status; // lapc has reported the spec's errors
  std::vector<Variant> variants = readIndex(specs);
  std::vector<std::string> groups = groupModels(variants, models);
  fmt::print("{} variants, {} distinct model{}\n", variants.size(),
             groups.size(), groups.size() == 1 ? "" : "s");
  compileModels(groups, models, options.maxBatch);
  std::map<std::string, std::string> libraryHash;
  for (const std::string &group : groups)
    libraryHash[group] =
        platform::fileContentHash(models + "/" + group + ".so");
  std::vector<nlohmann::json> records;
  for (const Variant &v : variants)
    records.push_back(trainingRecord(v, libraryHash[v.group], options));
  if (!checkRecords(variants, records, runs, options.retrain))
    return 2;
  nlohmann::json libraries = nlohmann::json::array();
  for (const Variant &v : variants)
    libraries.push_back({{"name", v.name},
                         {"library", models + "/" + v.group + ".so"},
                         {"run", runs + "/" + v.name}});
  platform::writeFileAtomically(models + "/variants.json",
                                libraries.dump(2) + "\n");

  // A signal that stops the sweep stops the running variants too (Ctrl-C
  // reaches them at once, in the same process group; the others are
  // forwarded): they checkpoint and stop, the sweep waits for them, starts
  // no more and says how to go on. SIGUSR1 asks each for a checkpoint.
  train::RunSignals signals;
  bool stopForwarded = false;
  int64_t jobs = std::max<int64_t>(1, options.jobs);
  int threads =
      std::max<int>(1, int(std::thread::hardware_concurrency()) / int(jobs));
  std::map<pid_t, size_t> running;
  std::vector<std::string> failures;
  size_t next = 0, done = 0;
  auto forwardSignals = [&] {
    if (signals.stop() && !stopForwarded) {
      for (const auto &[pid, index] : running)
        ::kill(pid, signals.stop());
      stopForwarded = true;
    }
    if (signals.checkpointAsked()) {
      for (const auto &[pid, index] : running)
        ::kill(pid, SIGUSR1);
      signals.checkpointWritten();
    }
  };
  auto reap = [&] {
    int status = 0;
    pid_t pid = -1;
    // The handlers restart waitpid, so it polls: a signal is seen and
    // passed on within a tenth of a second.
    while ((pid = waitpid(-1, &status, WNOHANG)) == 0 ||
           (pid < 0 && errno == EINTR)) {
      forwardSignals();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid < 0 || !running.count(pid))
      return;
    Variant &v = variants[running[pid]];
    running.erase(pid);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (auto summary = finishedSummary(runs + "/" + v.name)) {
      v.summary = *summary;
      ++done;
      fmt::print("done  {} ({:.1f} s)\n", v.name,
                 summary->value("seconds", 0.0));
    } else if (code != 0 && !signals.stop()) {
      failures.push_back(fmt::format("{} failed (exit {}): see {}/{}.log",
                                     v.name, code, runs, v.name));
    }
    std::fflush(stdout);
  };
  for (Variant &v : variants)
    if (auto summary = finishedSummary(runs + "/" + v.name)) {
      v.summary = *summary;
      ++done;
    }
  if (done)
    fmt::print("{} of {} variants already trained\n", done, variants.size());
  while (true) {
    while (running.size() < size_t(jobs) && next < variants.size() &&
           !signals.stop() && failures.empty()) {
      Variant &v = variants[next++];
      if (!v.summary.is_null())
        continue;
      std::vector<std::string> argv = {selfPath(),
                                       "train",
                                       models + "/" + v.group + ".so",
                                       "--run-dir",
                                       runs + "/" + v.name,
                                       "--resume-if-any"};
      if (v.passSeed)
        argv.insert(argv.end(), {"--seed", std::to_string(v.seed)});
      if (options.steps)
        argv.insert(argv.end(), {"--steps", std::to_string(options.steps)});
      if (options.stopAt)
        argv.insert(argv.end(), {"--stop-at", std::to_string(options.stopAt)});
      std::vector<std::string> env;
      if (jobs > 1)
        env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
      std::string run = runs + "/" + v.name;
      fs::create_directories(run);
      platform::writeFileAtomically(run + "/sweep-record.json",
                                    records[next - 1].dump(2) + "\n");
      fmt::print("train {} [{}/{}]\n", v.name, next, variants.size());
      std::fflush(stdout);
      running[spawn(argv, runs + "/" + v.name + ".log", env)] = next - 1;
    }
    if (running.empty())
      break;
    reap();
  }
  for (const std::string &f : failures)
    fmt::print(stderr, "lapc-run: error: {}\n", f);
  if (!failures.empty())
    return 1;
  if (done < variants.size()) {
    fmt::print("{} of {} variants trained; the same command continues the "
               "sweep\n",
               done, variants.size());
    return signals.stop() ? 128 + signals.stop() : 0;
  }
  Results results = tabulate(variants);
  writeTable(results, out);
  writePlots(results, variants, out);
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
    if (!finishedSummary(run)) {
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
