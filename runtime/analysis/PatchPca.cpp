//===- PatchPca.cpp - PCA pictures of ViT patch features --------*- C++ -*-===//

#include "runtime/analysis/PatchPca.h"
#include "runtime/analysis/InputChecks.h"
#include "runtime/analysis/Plot.h"

#include <lapacke.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>

using namespace lap::analysis;

namespace {

using namespace checks;

/// a * b, or a refusal when it would overflow int64_t (both positive).
int64_t product(const char *function, int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() / b)
    fail(function, "sizes " + std::to_string(a) + " x " + std::to_string(b) +
                       " are too large");
  return a * b;
}

/// The top min(3, C) eigenpairs of the symmetric C x C row-major matrix `a`
/// (upper triangle used), largest first: values[k], and vectors[k * C + c].
void topEigen(std::vector<double> &a, int64_t C, std::vector<double> &values,
              std::vector<double> &vectors) {
  const char *function = "patchPca";
  if (C > INT_MAX)
    fail(function, "a " + std::to_string(C) + " x " + std::to_string(C) +
                       " eigenproblem is too large for LAPACK");
  lapack_int n = lapack_int(C), m = 0,
             want = lapack_int(std::min<int64_t>(3, C));
  std::vector<double> w(static_cast<size_t>(n)), z(size_t(n) * want);
  std::vector<lapack_int> support(2 * size_t(want));
  lapack_int info = LAPACKE_dsyevr(
      LAPACK_ROW_MAJOR, 'V', 'I', 'U', n, a.data(), n, 0, 0, n - want + 1, n,
      LAPACKE_dlamch('S'), &m, w.data(), z.data(), want, support.data());
  if (info != 0 || m != want)
    fail(function, "eigendecomposition failed (LAPACK info " +
                       std::to_string(info) + ")");
  // LAPACK returns them ascending: column want - 1 is the largest.
  values.assign(size_t(want), 0);
  vectors.assign(size_t(want) * n, 0);
  for (lapack_int k = 0; k < want; ++k) {
    lapack_int col = want - 1 - k;
    values[k] = w[col];
    for (lapack_int c = 0; c < n; ++c)
      vectors[size_t(k) * n + c] = z[size_t(c) * want + col];
  }
}

uint8_t toByte(float v) {
  return uint8_t(std::lround(255.0f * std::clamp(v, 0.0f, 1.0f)));
}

} // namespace

PatchPca lap::analysis::patchPca(const float *features, int64_t n, int64_t grid,
                                 int64_t width) {
  const char *function = "patchPca";
  if (!features)
    fail(function, "features is null");
  requirePositive(function, "n", n);
  requirePositive(function, "grid", grid);
  requirePositive(function, "width", width);
  const int64_t T = product(function, n, product(function, grid, grid));
  const int64_t C = width;
  const int64_t count = product(function, T, C);
  product(function, C, C); // the covariance
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(features[i]))
      fail(function, "features[" + std::to_string(i) + "] (image " +
                         std::to_string(i / C / (grid * grid)) + ", token " +
                         std::to_string(i / C % (grid * grid)) + ", channel " +
                         std::to_string(i % C) + ") is not finite");

  std::vector<double> mean(size_t(C), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c)
      mean[c] += features[t * C + c];
  for (double &m : mean)
    m /= double(T);

  // The upper triangle of the covariance (over T, not T - 1: only ratios
  // and directions are used).
  std::vector<double> cov(size_t(C) * C, 0.0), d(static_cast<size_t>(C));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = 0; c < C; ++c)
      d[c] = features[t * C + c] - mean[c];
    for (int64_t i = 0; i < C; ++i) {
      const double di = d[i];
      if (di == 0)
        continue;
      double *row = &cov[size_t(i) * C];
      for (int64_t j = i; j < C; ++j)
        row[j] += di * d[j];
    }
  }
  double total = 0;
  for (int64_t i = 0; i < C; ++i)
    total += cov[size_t(i) * C + i];
  total /= double(T);

  PatchPca out;
  out.images = n;
  out.grid = grid;
  out.rgb.assign(size_t(T) * 3, 0.5f);
  if (!(total > 0))
    return out;

  std::vector<double> values, vectors;
  topEigen(cov, C, values, vectors);
  std::vector<double> projection(static_cast<size_t>(T));
  for (size_t k = 0; k < values.size(); ++k) {
    const double variance = values[k] / double(T);
    out.explained[k] = std::max(0.0, variance / total);
    if (variance <= kPcaNegligibleVariance * total)
      continue;
    double *v = &vectors[k * C];
    int64_t largest = 0;
    for (int64_t c = 1; c < C; ++c)
      if (std::abs(v[c]) > std::abs(v[largest]))
        largest = c;
    if (v[largest] < 0)
      for (int64_t c = 0; c < C; ++c)
        v[c] = -v[c];

    double lo = INFINITY, hi = -INFINITY;
    for (int64_t t = 0; t < T; ++t) {
      double p = 0;
      for (int64_t c = 0; c < C; ++c)
        p += (features[t * C + c] - mean[c]) * v[c];
      projection[t] = p;
      lo = std::min(lo, p), hi = std::max(hi, p);
    }
    if (!(hi > lo))
      continue;
    for (int64_t t = 0; t < T; ++t)
      out.rgb[size_t(t) * 3 + k] = float((projection[t] - lo) / (hi - lo));
  }
  return out;
}

PcaLayout lap::analysis::pcaLayout(int64_t rows, int64_t images, int64_t grid,
                                   bool withOriginals, int scale) {
  const char *function = "pcaLayout";
  requirePositive(function, "rows", rows);
  requirePositive(function, "images", images);
  requirePositive(function, "grid", grid);
  requirePositive(function, "scale", scale);
  auto side = [&](int64_t cells, int64_t cell) {
    // Compared before multiplying so that nothing overflows.
    if (cell > kPcaMaxSide || cells > kPcaMaxSide / (cell + kPcaGap))
      fail(function, std::to_string(cells) + " cells of " +
                         std::to_string(cell) + " px exceed " +
                         std::to_string(kPcaMaxSide) + " px");
    return kPcaGap + cells * (cell + kPcaGap);
  };
  if (grid > kPcaMaxSide / scale)
    fail(function, "a grid of " + std::to_string(grid) + " tokens of " +
                       std::to_string(scale) + " px exceeds " +
                       std::to_string(kPcaMaxSide) + " px");
  PcaLayout layout;
  layout.cell = grid * scale;
  if (images > kPcaMaxSide)
    fail(function, std::to_string(images) + " images are too many");
  layout.columns = withOriginals ? 2 * images : images;
  layout.width = side(layout.columns, layout.cell);
  layout.height = side(rows, layout.cell);
  return layout;
}

void lap::analysis::writePcaPictures(
    const std::string &path, const std::vector<PatchPca> &rows,
    const std::vector<lap::data::Image> *originals, int scale) {
  auto fail = [&](const std::string &why) {
    throw std::runtime_error("writePcaPictures: " + path + ": " + why);
  };
  if (rows.empty())
    fail("no rows");
  const int64_t images = rows[0].images, grid = rows[0].grid;
  for (size_t r = 1; r < rows.size(); ++r)
    if (rows[r].images != images || rows[r].grid != grid)
      fail("row " + std::to_string(r) + " has " +
           std::to_string(rows[r].images) + " images of " +
           std::to_string(rows[r].grid) + " x " + std::to_string(rows[r].grid) +
           " tokens but row 0 has " + std::to_string(images) + " of " +
           std::to_string(grid) + " x " + std::to_string(grid));
  PcaLayout layout;
  try {
    layout = pcaLayout(int64_t(rows.size()), images, grid, originals != nullptr,
                       scale);
  } catch (const std::runtime_error &e) {
    fail(e.what());
  }
  const size_t values = size_t(images) * grid * grid * 3;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].rgb.size() != values)
      fail("row " + std::to_string(r) + " has " +
           std::to_string(rows[r].rgb.size()) + " colour values, expected " +
           std::to_string(values));
    for (size_t i = 0; i < values; ++i)
      if (!std::isfinite(rows[r].rgb[i]))
        fail("row " + std::to_string(r) + " colour value " + std::to_string(i) +
             " is not finite");
  }
  if (originals) {
    if (int64_t(originals->size()) != images)
      fail(std::to_string(originals->size()) + " input images for " +
           std::to_string(images) + " columns");
    for (size_t i = 0; i < originals->size(); ++i) {
      const lap::data::Image &im = (*originals)[i];
      if (im.channels != 1 && im.channels != 3)
        fail("input image " + std::to_string(i) + " has " +
             std::to_string(im.channels) + " channels, need 1 or 3");
      if (im.height <= 0 || im.width <= 0 ||
          im.pixels.size() != size_t(im.channels * im.height * im.width))
        fail("input image " + std::to_string(i) + " is " +
             std::to_string(im.channels) + " x " + std::to_string(im.height) +
             " x " + std::to_string(im.width) + " with " +
             std::to_string(im.pixels.size()) + " pixels");
      for (size_t p = 0; p < im.pixels.size(); ++p)
        if (!std::isfinite(im.pixels[p]))
          fail("input image " + std::to_string(i) + " pixel value " +
               std::to_string(p) + " is not finite");
    }
  }

  const int64_t cell = layout.cell;
  std::vector<uint8_t> pixels(size_t(layout.width) * layout.height * 3, 255);
  auto origin = [&](int64_t r, int64_t c) {
    return std::array<int64_t, 2>{kPcaGap + c * (cell + kPcaGap),
                                  kPcaGap + r * (cell + kPcaGap)};
  };
  auto pixel = [&](int64_t x, int64_t y) {
    return &pixels[(size_t(y) * layout.width + x) * 3];
  };
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t i = 0; i < images; ++i) {
      if (originals) {
        const lap::data::Image &im = (*originals)[i];
        auto [x0, y0] = origin(int64_t(r), 2 * i);
        for (int64_t py = 0; py < cell; ++py)
          for (int64_t px = 0; px < cell; ++px) {
            int64_t sy = py * im.height / cell, sx = px * im.width / cell;
            uint8_t *out = pixel(x0 + px, y0 + py);
            for (int k = 0; k < 3; ++k)
              out[k] = toByte(im.at(im.channels == 3 ? k : 0, sy, sx));
          }
      }
      auto [x0, y0] = origin(int64_t(r), originals ? 2 * i + 1 : i);
      const float *rgb = &rows[r].rgb[size_t(i) * grid * grid * 3];
      for (int64_t py = 0; py < cell; ++py)
        for (int64_t px = 0; px < cell; ++px) {
          const float *c = &rgb[((py / scale) * grid + px / scale) * 3];
          uint8_t *out = pixel(x0 + px, y0 + py);
          for (int k = 0; k < 3; ++k)
            out[k] = toByte(c[k]);
        }
    }

  writeRgbPng(path, pixels.data(), int(layout.width), int(layout.height));
}
