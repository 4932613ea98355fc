//===- ImageColour.h - Colour transforms of images --------------*- C++ -*-===//
//
// The photometric transforms of DeiT-3's and DINO's pipelines on Image
// (pixels in [0, 1], [C, H, W]), with their draws documented in order.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_IMAGECOLOUR_H
#define LAP_RUNTIME_DATA_IMAGECOLOUR_H

#include "runtime/data/Image.h"

#include <cstdint>
#include <random>

namespace lap::data {

/// ITU-R 601-2 luma L = 0.299 R + 0.587 G + 0.114 B written to all three
/// channels. A 1-channel image is left as it is; other counts throw.
void grayscale(Image &image);

/// x >= threshold becomes 1 - x. With pixels k / 255 decoded from 8 bits,
/// the default 0.5 inverts exactly k >= 128, as PIL's ImageOps.solarize.
void solarize(Image &image, float threshold = 0.5f);

/// Separable Gaussian blur of every channel. The kernel has radius
/// r = ceil(3 sigma) (taps -r..r, weights exp(-i^2 / (2 sigma^2)) divided by
/// their sum) and the image is extended by reflection without repeating the
/// edge (PyTorch's "reflect": index -1 reads 1), folded again as often as a
/// radius larger than the image needs. sigma in (0, 1000].
void gaussianBlur(Image &image, double sigma);

/// DeiT-3's 3-Augment: k = uniformIndex(3) picks grayscale (0), solarize (1)
/// or gaussianBlur (2) with sigma = uniform(0.1, 2.0), drawn after k.
/// Images must have 1 or 3 channels.
void threeAugment(Image &image, std::mt19937_64 &rng);

/// torchvision's adjust_brightness: x' = f x, clamped to [0, 1]. f >= 0.
void adjustBrightness(Image &image, double factor);

/// torchvision's adjust_contrast: x' = f x + (1 - f) m, clamped to [0, 1],
/// m the mean luma (grayscale()'s) of the whole image, or its mean pixel for
/// 1 channel. f >= 0; images must have 1 or 3 channels.
void adjustContrast(Image &image, double factor);

/// torchvision's adjust_saturation: x' = f x + (1 - f) L, clamped to [0, 1],
/// L the pixel's luma (grayscale()'s). A 1-channel image is left as it is.
/// f >= 0; images must have 1 or 3 channels.
void adjustSaturation(Image &image, double factor);

/// torchvision's adjust_hue on float tensors, per pixel in double: RGB to
/// HSV (v = max, s = (max - min) / max, h in [0, 1) as its _rgb2hsv, with
/// h = s = 0 for a grey pixel), h' = (h + shift) mod 1 into [0, 1), then
/// back to RGB as its _hsv2rgb (sector i = floor(6 h') mod 6, with p, q, t
/// clamped to [0, 1]). Grey pixels keep their value. A 1-channel image is
/// left as it is. shift in [-0.5, 0.5]; images must have 1 or 3 channels.
void adjustHue(Image &image, double shift);

/// torchvision's ColorJitter without hue, in the fixed order brightness,
/// contrast, saturation. Each v > 0 draws a factor f = uniform(max(0, 1 - v),
/// 1 + v) in that order; v = 0 draws nothing and skips the step. All factors
/// are drawn before the first step; the steps are adjustBrightness,
/// adjustContrast and adjustSaturation, each clamping to [0, 1]:
///   brightness  x' = f x
///   contrast    x' = f x + (1 - f) m, m the mean luma of the whole image
///               (the mean pixel for 1 channel)
///   saturation  x' = f x + (1 - f) L, L the pixel's luma (skipped for 1
///               channel)
/// Luma is grayscale()'s. Images must have 1 or 3 channels.
void colorJitter(Image &image, float brightness, float contrast,
                 float saturation, std::mt19937_64 &rng);

/// torchvision's ColorJitter with hue, its four steps in a random order, as
/// DINO and other self-supervised recipes use it. When every strength is 0
/// nothing is drawn and the image is left as it is. Otherwise, in order:
///  1. The order, a permutation of brightness (0), contrast (1),
///     saturation (2) and hue (3) by Fisher-Yates from the identity: for
///     i = 3, 2, 1, j = uniformIndex(i + 1) and entries i and j swap. Always
///     these three draws, however many steps are enabled (torchvision too
///     draws its randperm(4) every call).
///  2. The factors in the fixed order brightness, contrast, saturation, hue,
///     each only for a strength v > 0 (v = 0 draws nothing and skips the
///     step): f = uniform(max(0, 1 - v), 1 + v) for the first three, and
///     shift = uniform(-hue, hue) for hue.
///  3. The enabled steps in the drawn order: adjustBrightness,
///     adjustContrast, adjustSaturation and adjustHue with those factors.
/// Saturation and hue leave a 1-channel image alone (their factors are
/// still drawn). Strengths finite and >= 0, hue <= 0.5; images must have 1
/// or 3 channels.
void colorJitterRandomOrder(Image &image, float brightness, float contrast,
                            float saturation, float hue, std::mt19937_64 &rng);

/// x' = (x - mean[c]) / stddev[c]; one entry per channel, stddev nonzero.
void normalize(Image &image, const std::vector<float> &mean,
               const std::vector<float> &stddev);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_IMAGECOLOUR_H
