//===- SegmentationTest.cpp - The linear segmentation probe ---------------===//
//
// The metric against a confusion matrix computed by hand; the patch labels
// and the bilinear upsampling on cases small enough to check by eye; and
// the whole probe on label maps whose answer is known: features that
// encode each patch's class reach mIoU 1, features drawn independently of
// the labels score at chance.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Segmentation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

using namespace lap::analysis;

namespace {

TEST(Segmentation, ScoreIsTheHandComputedOne) {
  // Truth and prediction of 9 pixels, 3 classes; one pixel ignored.
  const std::vector<int32_t> truth = {0, 0, 0, 1, 1, 2, 2, kIgnore, 2},
                             predicted = {0, 0, 1, 1, 2, 2, 2, 0, 0};
  Confusion confusion(3);
  confusion.add(truth.data(), predicted.data(), 9);
  //            predicted 0  1  2
  // truth 0:             2  1  0
  // truth 1:             0  1  1
  // truth 2:             1  0  2
  EXPECT_EQ(confusion.counts,
            (std::vector<int64_t>{2, 1, 0, 0, 1, 1, 1, 0, 2}));
  SegmentationScore s = score(confusion);
  // IoU: class 0 2 / (3 + 3 - 2), class 1 1 / (2 + 2 - 1), class 2
  // 2 / (3 + 3 - 2).
  EXPECT_DOUBLE_EQ(s.iou[0], 0.5);
  EXPECT_DOUBLE_EQ(s.iou[1], 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.iou[2], 0.5);
  EXPECT_DOUBLE_EQ(s.meanIoU, (0.5 + 1.0 / 3.0 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(s.pixelAccuracy, 5.0 / 8.0);
}

TEST(Segmentation, AClassNeitherPresentNorPredictedIsLeftOut) {
  const std::vector<int32_t> truth = {0, 1}, predicted = {0, 1};
  Confusion confusion(4);
  confusion.add(truth.data(), predicted.data(), 2);
  SegmentationScore s = score(confusion);
  EXPECT_TRUE(std::isnan(s.iou[2]) && std::isnan(s.iou[3]));
  EXPECT_DOUBLE_EQ(s.meanIoU, 1.0);
}

TEST(Segmentation, BadInputIsAnError) {
  Confusion confusion(2);
  const std::vector<int32_t> truth = {0, 5}, predicted = {0, 1};
  EXPECT_THROW(confusion.add(truth.data(), predicted.data(), 2),
               std::runtime_error);
  const std::vector<int32_t> ignored = {kIgnore};
  Confusion empty(2);
  empty.add(ignored.data(), predicted.data(), 1);
  EXPECT_THROW(score(empty), std::runtime_error);
}

TEST(Segmentation, PatchesTakeTheLabelAtTheirCentre) {
  // 4 x 4 pixels, 2 x 2 patches: each patch's centre is pixel (2y+1, 2x+1).
  const std::vector<int32_t> labels = {0, 0, 1, 1, //
                                       0, 2, 1, 3, //
                                       4, 4, 5, 5, //
                                       4, 6, 5, 7};
  EXPECT_EQ(patchLabels(labels.data(), 4, 2),
            (std::vector<int32_t>{2, 3, 6, 7}));
}

TEST(Segmentation, UpsamplingIsBilinearThenArgmax) {
  // 2 x 2 patches, 2 classes: the left column says class 0, the right
  // class 1; upsampled to 8 x 8, the boundary lies between pixels 3 and 4.
  const std::vector<double> logits = {1, 0, 0, 1, //
                                      1, 0, 0, 1};
  std::vector<int32_t> classes = upsampledClasses(logits.data(), 2, 2, 8);
  for (int64_t y = 0; y < 8; ++y)
    for (int64_t x = 0; x < 8; ++x)
      EXPECT_EQ(classes[size_t(y * 8 + x)], x < 4 ? 0 : 1) << y << " " << x;
  // Logits that cross between the patches, not at the boundary.
  const std::vector<double> ramp = {0.0, 1.0, 0.2, 0.0, //
                                    0.0, 1.0, 0.2, 0.0};
  classes = upsampledClasses(ramp.data(), 2, 2, 8);
  // Class 0: 0.2 t; class 1: 1 - t, t the weight of the right patch, the
  // source coordinate (x + 0.5) / 4 - 0.5 clamped to [0, 1]. 0.2 t > 1 - t
  // from t > 5/6: pixel 5 (t = 0.875) on.
  for (int64_t x = 0; x < 8; ++x)
    EXPECT_EQ(classes[size_t(x)], x >= 5 ? 0 : 1) << x;
}

/// `images` label maps of size x size pixels whose classes are constant on
/// grid x grid patches, with each patch's class; some pixels of the first
/// map ignored. `stripes`: each image's columns of patches are a shuffle
/// of the classes (grid == classes), so every class is as frequent and a
/// pixel's neighbouring patches along y share its class; else every patch
/// draws its class.
struct PatchData {
  std::vector<int32_t> labels, patchClasses;
};
PatchData patchData(int64_t images, int64_t grid, int64_t size, int64_t classes,
                    uint64_t seed, bool stripes) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(classes - 1));
  PatchData d;
  d.labels.resize(size_t(images * size * size));
  const int64_t p = size / grid;
  for (int64_t i = 0; i < images; ++i) {
    std::vector<int32_t> columns(static_cast<size_t>(grid));
    for (int64_t x = 0; x < grid; ++x)
      columns[size_t(x)] = int32_t(x % classes);
    std::shuffle(columns.begin(), columns.end(), rng);
    for (int64_t gy = 0; gy < grid; ++gy)
      for (int64_t gx = 0; gx < grid; ++gx) {
        int32_t c = stripes ? columns[size_t(gx)] : pick(rng);
        d.patchClasses.push_back(c);
        for (int64_t y = gy * p; y < (gy + 1) * p; ++y)
          for (int64_t x = gx * p; x < (gx + 1) * p; ++x)
            d.labels[size_t((i * size + y) * size + x)] = c;
      }
  }
  d.labels[0] = kIgnore;
  return d;
}

// Bilinear upsampling can only give every pixel its own patch's class when
// the logits treat the classes alike and a pixel's own patch outweighs any
// other class: a pixel near a corner weighs its own patch by 0.39 against
// 0.61 for the other three, which may all be of one class. So: stripes of
// equally frequent classes, one-hot features (the label exactly), and
// full-batch gradient descent, which keeps the classes alike.
TEST(Segmentation, FeaturesThatEncodeTheLabelReachMeanIoUOne) {
  const int64_t grid = 4, size = 16, classes = 4;
  PatchData train = patchData(30, grid, size, classes, 1, true),
            test = patchData(10, grid, size, classes, 2, true);
  auto features = [&](const PatchData &d) {
    std::vector<float> f;
    for (int32_t c : d.patchClasses)
      for (int64_t j = 0; j < classes; ++j)
        f.push_back(j == c ? 1.0f : 0.0f);
    return f;
  };
  std::vector<float> trainFeatures = features(train),
                     testFeatures = features(test);
  LinearProbeOptions fullBatch;
  fullBatch.batch = 1 << 20;
  SegmentationResult r =
      segmentationProbe({trainFeatures.data(), train.labels.data(), 30},
                        {testFeatures.data(), test.labels.data(), 10}, grid,
                        size, classes, classes, fullBatch, 2);
  EXPECT_DOUBLE_EQ(r.validation.meanIoU, 1.0);
  EXPECT_DOUBLE_EQ(r.validation.pixelAccuracy, 1.0);
  EXPECT_DOUBLE_EQ(r.train.meanIoU, 1.0);
  ASSERT_EQ(r.predictions.size(), size_t(2 * size * size));
  for (size_t i = 1; i < r.predictions.size(); ++i)
    EXPECT_EQ(r.predictions[i], test.labels[i]) << i;
}

TEST(Segmentation, FeaturesIndependentOfTheLabelsScoreAtChance) {
  const int64_t grid = 4, size = 16, classes = 4, dims = 16;
  PatchData train = patchData(60, grid, size, classes, 5, false),
            test = patchData(60, grid, size, classes, 6, false);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> noise;
  std::vector<float> trainFeatures(size_t(60 * grid * grid * dims)),
      testFeatures(trainFeatures.size());
  for (float &x : trainFeatures)
    x = noise(rng);
  for (float &x : testFeatures)
    x = noise(rng);
  SegmentationResult r =
      segmentationProbe({trainFeatures.data(), train.labels.data(), 60},
                        {testFeatures.data(), test.labels.data(), 60}, grid,
                        size, dims, classes, {});
  // Uniform classes: a pixel is right 1 time in 4; with 960 test patches
  // the accuracy stays within a few points of it.
  EXPECT_NEAR(r.validation.pixelAccuracy, 0.25, 0.06);
  EXPECT_LT(r.validation.meanIoU, 0.2);
}

} // namespace
