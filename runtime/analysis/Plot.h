//===- Plot.h - Line plots written as PNG files -----------------*- C++ -*-===//
//
// Small self-contained line plots (loss curves, per-layer statistics) so a
// run can be inspected without Python. Text uses a built-in 5x7 bitmap font
// and the file is written with libpng; nothing else is needed.
//
// Layout, so callers and tests can predict where a value lands: the plot
// area is `plotArea(series, options)` (inclusive pixel bounds). Each axis
// spans the first to the last of `niceTicks(dataMin, dataMax, 6)` (on
// log10 of the values when `logY`), and a value v maps to
//   column = lround(left + (v - x0) / (x1 - x0) * (right - left))
//   row    = lround(bottom - (v - y0) / (y1 - y0) * (bottom - top)).
// Series are drawn 2 px thick: the line's pixels are at (col..col+1,
// row..row+1), clipped to the plot area. Non-finite points (and points
// <= 0 on a log axis) are skipped and break the line.
//
// Every failure is a std::runtime_error naming the output path.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ANALYSIS_PLOT_H
#define LAP_RUNTIME_ANALYSIS_PLOT_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lap::analysis {

struct Series {
  std::string label; ///< Legend text; empty leaves the series out of it.
  std::vector<double> x, y;
};

struct PlotOptions {
  std::string title, xLabel, yLabel;
  int width = 800, height = 500;
  bool logY = false;
};

/// Inclusive pixel bounds of the area the series are drawn in.
struct PlotArea {
  int left, top, right, bottom;
};

/// Colour of the series at `index` (the palette repeats after its end).
std::array<uint8_t, 3> seriesColor(size_t index);

/// At most `maxTicks` values of the form k * step, step in {1, 2, 5} x 10^n,
/// the first <= lo and the last >= hi, with the smallest such step. A
/// degenerate range (lo == hi) is widened by 10% of |lo| (or 1 at zero).
std::vector<double> niceTicks(double lo, double hi, int maxTicks);

PlotArea plotArea(const std::vector<Series> &series,
                  const PlotOptions &options);

/// Writes `width` x `height` RGB pixels (rows top to bottom) as a PNG at
/// `path`, all at once (platform::writeFileAtomically: a link there is
/// replaced, not followed). Throws "PATH: why".
void writeRgbPng(const std::string &path, const uint8_t *rgb, int width,
                 int height);

/// Writes `series` as an RGB PNG at `path`. Throws on empty input, x/y
/// size mismatches, no finite point, a too small image, or I/O errors.
void writeLinePlot(const std::string &path, const std::vector<Series> &series,
                   const PlotOptions &options);

} // namespace lap::analysis

#endif // LAP_RUNTIME_ANALYSIS_PLOT_H
