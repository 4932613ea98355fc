//===- ImageGeometry.cpp - Resizing, cropping and flipping images ---------===//

#include "runtime/data/ImageGeometry.h"

#include "runtime/data/Draws.h"
#include "runtime/data/ImageChecks.h"
#include "runtime/platform/Errors.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace lap::data;
using namespace lap::data::checks;
using lap::platform::fail;
using lap::platform::numberText;

namespace {

/// Python's round(): to the nearest integer, ties to even.
double roundHalfEven(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5)
    r = 2 * std::round(x / 2);
  return r;
}

/// Where output index d of `out` reads in an input axis of length `in`.
struct Tap {
  int64_t lo, hi;
  double weight; ///< of hi; lo gets 1 - weight.
};

std::vector<Tap> bilinearTaps(int64_t in, int64_t out) {
  std::vector<Tap> taps(static_cast<size_t>(out));
  double scale = double(in) / double(out);
  for (int64_t d = 0; d < out; ++d) {
    double source = std::max(0.0, (double(d) + 0.5) * scale - 0.5);
    int64_t lo = int64_t(source);
    taps[size_t(d)] = {lo, std::min(lo + 1, in - 1), source - double(lo)};
  }
  return taps;
}

/// Bilinear resize of the region `box` of `image` to height x width.
Image resizeRegion(const Image &image, const CropBox &box, int64_t height,
                   int64_t width) {
  std::vector<Tap> rows = bilinearTaps(box.height, height);
  std::vector<Tap> cols = bilinearTaps(box.width, width);
  Image out(image.channels, height, width);
  for (int64_t c = 0; c < image.channels; ++c)
    for (int64_t y = 0; y < height; ++y) {
      const Tap &ty = rows[size_t(y)];
      for (int64_t x = 0; x < width; ++x) {
        const Tap &tx = cols[size_t(x)];
        auto at = [&](int64_t sy, int64_t sx) {
          return double(image.at(c, box.top + sy, box.left + sx));
        };
        double upper =
            (1 - tx.weight) * at(ty.lo, tx.lo) + tx.weight * at(ty.lo, tx.hi);
        double lower =
            (1 - tx.weight) * at(ty.hi, tx.lo) + tx.weight * at(ty.hi, tx.hi);
        out.at(c, y, x) = float((1 - ty.weight) * upper + ty.weight * lower);
      }
    }
  return out;
}

Image cropOf(const Image &image, const CropBox &box) {
  Image out(image.channels, box.height, box.width);
  for (int64_t c = 0; c < image.channels; ++c)
    for (int64_t y = 0; y < box.height; ++y)
      for (int64_t x = 0; x < box.width; ++x)
        out.at(c, y, x) = image.at(c, box.top + y, box.left + x);
  return out;
}

} // namespace

Image lap::data::resize(const Image &image, int64_t height, int64_t width) {
  checkImage("resize", image);
  checkSize("resize", "height", height);
  checkSize("resize", "width", width);
  elementCount("resize", image.channels, height, width);
  return resizeRegion(image, {0, 0, image.height, image.width}, height, width);
}

CropBox lap::data::randomResizedCropBox(int64_t height, int64_t width,
                                        std::mt19937_64 &rng, double minScale,
                                        double maxScale, double minRatio,
                                        double maxRatio) {
  const char *function = "randomResizedCropBox";
  elementCount(function, 1, height, width);
  if (!(minScale > 0 && minScale <= maxScale && std::isfinite(maxScale)))
    fail(function, "scale range [" + numberText(minScale) + ", " +
                       numberText(maxScale) + "] is not within (0, inf)");
  if (!(minRatio > 0 && minRatio <= maxRatio && std::isfinite(maxRatio)))
    fail(function, "ratio range [" + numberText(minRatio) + ", " +
                       numberText(maxRatio) + "] is not within (0, inf)");

  double area = double(height) * double(width);
  double logMin = std::log(minRatio), logMax = std::log(maxRatio);
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target = area * uniform(rng, minScale, maxScale);
    double ratio = std::exp(uniform(rng, logMin, logMax));
    // Compared as doubles: a large scale may ask for more than int64 holds.
    double w = roundHalfEven(std::sqrt(target * ratio));
    double h = roundHalfEven(std::sqrt(target / ratio));
    if (w >= 1 && w <= double(width) && h >= 1 && h <= double(height)) {
      CropBox box{0, 0, int64_t(h), int64_t(w)};
      box.top = uniformIndex(rng, height - box.height + 1);
      box.left = uniformIndex(rng, width - box.width + 1);
      return box;
    }
  }

  // Every attempt failed: the whole image, narrowed to the ratio range (and
  // never below one pixel, which torchvision does not guard).
  CropBox box{0, 0, height, width};
  double ratio = double(width) / double(height);
  if (ratio < minRatio)
    box.height =
        std::max<int64_t>(1, int64_t(roundHalfEven(double(width) / minRatio)));
  else if (ratio > maxRatio)
    box.width =
        std::max<int64_t>(1, int64_t(roundHalfEven(double(height) * maxRatio)));
  box.top = (height - box.height) / 2;
  box.left = (width - box.width) / 2;
  return box;
}

Image lap::data::randomResizedCrop(const Image &image, int64_t size,
                                   std::mt19937_64 &rng, double minScale,
                                   double maxScale, double minRatio,
                                   double maxRatio) {
  checkImage("randomResizedCrop", image);
  checkSize("randomResizedCrop", "size", size);
  elementCount("randomResizedCrop", image.channels, size, size);
  CropBox box = randomResizedCropBox(image.height, image.width, rng, minScale,
                                     maxScale, minRatio, maxRatio);
  return resizeRegion(image, box, size, size);
}

Image lap::data::resizeShorter(const Image &image, int64_t shorter) {
  checkImage("resizeShorter", image);
  checkSize("resizeShorter", "shorter side", shorter);
  int64_t h = image.height, w = image.width, longer;
  if (__builtin_mul_overflow(shorter, std::max(h, w), &longer))
    fail("resizeShorter", "shorter side " + std::to_string(shorter) +
                              " overflows the longer one");
  if (w <= h)
    return resize(image, longer / w, shorter);
  return resize(image, shorter, longer / h);
}

Image lap::data::centerCrop(const Image &image, int64_t size) {
  checkImage("centerCrop", image);
  checkSize("centerCrop", "size", size);
  if (size > image.height || size > image.width)
    fail("centerCrop", "a " + std::to_string(size) + "x" +
                           std::to_string(size) + " crop does not fit a " +
                           std::to_string(image.height) + "x" +
                           std::to_string(image.width) + " image");
  CropBox box{int64_t(roundHalfEven(double(image.height - size) / 2)),
              int64_t(roundHalfEven(double(image.width - size) / 2)), size,
              size};
  return cropOf(image, box);
}

void lap::data::horizontalFlip(Image &image) {
  checkImage("horizontalFlip", image);
  for (int64_t c = 0; c < image.channels; ++c)
    for (int64_t y = 0; y < image.height; ++y)
      std::reverse(&image.at(c, y, 0), &image.at(c, y, 0) + image.width);
}
