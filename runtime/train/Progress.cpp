//===- Progress.cpp - What a training run shows and records -----*- C++ -*-===//

#include "runtime/train/Progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <stdexcept>

using namespace lap::train;

Progress::Progress(int64_t total, int64_t startStep,
                   const std::string &metricsPath, std::string unit,
                   std::FILE *stream)
    : total(total), start(startStep), unit(std::move(unit)), out(stream),
      terminal(isatty(fileno(stream)) != 0),
      began(std::chrono::steady_clock::now()) {
  if (!metricsPath.empty()) {
    metrics.open(metricsPath, std::ios::app);
    if (!metrics)
      throw std::runtime_error(metricsPath + ": cannot open for writing");
  }
}

Progress::~Progress() {
  if (lineOpen)
    std::fputc('\n', out);
}

double Progress::unitsPerSecond() const {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count();
  return seconds > 0 ? double(unitsDone) / seconds : 0;
}

std::string Progress::eta(int64_t step) const {
  if (stepsDone == 0)
    return "?";
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count();
  int64_t left = int64_t(seconds / double(stepsDone) * double(total - step));
  return left >= 3600 ? fmt::format("{}h{:02}m", left / 3600, left / 60 % 60)
                      : fmt::format("{}m{:02}s", left / 60, left % 60);
}

void Progress::record(nlohmann::json entry) {
  if (metrics.is_open()) {
    metrics << entry.dump() << '\n';
    metrics.flush();
  }
}

void Progress::advance(int64_t units) {
  unitsDone += units;
  ++stepsDone;
}

void Progress::step(int64_t step, double loss, double lr, double gradNorm) {
  std::string line =
      fmt::format("step {:>{}}/{}  loss {:.4f}  lr {:.3e}  {:.0f} {}/s  ETA {}",
                  step, std::to_string(total).size(), total, loss, lr,
                  unitsPerSecond(), unit, eta(step));
  if (terminal) {
    int width = 30, filled = int(double(width) * double(step) /
                                 double(std::max<int64_t>(total, 1)));
    fmt::print(out, "\r[{}{}] {}", std::string(filled, '#'),
               std::string(width - filled, ' '), line);
    std::fflush(out);
    lineOpen = true;
  } else {
    fmt::print(out, "{}\n", line);
  }
  record({{"step", step},
          {"loss", loss},
          {"lr", lr},
          {"grad_norm", gradNorm},
          {"units_per_s", unitsPerSecond()}});
}

void Progress::eval(int64_t step, const nlohmann::json &values) {
  std::string text = fmt::format("eval at step {}:", step);
  for (auto &[k, v] : values.items())
    text += fmt::format("  {} {:.4f}", k, v.get<double>());
  note(text);
  nlohmann::json entry = values;
  entry["step"] = step;
  record(entry);
}

void Progress::note(const std::string &text) {
  if (lineOpen) {
    std::fputc('\n', out);
    lineOpen = false;
  }
  fmt::print(out, "{}\n", text);
  std::fflush(out);
}
