//===- Segmentation.cpp - A linear segmentation probe on patch features ---===//

#include "runtime/analysis/Segmentation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

using namespace lap::analysis;

namespace {

[[noreturn]] void fail(const char *function, const std::string &why) {
  throw std::runtime_error(std::string(function) + ": " + why);
}

/// Bilinear source coordinates of output pixel `i` of `out` pixels over
/// `in` samples (align_corners=False): the two samples and the weight of
/// the second.
struct Tap {
  int64_t lo, hi;
  double weight;
};
Tap tap(int64_t i, int64_t in, int64_t out) {
  double x = (double(i) + 0.5) * double(in) / double(out) - 0.5;
  x = std::max(x, 0.0);
  int64_t lo = std::min(int64_t(x), in - 1);
  int64_t hi = std::min(lo + 1, in - 1);
  return {lo, hi, x - double(lo)};
}

/// The train rows (features and labels) of `split`'s patches whose label
/// is not kIgnore.
void patchRows(const SegmentationSplit &split, int64_t grid, int64_t size,
               int64_t dims, std::vector<float> &rows,
               std::vector<int32_t> &labels) {
  const int64_t patches = grid * grid;
  for (int64_t i = 0; i < split.images; ++i) {
    std::vector<int32_t> classes =
        patchLabels(split.labels + i * size * size, size, grid);
    for (int64_t p = 0; p < patches; ++p) {
      if (classes[size_t(p)] == kIgnore)
        continue;
      const float *f = split.features + (i * patches + p) * dims;
      rows.insert(rows.end(), f, f + dims);
      labels.push_back(classes[size_t(p)]);
    }
  }
}

} // namespace

void Confusion::add(const int32_t *truth, const int32_t *predicted, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (truth[i] == kIgnore)
      continue;
    if (truth[i] < 0 || truth[i] >= classes || predicted[i] < 0 ||
        predicted[i] >= classes)
      fail("Confusion::add", "a class outside [0, " + std::to_string(classes) +
                                 ") at pixel " + std::to_string(i));
    ++counts[size_t(truth[i] * classes + predicted[i])];
  }
}

SegmentationScore lap::analysis::score(const Confusion &confusion) {
  const int64_t k = confusion.classes;
  SegmentationScore out;
  out.iou.assign(size_t(k), std::numeric_limits<double>::quiet_NaN());
  int64_t correct = 0, total = 0;
  double sum = 0;
  int64_t defined = 0;
  for (int64_t c = 0; c < k; ++c) {
    int64_t truePositive = confusion.counts[size_t(c * k + c)];
    int64_t truth = 0, predicted = 0;
    for (int64_t j = 0; j < k; ++j) {
      truth += confusion.counts[size_t(c * k + j)];
      predicted += confusion.counts[size_t(j * k + c)];
    }
    correct += truePositive;
    total += truth;
    int64_t unionSize = truth + predicted - truePositive;
    if (unionSize == 0)
      continue;
    out.iou[size_t(c)] = double(truePositive) / double(unionSize);
    sum += out.iou[size_t(c)];
    ++defined;
  }
  if (total == 0)
    fail("score", "no pixel to score (every label is the ignore label)");
  out.meanIoU = sum / double(defined);
  out.pixelAccuracy = double(correct) / double(total);
  return out;
}

std::vector<int32_t> lap::analysis::patchLabels(const int32_t *labels,
                                                int64_t size, int64_t grid) {
  if (grid < 1 || size < grid)
    fail("patchLabels", "a grid of " + std::to_string(grid) + " patches over " +
                            std::to_string(size) + " pixels");
  std::vector<int32_t> out(size_t(grid * grid));
  for (int64_t y = 0; y < grid; ++y)
    for (int64_t x = 0; x < grid; ++x) {
      // The pixel under the patch's centre.
      int64_t py = std::min(size - 1, int64_t((y + 0.5) * size / grid));
      int64_t px = std::min(size - 1, int64_t((x + 0.5) * size / grid));
      out[size_t(y * grid + x)] = labels[py * size + px];
    }
  return out;
}

std::vector<int32_t> lap::analysis::upsampledClasses(const double *logits,
                                                     int64_t grid,
                                                     int64_t classes,
                                                     int64_t size) {
  std::vector<int32_t> out(size_t(size * size));
  std::vector<double> mixed(static_cast<size_t>(classes));
  for (int64_t y = 0; y < size; ++y) {
    Tap ty = tap(y, grid, size);
    for (int64_t x = 0; x < size; ++x) {
      Tap tx = tap(x, grid, size);
      const double *a = logits + (ty.lo * grid + tx.lo) * classes,
                   *b = logits + (ty.lo * grid + tx.hi) * classes,
                   *c = logits + (ty.hi * grid + tx.lo) * classes,
                   *d = logits + (ty.hi * grid + tx.hi) * classes;
      int32_t best = 0;
      for (int64_t k = 0; k < classes; ++k) {
        double top = a[k] + tx.weight * (b[k] - a[k]),
               bottom = c[k] + tx.weight * (d[k] - c[k]);
        mixed[size_t(k)] = top + ty.weight * (bottom - top);
        if (mixed[size_t(k)] > mixed[size_t(best)])
          best = int32_t(k);
      }
      out[size_t(y * size + x)] = best;
    }
  }
  return out;
}

SegmentationResult lap::analysis::segmentationProbe(
    const SegmentationSplit &train, const SegmentationSplit &validation,
    int64_t grid, int64_t size, int64_t dims, int64_t classes,
    const LinearProbeOptions &options, int64_t keepPredictions) {
  for (const SegmentationSplit *s : {&train, &validation})
    if (!s->features || !s->labels || s->images < 1)
      fail("segmentationProbe", "a split without images");
  std::vector<float> trainRows, testRows;
  std::vector<int32_t> trainLabels, testLabels;
  patchRows(train, grid, size, dims, trainRows, trainLabels);
  patchRows(validation, grid, size, dims, testRows, testLabels);
  if (trainLabels.empty() || testLabels.empty())
    fail("segmentationProbe", "a split whose every patch has the ignore "
                              "label");
  SegmentationResult out;
  out.probe = linearProbe(trainRows.data(), trainLabels.data(),
                          int64_t(trainLabels.size()), testRows.data(),
                          testLabels.data(), int64_t(testLabels.size()), dims,
                          classes, options);

  // Every patch's logits with the probe's weights, upsampled to pixels.
  const int64_t patches = grid * grid;
  auto scoreSplit = [&](const SegmentationSplit &s, int64_t keep) {
    Confusion confusion(classes);
    std::vector<double> logits(static_cast<size_t>(patches * classes));
    for (int64_t i = 0; i < s.images; ++i) {
      for (int64_t p = 0; p < patches; ++p) {
        const float *f = s.features + (i * patches + p) * dims;
        for (int64_t k = 0; k < classes; ++k) {
          double z = out.probe.bias[size_t(k)];
          const double *w = out.probe.weight.data() + k * dims;
          for (int64_t j = 0; j < dims; ++j)
            z += w[j] * double(f[j]);
          logits[size_t(p * classes + k)] = z;
        }
      }
      std::vector<int32_t> predicted =
          upsampledClasses(logits.data(), grid, classes, size);
      confusion.add(s.labels + i * size * size, predicted.data(), size * size);
      if (i < keep)
        out.predictions.insert(out.predictions.end(), predicted.begin(),
                               predicted.end());
    }
    return score(confusion);
  };
  out.train = scoreSplit(train, 0);
  out.validation = scoreSplit(validation, keepPredictions);
  return out;
}
