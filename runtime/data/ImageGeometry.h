//===- ImageGeometry.h - Resizing, cropping and flipping images ---*- C++ -*-===//
//
// torchvision's geometric transforms on Image (pixels in [0, 1],
// [C, H, W]), with their draws documented in order.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_IMAGEGEOMETRY_H
#define LAP_RUNTIME_DATA_IMAGEGEOMETRY_H

#include "runtime/data/Image.h"

#include <cstdint>
#include <random>

namespace lap::data {

/// Bilinear resize with PyTorch's F.interpolate(mode="bilinear",
/// align_corners=False, antialias=False): output pixel d reads source
/// coordinate s = max(0, (d + 0.5) * in / out - 0.5), between floor(s) and
/// min(floor(s) + 1, in - 1). Resizing to the same size is the identity.
Image resize(const Image &image, int64_t height, int64_t width);

/// A rectangle of an image: rows [top, top + height), columns
/// [left, left + width).
struct CropBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
};

/// torchvision's RandomResizedCrop.get_params on a height x width image.
/// Up to 10 attempts, each drawing scale = uniform(minScale, maxScale) then
/// logRatio = uniform(log minRatio, log maxRatio), and asking for
///   w = round(sqrt(area * scale * ratio)),
///   h = round(sqrt(area * scale / ratio))
/// (round half to even, as Python's round). The first that fits draws
///   top = uniformIndex(height - h + 1), left = uniformIndex(width - w + 1).
/// If none fits: the centred crop of the whole image narrowed to the ratio
/// range, w = round(height * maxRatio) or h = round(width / minRatio) (at
/// least 1), top = (height - h) / 2 and left = (width - w) / 2 rounded down.
/// Requires 0 < minScale <= maxScale and 0 < minRatio <= maxRatio.
CropBox randomResizedCropBox(int64_t height, int64_t width,
                             std::mt19937_64 &rng, double minScale = 0.08,
                             double maxScale = 1.0, double minRatio = 3 / 4.,
                             double maxRatio = 4 / 3.);

/// The box of randomResizedCropBox, resized bilinearly (as resize) to
/// size x size.
Image randomResizedCrop(const Image &image, int64_t size, std::mt19937_64 &rng,
                        double minScale = 0.08, double maxScale = 1.0,
                        double minRatio = 3 / 4., double maxRatio = 4 / 3.);

/// Resizes (as resize) so the shorter side becomes `shorter`, as
/// torchvision's Resize(int): an H x W image with W <= H becomes
/// floor(shorter * H / W) x shorter, one with H < W becomes
/// shorter x floor(shorter * W / H).
Image resizeShorter(const Image &image, int64_t shorter);

/// The centred size x size crop, offsets round((H - size) / 2) and
/// round((W - size) / 2) with round half to even (torchvision's center_crop).
/// Throws if the image is smaller than size in either direction.
Image centerCrop(const Image &image, int64_t size);

/// Mirrors every row.
void horizontalFlip(Image &image);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_IMAGEGEOMETRY_H
