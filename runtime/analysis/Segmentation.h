//===- Segmentation.h - A linear segmentation probe on patch features -*- C++ -*-===//
//
// DINO's and DINOv2's dense evaluation: a linear classifier trained on a
// frozen backbone's patch tokens predicts each patch's class; its logits,
// upsampled bilinearly to the label map's pixels, give every pixel's
// class; the score is the mean intersection over union of the classes
// (mIoU) and the pixel accuracy, pixels of the ignore label left out.
//
// A patch learns the label at its centre (the label map resampled to the
// patch grid by nearest neighbour); patches whose centre has the ignore
// label are not trained on. The classifier is analysis::linearProbe's
// (standardised features, SGD on the cross-entropy), so the probe is
// deterministic for a seed. Label maps are [images, size, size] of class
// indices in [0, classes), or kIgnore.
//
// Every failure is a std::runtime_error naming the function and the
// problem.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ANALYSIS_SEGMENTATION_H
#define LAP_RUNTIME_ANALYSIS_SEGMENTATION_H

#include "runtime/analysis/Probe.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lap::analysis {

/// The label of pixels no class is scored on.
constexpr int32_t kIgnore = -1;

/// A confusion matrix: counts[truth * classes + prediction].
struct Confusion {
  explicit Confusion(int64_t classes)
      : classes(classes), counts(size_t(classes * classes), 0) {}
  /// Counts the `n` pixels of `truth` (kIgnore: skipped) against
  /// `predicted`.
  void add(const int32_t *truth, const int32_t *predicted, int64_t n);

  int64_t classes;
  std::vector<int64_t> counts;
};

/// What a confusion matrix scores.
///   iou[c]: true positives / (true positives + false positives + false
///     negatives) of class c; NaN for a class neither in the truth nor
///     predicted, which the mean leaves out;
///   meanIoU: the mean of the defined iou[c];
///   pixelAccuracy: correctly classified pixels / pixels scored.
struct SegmentationScore {
  std::vector<double> iou;
  double meanIoU = 0, pixelAccuracy = 0;
};
SegmentationScore score(const Confusion &confusion);

/// The class of each of the grid x grid patches of the label map `labels`
/// [size, size]: the label at the patch's centre.
std::vector<int32_t> patchLabels(const int32_t *labels, int64_t size,
                                 int64_t grid);

/// The class of every pixel of a size x size image from the logits
/// [grid, grid, classes] of its patches, upsampled bilinearly (the patch
/// centres at half-patch offsets, edges clamped, as
/// torch.nn.functional.interpolate with align_corners=False): the argmax,
/// ties going to the lowest class.
std::vector<int32_t> upsampledClasses(const double *logits, int64_t grid,
                                      int64_t classes, int64_t size);

/// Features and label maps of one split.
///   features [images, grid * grid, dims]: each image's patch tokens in
///     row-major patch order;
///   labels [images, size, size].
struct SegmentationSplit {
  const float *features = nullptr;
  const int32_t *labels = nullptr;
  int64_t images = 0;
};

/// The probe's outcome: the validation split's score, the train split's
/// (on the same upsampled predictions), and the classifier.
struct SegmentationResult {
  SegmentationScore validation, train;
  LinearProbeResult probe;
  /// The predicted label maps of the first `keepPredictions` validation
  /// images [keep, size, size], for pictures.
  std::vector<int32_t> predictions;
};

/// Trains the linear classifier on `train`'s patches and scores both
/// splits. grid: patches per side; size: the label maps' side (a multiple
/// of nothing in particular); dims: features per patch.
SegmentationResult segmentationProbe(const SegmentationSplit &train,
                                     const SegmentationSplit &validation,
                                     int64_t grid, int64_t size, int64_t dims,
                                     int64_t classes,
                                     const LinearProbeOptions &options = {},
                                     int64_t keepPredictions = 0);

} // namespace lap::analysis

#endif // LAP_RUNTIME_ANALYSIS_SEGMENTATION_H
