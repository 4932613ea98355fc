//===- Image.h - One decoded image ------------------------------*- C++ -*-===//
//
// The unit the image datasets produce and the augmentations transform:
// float pixels in [0, 1] (before normalisation), channel-major [C, H, W] as
// the model's `images` batch tensor wants them.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_IMAGE_H
#define LAP_RUNTIME_DATA_IMAGE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lap::data {

struct Image {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<float> pixels; ///< [channels, height, width]

  Image() = default;
  Image(int64_t channels, int64_t height, int64_t width, float fill = 0.0f)
      : channels(channels), height(height), width(width),
        pixels(size_t(channels * height * width), fill) {}

  float &at(int64_t c, int64_t y, int64_t x) {
    return pixels[size_t((c * height + y) * width + x)];
  }
  float at(int64_t c, int64_t y, int64_t x) const {
    return pixels[size_t((c * height + y) * width + x)];
  }
};

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_IMAGE_H
