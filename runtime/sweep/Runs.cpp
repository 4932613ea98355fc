//===- Runs.cpp - Training a sweep's variants, several at a time ----------===//

#include "runtime/sweep/Runs.h"

#include "runtime/platform/Files.h"
#include "runtime/platform/Process.h"
#include "runtime/train/RunSignals.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include <sys/wait.h>

namespace fs = std::filesystem;

namespace lap::sweep {

RunOutcome trainVariants(std::vector<Variant> &variants,
                         const std::vector<nlohmann::json> &records,
                         const RunSettings &settings) {
  // Ctrl-C reaches the variants at once (the same process group); the
  // other signals are forwarded.
  train::RunSignals signals;
  bool stopForwarded = false;
  int64_t jobs = std::max<int64_t>(1, settings.jobs);
  int threads =
      std::max<int>(1, int(std::thread::hardware_concurrency()) / int(jobs));
  std::map<pid_t, size_t> running;
  RunOutcome outcome;
  size_t next = 0;
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
    while ((pid = ::waitpid(-1, &status, WNOHANG)) == 0 ||
           (pid < 0 && errno == EINTR)) {
      forwardSignals();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid < 0 || !running.count(pid))
      return;
    Variant &v = variants[running[pid]];
    running.erase(pid);
    int code = platform::exitCode(status);
    if (auto summary = finishedSummary(settings.runs + "/" + v.name)) {
      v.summary = *summary;
      ++outcome.finished;
      fmt::print("done  {} ({:.1f} s)\n", v.name,
                 summary->value("seconds", 0.0));
    } else if (code != 0 && !signals.stop()) {
      outcome.failures.push_back(
          fmt::format("{} failed (exit {}): see {}/{}.log", v.name, code,
                      settings.runs, v.name));
    }
    std::fflush(stdout);
  };
  for (Variant &v : variants)
    if (auto summary = finishedSummary(settings.runs + "/" + v.name)) {
      v.summary = *summary;
      ++outcome.finished;
    }
  if (outcome.finished)
    fmt::print("{} of {} variants already trained\n", outcome.finished,
               variants.size());
  while (true) {
    while (running.size() < size_t(jobs) && next < variants.size() &&
           !signals.stop() && outcome.failures.empty()) {
      Variant &v = variants[next++];
      if (!v.summary.is_null())
        continue;
      std::string run = settings.runs + "/" + v.name;
      std::vector<std::string> argv = {
          settings.trainer, "train", settings.models + "/" + v.group + ".so",
          "--run-dir",      run,     "--resume-if-any"};
      if (v.passSeed)
        argv.insert(argv.end(), {"--seed", std::to_string(v.seed)});
      if (settings.steps)
        argv.insert(argv.end(), {"--steps", std::to_string(settings.steps)});
      if (settings.stopAt)
        argv.insert(argv.end(), {"--stop-at", std::to_string(settings.stopAt)});
      std::vector<std::string> env;
      if (jobs > 1)
        env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
      fs::create_directories(run);
      platform::writeFileAtomically(run + "/sweep-record.json",
                                    records[next - 1].dump(2) + "\n");
      fmt::print("train {} [{}/{}]\n", v.name, next, variants.size());
      std::fflush(stdout);
      running[platform::spawn(argv, run + ".log", env)] = next - 1;
    }
    if (running.empty())
      break;
    reap();
  }
  outcome.stopSignal = signals.stop();
  return outcome;
}

} // namespace lap::sweep
