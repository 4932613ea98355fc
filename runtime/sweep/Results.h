//===- Results.h - The table and plots of a finished sweep ------*- C++ -*-===//
//
// A row per combination of the sweep's axes but the seed, each metric of
// the runs' summaries as mean ± std over the seeds: OUT/results.csv and a
// printed table; OUT/plots/ has each metric against each numeric axis and
// every variant's training loss.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SWEEP_RESULTS_H
#define LAP_RUNTIME_SWEEP_RESULTS_H

#include "runtime/sweep/Variants.h"

namespace lap::sweep {

/// One row: the values of the axes but the seed, each metric's samples.
struct Cell {
  std::vector<std::string> values; ///< of the axes but the seed
  std::map<std::string, std::vector<double>> samples;
};

/// The table of a finished sweep: a row per combination of the axes but
/// the seed, each metric's samples over the seeds.
struct Results {
  std::vector<std::string> axes, metrics;
  std::vector<Cell> cells;
};

/// The table of `variants`, each with its summary.
Results tabulate(const std::vector<Variant> &variants);

/// OUT/results.csv, and the same as a printed table.
void writeTable(const Results &results, const std::string &out);

/// OUT/plots/: each metric against each numeric axis, one line per value of
/// the other axes; every variant's training loss (OUT/runs/<variant>).
void writePlots(const Results &results, const std::vector<Variant> &variants,
                const std::string &out);

} // namespace lap::sweep

#endif // LAP_RUNTIME_SWEEP_RESULTS_H
