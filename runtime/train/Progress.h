//===- Progress.h - What a training run shows and records -------*- C++ -*-===//
//
// On a terminal, one progress line rewritten in place (step, loss, learning
// rate, tokens/s, ETA); otherwise plain lines at the log cadence, so logs
// stay readable. Every logged step and evaluation also goes to a JSONL file
// (one JSON object per line) for plotting and comparison: a log to trust, so
// a failed write is an error, and a run resumed at step S first cuts the
// records after S (and a line a kill cut short) so each step appears once.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_PROGRESS_H
#define LAP_RUNTIME_TRAIN_PROGRESS_H

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lap::train {

class Progress {
public:
  /// `total` steps, starting after `startStep`; `metricsPath` empty for no
  /// JSONL file, else its records after startStep are removed; `unit` names
  /// what advance() counts ("tok", "img"); `stream` is where lines go (a
  /// terminal gets an in-place line, unless not `inPlace`).
  Progress(int64_t total, int64_t startStep, const std::string &metricsPath,
           std::string unit = "tok", std::FILE *stream = stdout,
           bool inPlace = true);
  ~Progress();

  /// A finished step's tokens (or samples), for the throughput.
  void advance(int64_t units);
  /// Shows and records a step: its mean loss, learning rate, gradient norm;
  /// `extra` values (the regime's) go to the record alone.
  void step(int64_t step, double loss, double lr, double gradNorm,
            const nlohmann::json &extra = nlohmann::json::object());
  /// An evaluation's values (e.g. {"val_loss": 3.2, "val_bpb": 1.4}).
  void eval(int64_t step, const nlohmann::json &values);
  /// A plain message line (checkpoint written, ...), not disturbing the bar.
  void note(const std::string &text);

  double unitsPerSecond() const;

private:
  void record(nlohmann::json entry);
  std::string eta(int64_t step) const;

  int64_t total;
  std::string unit;
  std::FILE *out;
  bool terminal;
  bool lineOpen = false;
  std::string metricsPath;
  int metrics = -1; ///< the JSONL file, appended to

  std::chrono::steady_clock::time_point began;
  int64_t unitsDone = 0, stepsDone = 0;
};

/// The value of `key` in every record of a metrics.jsonl that has it, with
/// the record's step; a missing file or unreadable line gives nothing.
struct Recorded {
  std::vector<double> steps, values;
};
Recorded readRecords(const std::string &metricsPath, const std::string &key);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_PROGRESS_H
