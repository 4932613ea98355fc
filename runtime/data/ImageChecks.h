//===- ImageChecks.h - The augmentations' checks of their input -*- C++ -*-===//
//
// Bad input to an augmentation (an image whose pixel count does not match
// its shape, a size < 1) throws std::runtime_error naming the function
// and the problem, before anything is modified.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_IMAGECHECKS_H
#define LAP_RUNTIME_DATA_IMAGECHECKS_H

#include "runtime/data/Image.h"
#include "runtime/platform/Errors.h"

#include <cstdint>
#include <string>

namespace lap::data::checks {

using lap::platform::fail;

/// c * h * w, refusing sizes below 1 and products that overflow.
inline int64_t elementCount(const char *function, int64_t channels,
                            int64_t height, int64_t width) {
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

inline void checkImage(const char *function, const Image &image) {
  int64_t count =
      elementCount(function, image.channels, image.height, image.width);
  if (image.pixels.size() != uint64_t(count))
    fail(function, "a " + std::to_string(image.channels) + "x" +
                       std::to_string(image.height) + "x" +
                       std::to_string(image.width) + " image holds " +
                       std::to_string(image.pixels.size()) + " pixels, not " +
                       std::to_string(count));
}

inline void checkSize(const char *function, const char *what, int64_t size) {
  if (size < 1)
    fail(function,
         std::string(what) + " " + std::to_string(size) + " is below 1");
}

} // namespace lap::data::checks

#endif // LAP_RUNTIME_DATA_IMAGECHECKS_H
