//===- SegmentationData.cpp - Images with label maps ----------------------===//

#include "runtime/data/SegmentationData.h"

#include "runtime/data/ImageFiles.h"
#include "runtime/data/ImageGeometry.h"
#include "runtime/platform/Errors.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;
using lap::platform::fail;

namespace lap::data {

std::vector<SegmentationSample> segmentationSamples(const std::string &root,
                                                    const std::string &split) {
  const fs::path images = fs::path(root) / "images" / split,
                 annotations = fs::path(root) / "annotations" / split;
  std::error_code error;
  if (!fs::is_directory(images, error))
    fail(images.string(), "no such directory (a segmentation set in "
                          "ADE20K's layout: images/" +
                              split + "/NAME.jpg, annotations/" + split +
                              "/NAME.png)");
  std::vector<SegmentationSample> out;
  for (const fs::directory_entry &e : fs::directory_iterator(images, error)) {
    std::string extension = e.path().extension().string();
    if (extension != ".jpg" && extension != ".jpeg" && extension != ".png")
      continue;
    fs::path annotation = annotations / (e.path().stem().string() + ".png");
    if (!fs::is_regular_file(annotation, error))
      fail(e.path().string(), "has no label map " + annotation.string());
    out.push_back({e.path().string(), annotation.string()});
  }
  if (error)
    fail(images.string(), "cannot list it: " + error.message());
  if (out.empty())
    fail(images.string(), "no .jpg or .png image in it");
  std::sort(out.begin(), out.end(),
            [](const SegmentationSample &a, const SegmentationSample &b) {
              return a.image < b.image;
            });
  return out;
}

LabelledImage loadSegmentationSample(const SegmentationSample &sample,
                                     int64_t size, int64_t classes) {
  LabelledImage out;
  out.image = resize(decodeImageFile(sample.image), size, size);
  Image map = decodeImageFile(sample.annotation);
  if (map.channels != 1)
    fail(sample.annotation, "a label map has one channel; this one has " +
                                std::to_string(map.channels));
  out.labels.resize(size_t(size * size));
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x) {
      // The nearest source pixel: the one under the target's centre.
      int64_t sy = std::min(map.height - 1,
                            (2 * y + 1) * map.height / (2 * size)),
              sx =
                  std::min(map.width - 1, (2 * x + 1) * map.width / (2 * size));
      auto value = int64_t(std::lround(map.at(0, sy, sx) * 255.0f));
      if (value > classes)
        fail(sample.annotation,
             "label " + std::to_string(value) + " at (" + std::to_string(sy) +
                 ", " + std::to_string(sx) + ") is beyond the " +
                 std::to_string(classes) + " classes (stored as 1.." +
                 std::to_string(classes) + ", 0 unlabelled)");
      out.labels[size_t(y * size + x)] = int32_t(value - 1);
    }
  return out;
}

} // namespace lap::data
