//===- Augment.cpp - Image augmentations for supervised ViT training ------===//

#include "runtime/data/Augment.h"

#include "runtime/platform/Errors.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>
#include <string>

using namespace lap::data;

namespace {

using lap::platform::fail;
using lap::platform::numberText;

/// c * h * w, refusing sizes below 1 and products that overflow.
int64_t elementCount(const char *function, int64_t channels, int64_t height,
                     int64_t width) {
  if (channels < 1 || height < 1 || width < 1)
    fail(function, "image shape " + std::to_string(channels) + "x" +
                       std::to_string(height) + "x" + std::to_string(width) +
                       " has a size below 1");
  int64_t plane, count;
  if (__builtin_mul_overflow(height, width, &plane) ||
      __builtin_mul_overflow(channels, plane, &count))
    fail(function, "image shape overflows");
  return count;
}

void checkImage(const char *function, const Image &image) {
  int64_t count =
      elementCount(function, image.channels, image.height, image.width);
  if (image.pixels.size() != uint64_t(count))
    fail(function, "a " + std::to_string(image.channels) + "x" +
                       std::to_string(image.height) + "x" +
                       std::to_string(image.width) + " image holds " +
                       std::to_string(image.pixels.size()) + " pixels, not " +
                       std::to_string(count));
}

void checkSize(const char *function, const char *what, int64_t size) {
  if (size < 1)
    fail(function,
         std::string(what) + " " + std::to_string(size) + " is below 1");
}

void checkLumaChannels(const char *function, const Image &image) {
  if (image.channels != 1 && image.channels != 3)
    fail(function, "needs 1 or 3 channels, the image has " +
                       std::to_string(image.channels));
}

void checkUnit(const char *function, const char *what, double value) {
  if (!(value >= 0 && value <= 1))
    fail(function,
         std::string(what) + " " + numberText(value) + " is outside [0, 1]");
}

/// Python's round(): to the nearest integer, ties to even.
double roundHalfEven(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5)
    r = 2 * std::round(x / 2);
  return r;
}

double luma(double r, double g, double b) {
  return 0.299 * r + 0.587 * g + 0.114 * b;
}

float clampUnit(double x) { return float(std::clamp(x, 0.0, 1.0)); }

/// PyTorch's "reflect" extension of [0, n): -1 reads 1, n reads n - 2. The
/// reflection is periodic with period 2 (n - 1), which handles any offset.
int64_t reflectIndex(int64_t i, int64_t n) {
  if (n == 1)
    return 0;
  int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0)
    i += period;
  return i < n ? i : period - i;
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

/// Marsaglia's polar method; the second normal of each pair is dropped so
/// that no state lives outside the caller's generator.
double standardNormal(std::mt19937_64 &rng) {
  for (;;) {
    double a = uniform(rng, -1, 1), b = uniform(rng, -1, 1);
    double s = a * a + b * b;
    if (s > 0 && s < 1)
      return a * std::sqrt(-2 * std::log(s) / s);
  }
}

/// The log of a Gamma(shape, 1) draw (Marsaglia & Tsang, 2000). Logs keep
/// shapes far below 1 from underflowing to 0.
double logGammaDraw(std::mt19937_64 &rng, double shape) {
  if (shape < 1) {
    double logBoosted = logGammaDraw(rng, shape + 1);
    double u = 1 - uniform(rng, 0, 1); // (0, 1], so the log is finite
    return logBoosted + std::log(u) / shape;
  }
  double d = shape - 1.0 / 3.0, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x, v;
    do {
      x = standardNormal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    double u = uniform(rng, 0, 1);
    if (u < 1 - 0.0331 * (x * x) * (x * x) ||
        std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v)))
      return std::log(d * v);
  }
}

void checkBatch(const char *function, const float *images, int64_t batch,
                int64_t channels, int64_t height, int64_t width) {
  checkSize(function, "batch", batch);
  elementCount(function, channels, height, width);
  if (!images)
    fail(function, "images is null");
}

void checkLabels(const char *function, const int32_t *labels, int64_t batch,
                 int64_t classes) {
  checkSize(function, "batch", batch);
  checkSize(function, "classes", classes);
  if (!labels)
    fail(function, "labels is null");
  for (int64_t i = 0; i < batch; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      fail(function, "label " + std::to_string(labels[i]) + " of sample " +
                         std::to_string(i) + " is outside [0, " +
                         std::to_string(classes) + ")");
}

void checkCutmixBox(const char *function, const CutmixBox &box, int64_t height,
                    int64_t width) {
  if (!(0 <= box.top && box.top <= box.bottom && box.bottom <= height &&
        0 <= box.left && box.left <= box.right && box.right <= width))
    fail(function, "box rows [" + std::to_string(box.top) + ", " +
                       std::to_string(box.bottom) + ") columns [" +
                       std::to_string(box.left) + ", " +
                       std::to_string(box.right) + ") is not inside " +
                       std::to_string(height) + "x" + std::to_string(width));
}

} // namespace

//===----------------------------------------------------------------------===//
// Draws
//===----------------------------------------------------------------------===//

double lap::data::uniform(std::mt19937_64 &rng, double lo, double hi) {
  double u = double(rng() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

int64_t lap::data::uniformIndex(std::mt19937_64 &rng, int64_t n) {
  checkSize("uniformIndex", "n", n);
  return int64_t(rng() % uint64_t(n));
}

double lap::data::sampleBeta(std::mt19937_64 &rng, double a, double b) {
  if (!(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b)))
    fail("sampleBeta", "shapes " + numberText(a) + ", " + numberText(b) +
                           " must be positive and finite");
  double logX = logGammaDraw(rng, a);
  double logY = logGammaDraw(rng, b);
  // X / (X + Y) = 1 / (1 + Y / X).
  return 1 / (1 + std::exp(logY - logX));
}

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Colour
//===----------------------------------------------------------------------===//

void lap::data::grayscale(Image &image) {
  checkImage("grayscale", image);
  checkLumaChannels("grayscale", image);
  if (image.channels == 1)
    return;
  for (int64_t y = 0; y < image.height; ++y)
    for (int64_t x = 0; x < image.width; ++x) {
      float l =
          float(luma(image.at(0, y, x), image.at(1, y, x), image.at(2, y, x)));
      image.at(0, y, x) = image.at(1, y, x) = image.at(2, y, x) = l;
    }
}

void lap::data::solarize(Image &image, float threshold) {
  checkImage("solarize", image);
  for (float &p : image.pixels)
    if (p >= threshold)
      p = 1 - p;
}

void lap::data::gaussianBlur(Image &image, double sigma) {
  checkImage("gaussianBlur", image);
  // The bound keeps the kernel (6 sigma + 1 taps) to a sane size.
  if (!(sigma > 0 && sigma <= 1000))
    fail("gaussianBlur",
         "sigma " + numberText(sigma) + " is outside (0, 1000]");
  int64_t radius = int64_t(std::ceil(3 * sigma));
  std::vector<double> kernel(size_t(2 * radius + 1));
  double sum = 0;
  for (int64_t i = -radius; i <= radius; ++i) {
    kernel[size_t(i + radius)] = std::exp(-double(i * i) / (2 * sigma * sigma));
    sum += kernel[size_t(i + radius)];
  }
  for (double &k : kernel)
    k /= sum;

  int64_t h = image.height, w = image.width;
  std::vector<double> rowsBlurred(size_t(h * w));
  for (int64_t c = 0; c < image.channels; ++c) {
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        double acc = 0;
        for (int64_t i = -radius; i <= radius; ++i)
          acc += kernel[size_t(i + radius)] *
                 image.at(c, y, reflectIndex(x + i, w));
        rowsBlurred[size_t(y * w + x)] = acc;
      }
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        double acc = 0;
        for (int64_t i = -radius; i <= radius; ++i)
          acc += kernel[size_t(i + radius)] *
                 rowsBlurred[size_t(reflectIndex(y + i, h) * w + x)];
        image.at(c, y, x) = float(acc);
      }
  }
}

void lap::data::threeAugment(Image &image, std::mt19937_64 &rng) {
  checkImage("threeAugment", image);
  checkLumaChannels("threeAugment", image);
  switch (uniformIndex(rng, 3)) {
  case 0:
    grayscale(image);
    break;
  case 1:
    solarize(image);
    break;
  default:
    gaussianBlur(image, uniform(rng, 0.1, 2.0));
    break;
  }
}

namespace {

/// The colour steps without their checks, for the jitters that check once.
void brightnessStep(Image &image, double f) {
  for (float &p : image.pixels)
    p = clampUnit(f * p);
}

/// Luma of pixel i of a 1- or 3-channel image (the pixel for 1 channel).
double lumaAt(const Image &image, int64_t i) {
  int64_t plane = image.height * image.width;
  const float *px = image.pixels.data();
  return image.channels == 1 ? double(px[i])
                             : luma(px[i], px[plane + i], px[2 * plane + i]);
}

void contrastStep(Image &image, double f) {
  int64_t plane = image.height * image.width;
  double mean = 0;
  for (int64_t i = 0; i < plane; ++i)
    mean += lumaAt(image, i);
  mean /= double(plane);
  for (float &p : image.pixels)
    p = clampUnit(f * p + (1 - f) * mean);
}

void saturationStep(Image &image, double f) {
  if (image.channels != 3)
    return;
  int64_t plane = image.height * image.width;
  for (int64_t i = 0; i < plane; ++i) {
    double l = lumaAt(image, i);
    for (int64_t c = 0; c < 3; ++c) {
      float &p = image.pixels[size_t(c * plane + i)];
      p = clampUnit(f * p + (1 - f) * l);
    }
  }
}

/// torchvision's _rgb2hsv, hue shift and _hsv2rgb, one pixel at a time.
void hueStep(Image &image, double shift) {
  if (image.channels != 3)
    return;
  int64_t plane = image.height * image.width;
  float *red = image.pixels.data(), *green = red + plane, *blue = green + plane;
  for (int64_t i = 0; i < plane; ++i) {
    double r = red[i], g = green[i], b = blue[i];
    double maxc = std::max({r, g, b}), minc = std::min({r, g, b});
    bool grey = maxc == minc;
    double range = maxc - minc;
    double s = range / (grey ? 1 : maxc);
    double divisor = grey ? 1 : range;
    double rc = (maxc - r) / divisor, gc = (maxc - g) / divisor,
           bc = (maxc - b) / divisor;
    double h = maxc == r ? bc - gc : maxc == g ? 2 + rc - bc : 4 + gc - rc;
    h = std::fmod(h / 6 + 1, 1.0);
    h += shift;
    h -= std::floor(h); // Python's % 1.0: into [0, 1] (1 only by rounding)

    double v = maxc, sector = std::floor(h * 6), f = h * 6 - sector;
    double p = std::clamp(v * (1 - s), 0.0, 1.0);
    double q = std::clamp(v * (1 - s * f), 0.0, 1.0);
    double t = std::clamp(v * (1 - s * (1 - f)), 0.0, 1.0);
    double out[3];
    switch (int64_t(sector) % 6) {
    case 0:
      out[0] = v, out[1] = t, out[2] = p;
      break;
    case 1:
      out[0] = q, out[1] = v, out[2] = p;
      break;
    case 2:
      out[0] = p, out[1] = v, out[2] = t;
      break;
    case 3:
      out[0] = p, out[1] = q, out[2] = v;
      break;
    case 4:
      out[0] = t, out[1] = p, out[2] = v;
      break;
    default:
      out[0] = v, out[1] = p, out[2] = q;
      break;
    }
    red[i] = float(out[0]);
    green[i] = float(out[1]);
    blue[i] = float(out[2]);
  }
}

void checkFactor(const char *function, double factor) {
  if (!(factor >= 0 && std::isfinite(factor)))
    fail(function, "factor " + numberText(factor) + " is not finite and >= 0");
}

void checkStrengths(const char *function, std::initializer_list<float> all) {
  for (float v : all)
    if (!(v >= 0 && std::isfinite(v)))
      fail(function, "strength " + numberText(v) + " is not finite and >= 0");
}

/// uniform(max(0, 1 - v), 1 + v) for v > 0; 1 without a draw otherwise.
double jitterFactor(std::mt19937_64 &rng, double v) {
  return v > 0 ? uniform(rng, std::max(0.0, 1 - v), 1 + v) : 1.0;
}

} // namespace

void lap::data::adjustBrightness(Image &image, double factor) {
  checkImage("adjustBrightness", image);
  checkFactor("adjustBrightness", factor);
  brightnessStep(image, factor);
}

void lap::data::adjustContrast(Image &image, double factor) {
  checkImage("adjustContrast", image);
  checkLumaChannels("adjustContrast", image);
  checkFactor("adjustContrast", factor);
  contrastStep(image, factor);
}

void lap::data::adjustSaturation(Image &image, double factor) {
  checkImage("adjustSaturation", image);
  checkLumaChannels("adjustSaturation", image);
  checkFactor("adjustSaturation", factor);
  saturationStep(image, factor);
}

void lap::data::adjustHue(Image &image, double shift) {
  checkImage("adjustHue", image);
  checkLumaChannels("adjustHue", image);
  if (!(shift >= -0.5 && shift <= 0.5))
    fail("adjustHue", "shift " + numberText(shift) + " is outside [-0.5, 0.5]");
  hueStep(image, shift);
}

void lap::data::colorJitter(Image &image, float brightness, float contrast,
                            float saturation, std::mt19937_64 &rng) {
  const char *function = "colorJitter";
  checkImage(function, image);
  checkLumaChannels(function, image);
  checkStrengths(function, {brightness, contrast, saturation});

  double fb = jitterFactor(rng, brightness), fc = jitterFactor(rng, contrast),
         fs = jitterFactor(rng, saturation);
  if (brightness > 0)
    brightnessStep(image, fb);
  if (contrast > 0)
    contrastStep(image, fc);
  if (saturation > 0)
    saturationStep(image, fs);
}

void lap::data::colorJitterRandomOrder(Image &image, float brightness,
                                       float contrast, float saturation,
                                       float hue, std::mt19937_64 &rng) {
  const char *function = "colorJitterRandomOrder";
  checkImage(function, image);
  checkLumaChannels(function, image);
  checkStrengths(function, {brightness, contrast, saturation, hue});
  if (hue > 0.5f)
    fail(function, "hue " + numberText(hue) + " is above 0.5");
  if (brightness == 0 && contrast == 0 && saturation == 0 && hue == 0)
    return;

  int order[4] = {0, 1, 2, 3};
  for (int i = 3; i >= 1; --i)
    std::swap(order[i], order[uniformIndex(rng, i + 1)]);
  double fb = jitterFactor(rng, brightness), fc = jitterFactor(rng, contrast),
         fs = jitterFactor(rng, saturation);
  double shift = hue > 0 ? uniform(rng, -double(hue), double(hue)) : 0.0;

  for (int step : order)
    switch (step) {
    case 0:
      if (brightness > 0)
        brightnessStep(image, fb);
      break;
    case 1:
      if (contrast > 0)
        contrastStep(image, fc);
      break;
    case 2:
      if (saturation > 0)
        saturationStep(image, fs);
      break;
    default:
      if (hue > 0)
        hueStep(image, shift);
      break;
    }
}

void lap::data::normalize(Image &image, const std::vector<float> &mean,
                          const std::vector<float> &stddev) {
  checkImage("normalize", image);
  if (mean.size() != uint64_t(image.channels) ||
      stddev.size() != uint64_t(image.channels))
    fail("normalize", std::to_string(mean.size()) + " means and " +
                          std::to_string(stddev.size()) + " deviations for " +
                          std::to_string(image.channels) + " channels");
  for (float s : stddev)
    if (s == 0 || !std::isfinite(s))
      fail("normalize",
           "deviation " + numberText(s) + " is zero or not finite");
  int64_t plane = image.height * image.width;
  for (int64_t c = 0; c < image.channels; ++c) {
    float *p = image.pixels.data() + c * plane;
    for (int64_t i = 0; i < plane; ++i)
      p[i] = (p[i] - mean[size_t(c)]) / stddev[size_t(c)];
  }
}

//===----------------------------------------------------------------------===//
// Mixup / CutMix
//===----------------------------------------------------------------------===//

void lap::data::mixBatch(float *images, int64_t batch, int64_t channels,
                         int64_t height, int64_t width, const int32_t *labels,
                         int64_t classes, float *targets,
                         const MixConfig &config, std::mt19937_64 &rng) {
  const char *function = "mixBatch";
  checkBatch(function, images, batch, channels, height, width);
  checkLabels(function, labels, batch, classes);
  if (!targets)
    fail(function, "targets is null");
  for (double alpha : {config.mixupAlpha, config.cutmixAlpha})
    if (!(alpha >= 0 && std::isfinite(alpha)))
      fail(function, "alpha " + numberText(alpha) + " is not finite and >= 0");
  checkUnit(function, "switchProb", config.switchProb);
  checkUnit(function, "prob", config.prob);
  if (!(config.labelSmoothing >= 0 && config.labelSmoothing < 1))
    fail(function, "labelSmoothing " + numberText(config.labelSmoothing) +
                       " is outside [0, 1)");

  bool mixup = config.mixupAlpha > 0, cutmix = config.cutmixAlpha > 0;
  double lambda = 1;
  if ((mixup || cutmix) && config.prob > 0 &&
      uniform(rng, 0, 1) < config.prob) {
    bool useCutmix =
        mixup && cutmix ? uniform(rng, 0, 1) < config.switchProb : cutmix;
    double alpha = useCutmix ? config.cutmixAlpha : config.mixupAlpha;
    lambda = sampleBeta(rng, alpha, alpha);
    if (lambda != 1) {
      if (useCutmix) {
        CutmixBox box = cutmixBox(height, width, lambda, rng);
        lambda = cutmixLambda(box, height, width);
        cutmixImages(images, batch, channels, height, width, box);
      } else {
        mixupImages(images, batch, channels, height, width, lambda);
      }
    }
  }
  mixTargets(labels, batch, classes, lambda, config.labelSmoothing, targets);
}

CutmixBox lap::data::cutmixBox(int64_t height, int64_t width, double lambda,
                               std::mt19937_64 &rng) {
  elementCount("cutmixBox", 1, height, width);
  checkUnit("cutmixBox", "lambda", lambda);
  double side = std::sqrt(1 - lambda);
  int64_t cutH = int64_t(double(height) * side);
  int64_t cutW = int64_t(double(width) * side);
  int64_t cy = uniformIndex(rng, height);
  int64_t cx = uniformIndex(rng, width);
  return {std::clamp<int64_t>(cy - cutH / 2, 0, height),
          std::clamp<int64_t>(cy + cutH / 2, 0, height),
          std::clamp<int64_t>(cx - cutW / 2, 0, width),
          std::clamp<int64_t>(cx + cutW / 2, 0, width)};
}

double lap::data::cutmixLambda(const CutmixBox &box, int64_t height,
                               int64_t width) {
  elementCount("cutmixLambda", 1, height, width);
  checkCutmixBox("cutmixLambda", box, height, width);
  double area = double(box.bottom - box.top) * double(box.right - box.left);
  return 1 - area / (double(height) * double(width));
}

void lap::data::mixupImages(float *images, int64_t batch, int64_t channels,
                            int64_t height, int64_t width, double lambda) {
  checkBatch("mixupImages", images, batch, channels, height, width);
  checkUnit("mixupImages", "lambda", lambda);
  int64_t count = channels * height * width;
  // Each pair is mixed together, so both read their partner's original.
  for (int64_t i = 0; i < batch / 2; ++i) {
    float *a = images + i * count, *b = images + (batch - 1 - i) * count;
    for (int64_t k = 0; k < count; ++k) {
      double x = a[k], y = b[k];
      a[k] = float(lambda * x + (1 - lambda) * y);
      b[k] = float(lambda * y + (1 - lambda) * x);
    }
  }
}

void lap::data::cutmixImages(float *images, int64_t batch, int64_t channels,
                             int64_t height, int64_t width,
                             const CutmixBox &box) {
  checkBatch("cutmixImages", images, batch, channels, height, width);
  checkCutmixBox("cutmixImages", box, height, width);
  int64_t count = channels * height * width, plane = height * width;
  for (int64_t i = 0; i < batch / 2; ++i) {
    float *a = images + i * count, *b = images + (batch - 1 - i) * count;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = box.top; y < box.bottom; ++y) {
        int64_t row = c * plane + y * width;
        std::swap_ranges(a + row + box.left, a + row + box.right,
                         b + row + box.left);
      }
  }
}

void lap::data::mixTargets(const int32_t *labels, int64_t batch,
                           int64_t classes, double lambda, double smoothing,
                           float *targets) {
  checkLabels("mixTargets", labels, batch, classes);
  checkUnit("mixTargets", "lambda", lambda);
  if (!(smoothing >= 0 && smoothing < 1))
    fail("mixTargets",
         "smoothing " + numberText(smoothing) + " is outside [0, 1)");
  if (!targets)
    fail("mixTargets", "targets is null");
  double off = smoothing / double(classes), on = 1 - smoothing + off;
  for (int64_t i = 0; i < batch; ++i) {
    int32_t own = labels[i], partner = labels[batch - 1 - i];
    float *row = targets + i * classes;
    for (int64_t k = 0; k < classes; ++k)
      row[k] = float(lambda * (k == own ? on : off) +
                     (1 - lambda) * (k == partner ? on : off));
  }
}
