//===- Mixing.cpp - Mixup and CutMix of whole batches ---------------------===//

#include "runtime/data/Mixing.h"

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

void checkUnit(const char *function, const char *what, double value) {
  if (!(value >= 0 && value <= 1))
    fail(function,
         std::string(what) + " " + numberText(value) + " is outside [0, 1]");
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
