//===- PatchPca.h - PCA pictures of ViT patch features ----------*- C++ -*-===//
//
// The pictures of DINO (Caron et al. 2021) and of Zhang & Papyan's
// Laplacian-heads paper: the patch tokens of a few images are projected on
// their first three principal components, shown as red, green and blue, so
// that the parts of an image a model groups together share a colour. A
// picture puts one row per model (baseline, Laplacian, ...) side by side
// with one column per image.
//
// patchPca does the numbers: one PCA over all tokens of all images together
// (centred on the mean token, the top three eigenvectors of the C x C
// covariance, in double precision), each component's projections min-max
// normalised to [0, 1] over all tokens of all images. writePcaPictures
// draws them as a PNG with libpng; there is no text on the picture.
//
// Every failure is a std::runtime_error naming the function and the problem
// (and, when writing, the output path).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ANALYSIS_PATCHPCA_H
#define LAP_RUNTIME_ANALYSIS_PATCHPCA_H

#include "runtime/data/Image.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lap::analysis {

/// The colours of the patch tokens of `images` images, each a `grid` x
/// `grid` grid of tokens.
struct PatchPca {
  int64_t images = 0, grid = 0;
  /// [images, grid, grid, 3] in [0, 1]: token (y, x) of image i has its
  /// colour at ((i * grid + y) * grid + x) * 3; red is the first component.
  std::vector<float> rgb;
  /// The fraction of the total variance (the trace of the covariance) along
  /// each component; 0 for a missing component, all 0 when the total is 0.
  std::array<double, 3> explained = {0, 0, 0};
};

/// A component whose eigenvalue is at most this fraction of the total
/// variance is rounding noise, not a direction of the data: its channel is
/// 0.5 everywhere.
constexpr double kPcaNegligibleVariance = 1e-10;

/// The PCA colours of features [n, grid * grid, width] (row-major, patch
/// tokens only: the caller strips CLS and register tokens), token t of an
/// image at grid row t / grid, column t % grid.
///
/// Sign rule: each principal direction is oriented so that its loading of
/// largest magnitude is positive (the lowest channel among exact ties).
///
/// Degenerate input is drawn, not refused: a component that does not exist
/// (width < 3), whose variance is negligible (kPcaNegligibleVariance) or
/// whose projections are all equal gets 0.5 (mid grey) for every token, so
/// a constant feature map is uniform grey with explained {0, 0, 0}, never
/// NaN. Throws on null features, sizes that are not positive or too large,
/// and values that are not finite.
PatchPca patchPca(const float *features, int64_t n, int64_t grid,
                  int64_t width);

/// Pixels between neighbouring cells and around the edge of a picture.
constexpr int kPcaGap = 4;

/// The largest width or height of a picture (libpng's default limit when
/// reading a PNG back).
constexpr int64_t kPcaMaxSide = 1000000;

/// Layout of a picture of `rows` models and `images` images whose tokens
/// form a `grid` x `grid` grid, each token drawn as `scale` x `scale`
/// pixels: cells are square with side cell = grid * scale. Each row has
/// `columns` cells, images cells or, with the input images, 2 * images
/// (input image i in column 2i, its PCA colours in column 2i + 1). Cell
/// (row r, column c) has its top-left pixel at
///   x = kPcaGap + c * (cell + kPcaGap), y = kPcaGap + r * (cell + kPcaGap),
/// so width = kPcaGap + columns * (cell + kPcaGap) and height = kPcaGap +
/// rows * (cell + kPcaGap). The background is white. Throws on counts or a
/// scale that are not positive and on a side larger than kPcaMaxSide.
struct PcaLayout {
  int64_t cell, columns, width, height;
};

PcaLayout pcaLayout(int64_t rows, int64_t images, int64_t grid,
                    bool withOriginals, int scale);

/// Writes one row per entry of `rows` (each a model's patchPca of the same
/// images, so with equal images and grid) as an RGB PNG at `path`, laid out
/// as pcaLayout says. Token (y, x) fills the pixel rows
/// [y * scale, (y + 1) * scale) and columns [x * scale, (x + 1) * scale) of
/// its cell; a colour v in [0, 1] is written as lround(255 * v).
///
/// `originals`, if not null, holds the input images, one per column, each
/// [C, H, W] with C 1 (grey) or 3 (RGB) and pixels in [0, 1] (values
/// outside are clamped); every row repeats them, each resized to the cell
/// by nearest neighbour: cell pixel (py, px) shows image pixel
/// (py * H / cell, px * W / cell).
///
/// The file is written to `path` + ".tmp" and renamed to `path` when
/// complete, so an interrupted write never leaves a partial picture. Throws,
/// naming `path`, on no rows, rows that disagree or whose rgb has the wrong
/// size, whatever pcaLayout refuses, originals of the wrong count,
/// channels or size, colours or pixels that are not finite, or I/O
/// errors.
void writePcaPictures(const std::string &path,
                      const std::vector<PatchPca> &rows,
                      const std::vector<lap::data::Image> *originals,
                      int scale);

} // namespace lap::analysis

#endif // LAP_RUNTIME_ANALYSIS_PATCHPCA_H
