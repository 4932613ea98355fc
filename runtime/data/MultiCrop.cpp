//===- MultiCrop.cpp - DINO's multi-crop views of one image ---------------===//

#include "runtime/data/MultiCrop.h"

#include "runtime/platform/Errors.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

using namespace lap::data;

namespace {

const char *const kFunction = "multiCropViews";

using lap::platform::numberText;

[[noreturn]] void refuse(const std::string &why) {
  lap::platform::fail(kFunction, why);
}

void checkCount(const char *what, int64_t count, int64_t least) {
  if (count < least)
    refuse(std::string(what) + " " + std::to_string(count) + " is below " +
           std::to_string(least));
}

/// A view of size x size with `channels` channels must fit in int64.
void checkSize(const char *what, int64_t size, int64_t channels) {
  checkCount(what, size, 1);
  int64_t plane, count;
  if (__builtin_mul_overflow(size, size, &plane) ||
      __builtin_mul_overflow(channels, plane, &count))
    refuse(std::string(what) + " " + std::to_string(size) + " overflows");
}

void checkScale(const char *what, double lo, double hi) {
  if (!(lo > 0 && lo <= hi && hi <= 1))
    refuse(std::string(what) + " scale range [" + numberText(lo) + ", " +
           numberText(hi) + "] is not within (0, 1] with min <= max");
}

void checkProb(const char *what, double p) {
  if (!(p >= 0 && p <= 1))
    refuse(std::string(what) + " " + numberText(p) + " is outside [0, 1]");
}

void checkConfig(const Image &image, const MultiCropConfig &config) {
  if (image.channels != 1 && image.channels != 3)
    refuse("needs 1 or 3 channels, the image has " +
           std::to_string(image.channels));
  if (image.height < 1 || image.width < 1)
    refuse("image shape " + std::to_string(image.channels) + "x" +
           std::to_string(image.height) + "x" + std::to_string(image.width) +
           " has a size below 1");
  int64_t plane, count;
  if (__builtin_mul_overflow(image.height, image.width, &plane) ||
      __builtin_mul_overflow(image.channels, plane, &count) ||
      image.pixels.size() != uint64_t(count))
    refuse("the image's " + std::to_string(image.pixels.size()) +
           " pixels do not match its shape");

  checkCount("globalCrops", config.globalCrops, 1);
  checkCount("localCrops", config.localCrops, 0);
  checkSize("globalSize", config.globalSize, image.channels);
  checkSize("localSize", config.localSize, image.channels);
  checkScale("global", config.globalMinScale, config.globalMaxScale);
  checkScale("local", config.localMinScale, config.localMaxScale);

  for (float v :
       {config.brightness, config.contrast, config.saturation, config.hue})
    if (!(v >= 0 && std::isfinite(v)))
      refuse("jitter strength " + numberText(v) + " is not finite and >= 0");
  if (config.hue > 0.5f)
    refuse("hue " + numberText(config.hue) + " is above 0.5");

  checkProb("flipProb", config.flipProb);
  checkProb("jitterProb", config.jitterProb);
  checkProb("grayscaleProb", config.grayscaleProb);
  checkProb("firstBlurProb", config.firstBlurProb);
  checkProb("secondBlurProb", config.secondBlurProb);
  checkProb("localBlurProb", config.localBlurProb);
  checkProb("solarizeProb", config.solarizeProb);
  if (!(config.minSigma > 0 && config.minSigma <= config.maxSigma &&
        config.maxSigma <= 1000))
    refuse("sigma range [" + numberText(config.minSigma) + ", " +
           numberText(config.maxSigma) +
           "] is not within (0, 1000] with min <= max");

  bool skip = config.mean.empty() && config.stddev.empty();
  if (!skip && (config.mean.size() != uint64_t(image.channels) ||
                config.stddev.size() != uint64_t(image.channels)))
    refuse(std::to_string(config.mean.size()) + " means and " +
           std::to_string(config.stddev.size()) + " deviations for " +
           std::to_string(image.channels) + " channels");
  for (float s : config.stddev)
    if (s == 0 || !std::isfinite(s))
      refuse("deviation " + numberText(s) + " is zero or not finite");
}

/// Steps 1 to 7 of one view.
Image view(const Image &image, const MultiCropConfig &config, int64_t size,
           double minScale, double maxScale, double blurProb, bool solarizing,
           std::mt19937_64 &rng) {
  Image out = randomResizedCrop(image, size, rng, minScale, maxScale);
  if (uniform(rng, 0, 1) < config.flipProb)
    horizontalFlip(out);
  if (uniform(rng, 0, 1) < config.jitterProb)
    colorJitterRandomOrder(out, config.brightness, config.contrast,
                           config.saturation, config.hue, rng);
  if (uniform(rng, 0, 1) < config.grayscaleProb)
    grayscale(out);
  if (uniform(rng, 0, 1) < blurProb)
    gaussianBlur(out, uniform(rng, config.minSigma, config.maxSigma));
  if (solarizing && uniform(rng, 0, 1) < config.solarizeProb)
    solarize(out);
  if (!config.mean.empty())
    normalize(out, config.mean, config.stddev);
  return out;
}

} // namespace

std::vector<Image> lap::data::multiCropViews(const Image &image,
                                             const MultiCropConfig &config,
                                             std::mt19937_64 &rng) {
  checkConfig(image, config);
  std::vector<Image> views;
  views.reserve(size_t(config.globalCrops + config.localCrops));
  for (int64_t i = 0; i < config.globalCrops; ++i) {
    bool first = i == 0;
    views.push_back(view(image, config, config.globalSize,
                         config.globalMinScale, config.globalMaxScale,
                         first ? config.firstBlurProb : config.secondBlurProb,
                         !first, rng));
  }
  for (int64_t i = 0; i < config.localCrops; ++i)
    views.push_back(view(image, config, config.localSize, config.localMinScale,
                         config.localMaxScale, config.localBlurProb, false,
                         rng));
  return views;
}
