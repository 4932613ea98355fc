//===- SegmentationData.h - Images with label maps --------------*- C++ -*-===//
//
// A segmentation set in ADE20K's published layout (ADEChallengeData2016):
//
//   ROOT/images/<split>/NAME.jpg          (or .png) the image
//   ROOT/annotations/<split>/NAME.png     its label map: 8-bit, one value
//                                         per pixel, 0 unlabelled, class k
//                                         stored as k + 1
//
// ADE20K's splits are `training` and `validation` and its classes 150; any
// set in the same layout (a generic image + label PNG folder) works with
// its own number of classes. Every failure names the file and the problem.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_SEGMENTATIONDATA_H
#define LAP_RUNTIME_DATA_SEGMENTATIONDATA_H

#include "runtime/data/Image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lap::data {

/// One image and its label map.
struct SegmentationSample {
  std::string image, annotation;
};

/// The samples of `split` under `root`, sorted by name; throws when the
/// split has no image, or an image has no annotation.
std::vector<SegmentationSample> segmentationSamples(const std::string &root,
                                                    const std::string &split);

/// A sample at `size` x `size` pixels: the image resized bilinearly (its
/// whole area, so its aspect ratio is not kept), the label map by nearest
/// neighbour into [size, size] classes, unlabelled pixels -1. Throws when
/// a label exceeds `classes`, or either file is not an image.
struct LabelledImage {
  Image image;
  std::vector<int32_t> labels;
};
LabelledImage loadSegmentationSample(const SegmentationSample &sample,
                                     int64_t size, int64_t classes);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_SEGMENTATIONDATA_H
