//===- Plot.cpp - Line plots written as PNG files ---------------*- C++ -*-===//

#include "runtime/analysis/Plot.h"
#include "runtime/platform/Files.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

using namespace lap::analysis;

namespace {

// The classic 5x7 LCD font for ASCII 32..126: per glyph five columns, each
// two hex digits, bit 0 the top row.
// clang-format off
const char *const kFont =
    "0000000000" "00005F0000" "0007000700" "147F147F14" "242A7F2A12" // sp!"#$
    "2313086462" "3649552250" "0005030000" "001C224100" "0041221C00" // %&'()
    "082A1C2A08" "08083E0808" "0050300000" "0808080808" "0060600000" // *+,-.
    "2010080402" "3E5149453E" "00427F4000" "4261514946" "2141454B31" // /0123
    "1814127F10" "2745454539" "3C4A494930" "0171090503" "3649494936" // 45678
    "064949291E" "0036360000" "0056360000" "0814224100" "1414141414" // 9:;<=
    "0041221408" "0201510906" "324979413E" "7E1111117E" "7F49494936" // >?@AB
    "3E41414122" "7F4141221C" "7F49494941" "7F09090101" "3E41415132" // CDEFG
    "7F0808087F" "00417F4100" "2040413F01" "7F08142241" "7F40404040" // HIJKL
    "7F0204027F" "7F0408107F" "3E4141413E" "7F09090906" "3E4151215E" // MNOPQ
    "7F09192946" "4649494931" "01017F0101" "3F4040403F" "1F2040201F" // RSTUV
    "7F2018207F" "6314081463" "0304780403" "6151494543" "007F414100" // WXYZ[
    "0204081020" "0041417F00" "0402010204" "4040404040" "0001020400" // \]^_`
    "2054545478" "7F48444438" "3844444420" "384444487F" "3854545418" // abcde
    "087E090102" "0C5252523E" "7F08040478" "00447D4000" "2040443D00" // fghij
    "007F102844" "00417F4000" "7C04180478" "7C08040478" "3844444438" // klmno
    "7C14141408" "081414187C" "7C08040408" "4854545420" "043F444020" // pqrst
    "3C4040207C" "1C2040201C" "3C4030403C" "4428102844" "0C5050503C" // uvwxy
    "4464544C44" "0008364100" "00007F0000" "0041360800" "0804081008"; // z{|}~
// clang-format on

using Rgb = std::array<uint8_t, 3>;
constexpr Rgb kBlack = {0, 0, 0}, kGrid = {225, 225, 225};
constexpr int kCharW = 6, kCharH = 8; // a glyph plus one pixel of spacing
constexpr int kMaxTicks = 6;

int hexDigit(char c) { return c <= '9' ? c - '0' : c - 'A' + 10; }

uint8_t glyphColumn(char c, int column) {
  if (c < 32 || c > 126)
    c = '?';
  const char *p = kFont + ((c - 32) * 5 + column) * 2;
  return static_cast<uint8_t>(hexDigit(p[0]) * 16 + hexDigit(p[1]));
}

int textWidth(const std::string &s, int scale) {
  return s.empty() ? 0 : (static_cast<int>(s.size()) * kCharW - 1) * scale;
}

class Canvas {
public:
  Canvas(int w, int h) : w(w), h(h), pixels(size_t(w) * h * 3, 255) {}

  void set(int x, int y, Rgb c) {
    if (x < clipL || x > clipR || y < clipT || y > clipB)
      return;
    std::memcpy(&pixels[(size_t(y) * w + x) * 3], c.data(), 3);
  }
  void clip(int l, int t, int r, int b) {
    clipL = l, clipT = t, clipR = r, clipB = b;
  }
  void unclip() { clip(0, 0, w - 1, h - 1); }

  void fill(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x)
        set(x, y, c);
  }

  /// Bresenham with a 2x2 brush: 2 px thick without anti-aliasing.
  void line(int x0, int y0, int x1, int y1, Rgb c) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    while (true) {
      fill(x0, y0, x0 + 1, y0 + 1, c);
      if (x0 == x1 && y0 == y1)
        break;
      int e2 = 2 * err;
      if (e2 >= dy)
        err += dy, x0 += sx;
      if (e2 <= dx)
        err += dx, y0 += sy;
    }
  }

  /// `up` rotates the text a quarter turn counter-clockwise, reading
  /// upwards from (x, y) (its bottom-left corner).
  void text(int x, int y, const std::string &s, int scale, Rgb c,
            bool up = false) {
    for (size_t i = 0; i < s.size(); ++i)
      for (int col = 0; col < 5; ++col) {
        uint8_t bits = glyphColumn(s[i], col);
        for (int row = 0; row < 7; ++row) {
          if (!(bits >> row & 1))
            continue;
          int u = (int(i) * kCharW + col) * scale, v = row * scale;
          if (up)
            fill(x + v, y - u - scale + 1, x + v + scale - 1, y - u, c);
          else
            fill(x + u, y + v, x + u + scale - 1, y + v + scale - 1, c);
        }
      }
  }

  int w, h;
  std::vector<uint8_t> pixels;

private:
  int clipL = 0, clipT = 0, clipR = w - 1, clipB = h - 1;
};

/// Enough decimals to tell ticks `step` apart; %g for extreme magnitudes.
std::string tickLabel(double v, double step, bool logScale) {
  char buf[32];
  if (logScale)
    std::snprintf(buf, sizeof buf, "%.3g", std::pow(10.0, v));
  else if (std::abs(v) >= 1e6 || step < 1e-4)
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f",
                  std::max(0, -int(std::floor(std::log10(step) + 1e-9))),
                  std::abs(v) < step * 1e-9 ? 0.0 : v);
  return buf;
}

bool usable(double x, double y, bool logY) {
  return std::isfinite(x) && std::isfinite(y) && (!logY || y > 0);
}

} // namespace

std::array<uint8_t, 3> lap::analysis::seriesColor(size_t index) {
  static constexpr Rgb kPalette[] = {
      {31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
      {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {23, 190, 207}};
  return kPalette[index % (sizeof kPalette / sizeof kPalette[0])];
}

std::vector<double> lap::analysis::niceTicks(double lo, double hi,
                                             int maxTicks) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw std::runtime_error("niceTicks: non-finite range");
  if (lo > hi)
    std::swap(lo, hi);
  if (lo == hi) {
    double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  maxTicks = std::max(maxTicks, 2);
  // Start one decade below the step that would fit exactly, then grow
  // 1 -> 2 -> 5 -> 10 until the covering ticks are few enough.
  double step =
      std::pow(10.0, std::floor(std::log10((hi - lo) / maxTicks)) - 1);
  static constexpr double kMantissas[] = {1, 2, 5};
  for (int i = 0;; ++i) {
    double s = step * std::pow(10.0, i / 3) * kMantissas[i % 3];
    // The tolerance keeps 0.30000000000000004 from needing its own tick.
    double first = std::floor(lo / s + 1e-9), last = std::ceil(hi / s - 1e-9);
    if (last - first + 1 <= maxTicks) {
      std::vector<double> ticks;
      for (double k = first; k <= last; ++k)
        ticks.push_back(k * s);
      return ticks;
    }
  }
}

PlotArea lap::analysis::plotArea(const std::vector<Series> &series,
                                 const PlotOptions &options) {
  // Room for the y label, tick labels up to 10 characters, the title above
  // and tick labels plus the x label below; the legend sits on the right.
  int legend = 0;
  for (const Series &s : series)
    if (!s.label.empty())
      legend = std::max(legend, textWidth(s.label, 1) + 36);
  return {12 + kCharH + 10 * kCharW + 8, options.title.empty() ? 16 : 40,
          options.width - 16 - legend, options.height - 44};
}

void lap::analysis::writeRgbPng(const std::string &path, const uint8_t *rgb,
                                int width, int height) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t bytes = 0;
  // The first call measures, the second encodes.
  bool ok =
      png_image_write_to_memory(&image, nullptr, &bytes, 0, rgb, 0, nullptr);
  std::string png(ok ? bytes : 0, '\0');
  ok = ok && png_image_write_to_memory(&image, png.data(), &bytes, 0, rgb, 0,
                                       nullptr);
  std::string why = ok ? "" : image.message;
  png_image_free(&image);
  if (!ok)
    throw std::runtime_error(path + ": cannot encode the PNG: " + why);
  png.resize(bytes);
  platform::writeFileAtomically(path, png);
}

void lap::analysis::writeLinePlot(const std::string &path,
                                  const std::vector<Series> &series,
                                  const PlotOptions &options) {
  auto fail = [&](const std::string &why) {
    throw std::runtime_error("writeLinePlot: " + path + ": " + why);
  };
  if (series.empty())
    fail("no series");
  double xMin = INFINITY, xMax = -INFINITY, yMin = INFINITY, yMax = -INFINITY;
  for (const Series &s : series) {
    if (s.x.size() != s.y.size())
      fail("series '" + s.label + "' has " + std::to_string(s.x.size()) +
           " x values but " + std::to_string(s.y.size()) + " y values");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i], s.y[i], options.logY))
        continue;
      double y = options.logY ? std::log10(s.y[i]) : s.y[i];
      xMin = std::min(xMin, s.x[i]), xMax = std::max(xMax, s.x[i]);
      yMin = std::min(yMin, y), yMax = std::max(yMax, y);
    }
  }
  if (xMin > xMax)
    fail("no finite points to plot");
  PlotArea a = plotArea(series, options);
  if (a.right - a.left < 40 || a.bottom - a.top < 40)
    fail("image too small for the plot");

  std::vector<double> xt = niceTicks(xMin, xMax, kMaxTicks);
  std::vector<double> yt = niceTicks(yMin, yMax, kMaxTicks);
  double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  auto col = [&](double v) {
    return int(std::lround(a.left + (v - x0) / (x1 - x0) * (a.right - a.left)));
  };
  auto row = [&](double v) {
    return int(
        std::lround(a.bottom - (v - y0) / (y1 - y0) * (a.bottom - a.top)));
  };

  Canvas c(options.width, options.height);
  // Grid and tick labels first so the data draws over them.
  double xStep = xt.size() > 1 ? xt[1] - xt[0] : 1;
  double yStep = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double t : xt) {
    int x = col(t);
    c.fill(x, a.top, x, a.bottom, kGrid);
    c.fill(x, a.bottom + 1, x, a.bottom + 4, kBlack);
    std::string s = tickLabel(t, xStep, false);
    c.text(x - textWidth(s, 1) / 2, a.bottom + 7, s, 1, kBlack);
  }
  for (double t : yt) {
    int y = row(t);
    c.fill(a.left, y, a.right, y, kGrid);
    c.fill(a.left - 4, y, a.left - 1, y, kBlack);
    std::string s = tickLabel(t, yStep, options.logY);
    c.text(a.left - 7 - textWidth(s, 1), y - 3, s, 1, kBlack);
  }

  c.clip(a.left, a.top, a.right, a.bottom);
  for (size_t k = 0; k < series.size(); ++k) {
    const Series &s = series[k];
    bool havePrev = false;
    int px = 0, py = 0;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i], s.y[i], options.logY)) {
        havePrev = false;
        continue;
      }
      int x = col(s.x[i]);
      int y = row(options.logY ? std::log10(s.y[i]) : s.y[i]);
      c.line(havePrev ? px : x, havePrev ? py : y, x, y, seriesColor(k));
      px = x, py = y, havePrev = true;
    }
  }
  c.unclip();

  // Axes on top of the data's edge pixels.
  c.fill(a.left, a.bottom, a.right, a.bottom, kBlack);
  c.fill(a.left, a.top, a.left, a.bottom, kBlack);

  if (!options.title.empty())
    c.text((a.left + a.right - textWidth(options.title, 2)) / 2, 12,
           options.title, 2, kBlack);
  c.text((a.left + a.right - textWidth(options.xLabel, 1)) / 2,
         options.height - 16, options.xLabel, 1, kBlack);
  c.text(10, (a.top + a.bottom + textWidth(options.yLabel, 1)) / 2,
         options.yLabel, 1, kBlack, /*up=*/true);

  int ly = a.top + 4;
  for (size_t k = 0; k < series.size(); ++k) {
    if (series[k].label.empty())
      continue;
    c.fill(a.right + 12, ly + 2, a.right + 28, ly + 4, seriesColor(k));
    c.text(a.right + 32, ly, series[k].label, 1, kBlack);
    ly += kCharH + 6;
  }

  writeRgbPng(path, c.pixels.data(), options.width, options.height);
}
