//===- Progress.cpp - What a training run shows and records -----*- C++ -*-===//

#include "runtime/train/Progress.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

#include <fmt/format.h>

#include <fstream>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace lap::train;

namespace {

/// Throws "PATH: WHAT: strerror", closing `fd` first when it is open.
[[noreturn]] void failed(const std::string &path, const char *what,
                         int fd = -1) {
  int err = errno;
  if (fd >= 0)
    ::close(fd);
  errno = err;
  lap::platform::failWithErrno(path, what);
}

/// The length of the part of a metrics file to keep: its complete records
/// up to the first one of a step after `step` (records are in step order).
off_t keptLength(const std::string &text, int64_t step) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      break; // a record cut short
    auto record =
        nlohmann::json::parse(text.substr(begin, end - begin), nullptr, false);
    if (record.is_discarded() || !record.contains("step") ||
        !record["step"].is_number_integer() || record["step"] > step)
      break;
    begin = end + 1;
  }
  return off_t(begin);
}

} // namespace

Progress::Progress(int64_t total, int64_t startStep,
                   const std::string &metricsPath, std::string unit,
                   std::FILE *stream, bool inPlace)
    : total(total), unit(std::move(unit)), out(stream),
      terminal(inPlace && isatty(fileno(stream)) != 0),
      metricsPath(metricsPath), began(std::chrono::steady_clock::now()) {
  if (metricsPath.empty())
    return;
  metrics =
      lap::platform::openForWriting(metricsPath, O_RDWR | O_CREAT | O_APPEND);
  struct stat info;
  if (::fstat(metrics, &info) != 0)
    failed(metricsPath, "cannot stat", metrics);
  if (!S_ISREG(info.st_mode)) // a pipe or a device: nothing to cut back
    return;
  std::string text(size_t(info.st_size), '\0');
  if (::pread(metrics, text.data(), text.size(), 0) != ssize_t(text.size()))
    failed(metricsPath, "cannot read", metrics);
  if (off_t keep = keptLength(text, startStep);
      keep != info.st_size && ::ftruncate(metrics, keep) != 0)
    failed(metricsPath, "cannot truncate", metrics);
}

Progress::~Progress() {
  if (lineOpen)
    std::fputc('\n', out);
  if (metrics >= 0)
    ::close(metrics);
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
  if (metrics < 0)
    return;
  std::string line = entry.dump() + "\n";
  if (!lap::platform::writeAll(metrics, line.data(), line.size()))
    failed(metricsPath, "cannot write a record");
}

void Progress::advance(int64_t units) {
  unitsDone += units;
  ++stepsDone;
}

void Progress::step(int64_t step, double loss, double lr, double gradNorm,
                    const nlohmann::json &extra) {
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
  nlohmann::json entry{{"step", step},
                       {"loss", loss},
                       {"lr", lr},
                       {"grad_norm", gradNorm},
                       {"units_per_s", unitsPerSecond()}};
  entry.update(extra);
  record(std::move(entry));
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

Recorded lap::train::readRecords(const std::string &metricsPath,
                                 const std::string &key) {
  Recorded out;
  std::ifstream in(metricsPath);
  for (std::string line; std::getline(in, line);) {
    auto entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_discarded() || !entry.contains("step") || !entry.contains(key))
      continue;
    out.steps.push_back(entry["step"].get<double>());
    out.values.push_back(entry[key].get<double>());
  }
  return out;
}
