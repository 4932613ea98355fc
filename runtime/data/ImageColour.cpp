//===- ImageColour.cpp - Colour transforms of images ----------------------===//

#include "runtime/data/ImageColour.h"

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

void checkLumaChannels(const char *function, const Image &image) {
  if (image.channels != 1 && image.channels != 3)
    fail(function, "needs 1 or 3 channels, the image has " +
                       std::to_string(image.channels));
}

} // namespace

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
