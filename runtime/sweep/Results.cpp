//===- Results.cpp - The table and plots of a finished sweep --------------===//

#include "runtime/sweep/Results.h"

#include "runtime/analysis/Plot.h"
#include "runtime/platform/Csv.h"
#include "runtime/platform/Files.h"
#include "runtime/train/Progress.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;

namespace lap::sweep {

namespace {

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

std::pair<double, double> meanStd(const std::vector<double> &x) {
  double mean = 0;
  for (double v : x)
    mean += v / double(x.size());
  double ss = 0;
  for (double v : x)
    ss += (v - mean) * (v - mean);
  return {mean, x.size() > 1 ? std::sqrt(ss / double(x.size() - 1)) : 0.0};
}

} // namespace

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

} // namespace lap::sweep
