//===- ImageFiles.h - JPEG and PNG files to images --------------*- C++ -*-===//
//
// Decoding of the image files an ImageFolder holds, with libjpeg-turbo and
// libpng: grayscale as 1 channel, colour as 3 (alpha dropped, 16-bit scaled
// to 8, CMYK/YCCK converted to RGB), pixels / 255.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_IMAGEFILES_H
#define LAP_RUNTIME_DATA_IMAGEFILES_H

#include "runtime/data/Image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lap::data {

/// Decodes `file` (the bytes of `path`) by its content, not its name: a
/// JPEG or a PNG. Throws std::runtime_error "PATH: PROBLEM" for anything
/// else, a damaged file, or an image beyond 2^28 pixels.
Image decodeImage(const std::string &path, const std::vector<uint8_t> &file);

/// The image in the regular file `path` (decodeImage of its bytes, by
/// content: some files are misnamed).
Image decodeImageFile(const std::string &path);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_IMAGEFILES_H
