//===- Runs.h - Training a sweep's variants, several at a time --*- C++ -*-===//
//
// Each variant trains as `lapc-run train` in RUNS/<variant>/ (its output in
// RUNS/<variant>.log), one after the other or `jobs` at a time with the
// cores split between them. A variant whose summary says it finished is
// skipped; any other continues from its checkpoint (--resume-if-any), so
// the same sweep run again continues where it stopped.
//
// SIGINT, SIGTERM, SIGHUP and SIGUSR2 to the sweep reach its running
// variants, which checkpoint and stop; the sweep waits for them and starts
// no more. SIGUSR1 asks each for a checkpoint. A variant's trainer dies
// with the sweep (SIGTERM when it goes, kill -9 included), so none is left
// holding its run directory.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SWEEP_RUNS_H
#define LAP_RUNTIME_SWEEP_RUNS_H

#include "runtime/sweep/Variants.h"

namespace lap::sweep {

/// How the variants train.
struct RunSettings {
  std::string trainer; ///< the lapc-run to run `train` with
  std::string models;  ///< MODELS/<group>.so
  std::string runs;    ///< RUNS/<variant>/
  int64_t jobs = 1;    ///< variants at a time
  int64_t steps = 0;   ///< --steps (0: the spec's)
  int64_t stopAt = 0;  ///< --stop-at (0: none)
};

/// What became of them.
struct RunOutcome {
  size_t finished = 0;               ///< variants with a finished summary
  std::vector<std::string> failures; ///< "NAME failed (exit N): see LOG"
  int stopSignal = 0;                ///< the signal that stopped the sweep
};

/// Trains every variant not yet finished, writing RUNS/<variant>/
/// sweep-record.json from `records` as it starts; each finished variant
/// gets its summary. Starts no more after a failure or a stop signal.
RunOutcome trainVariants(std::vector<Variant> &variants,
                         const std::vector<nlohmann::json> &records,
                         const RunSettings &settings);

} // namespace lap::sweep

#endif // LAP_RUNTIME_SWEEP_RUNS_H
