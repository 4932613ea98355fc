//===- Augment.h - Image augmentations for ViT training ---------*- C++ -*-===//
//
// The transforms of DeiT-3 / timm training and evaluation, on Image (pixels
// in [0, 1], [C, H, W]) and on whole batches for Mixup / CutMix.
//
// All randomness comes from the caller's std::mt19937_64 through uniform()
// and uniformIndex() below (never std::*_distribution, whose results differ
// between standard libraries), and every function documents the draws it
// makes, in order, so a seed gives the same images on every machine.
//
// Bad input (an image whose pixel count does not match its shape, a size
// < 1, a parameter out of range) throws std::runtime_error naming the
// function and the problem; nothing is modified before the check.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_AUGMENT_H
#define LAP_RUNTIME_DATA_AUGMENT_H

#include "runtime/data/Image.h"

#include <cstdint>
#include <random>
#include <vector>

namespace lap::data {

//===----------------------------------------------------------------------===//
// Draws
//===----------------------------------------------------------------------===//

/// One rng() call: u = (rng() >> 11) * 2^-53, uniform on 53 bits in [0, 1);
/// returns lo + (hi - lo) * u (exactly lo when lo == hi).
double uniform(std::mt19937_64 &rng, double lo, double hi);

/// One rng() call: rng() % n, in [0, n) (bias below n / 2^64). n >= 1.
int64_t uniformIndex(std::mt19937_64 &rng, int64_t n);

/// Beta(a, b) as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b) drawn in that
/// order by Marsaglia-Tsang on polar-method normals; shapes below 1 use
/// Gamma(s + 1) * u^(1/s). The ratio is formed from log X and log Y, so
/// shapes small enough to underflow X and Y as doubles still give a value
/// in [0, 1] rather than 0 / 0. a, b > 0.
double sampleBeta(std::mt19937_64 &rng, double a, double b);

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Colour
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Mixup / CutMix
//===----------------------------------------------------------------------===//

/// timm's Mixup in batch mode: one lambda for the batch, sample i mixed
/// with sample batch - 1 - i (the flipped batch; an odd batch's middle
/// sample is its own partner and stays as it is).
struct MixConfig {
  double mixupAlpha = 0.8;     ///< Beta(alpha, alpha) for mixup; 0 disables.
  double cutmixAlpha = 1.0;    ///< Beta(alpha, alpha) for CutMix; 0 disables.
  double switchProb = 0.5;     ///< P(CutMix) when both are enabled.
  double prob = 1.0;           ///< P(mixing the batch at all).
  double labelSmoothing = 0.1; ///< In [0, 1).
};

/// Mixes `images` ([batch, channels, height, width]) in place and writes
/// `targets` ([batch, classes]) from `labels` (each in [0, classes)).
/// Draws, in order, only where the step can go both ways: mix iff
/// uniform(0, 1) < prob (when an alpha > 0 and prob > 0); CutMix iff
/// uniform(0, 1) < switchProb (when both alphas > 0, else the enabled kind);
/// lambda = sampleBeta(alpha, alpha) of that kind; for CutMix the box of
/// cutmixBox, and lambda = cutmixLambda of it. Lambda 1 (no mixing, or a
/// Beta draw of exactly 1) leaves the pixels alone; the targets are always
/// mixTargets(lambda).
void mixBatch(float *images, int64_t batch, int64_t channels, int64_t height,
              int64_t width, const int32_t *labels, int64_t classes,
              float *targets, const MixConfig &config, std::mt19937_64 &rng);

/// Rows [top, bottom) and columns [left, right) of every image in a batch.
struct CutmixBox {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
};

/// timm's rand_bbox: a cut of int(height * sqrt(1 - lambda)) by
/// int(width * sqrt(1 - lambda)) centred at cy = uniformIndex(height), then
/// cx = uniformIndex(width), half-extents cut / 2 (integer division) and
/// clipped to the image. lambda in [0, 1].
CutmixBox cutmixBox(int64_t height, int64_t width, double lambda,
                    std::mt19937_64 &rng);

/// The lambda the box actually gives: 1 - box area / (height * width).
double cutmixLambda(const CutmixBox &box, int64_t height, int64_t width);

/// Mixup pixels: image i becomes lambda * x_i + (1 - lambda) * x_{B-1-i}
/// (in double, rounded once), every pair read before it is written.
void mixupImages(float *images, int64_t batch, int64_t channels, int64_t height,
                 int64_t width, double lambda);

/// CutMix pixels: inside `box`, image i takes image B-1-i's pixels.
void cutmixImages(float *images, int64_t batch, int64_t channels,
                  int64_t height, int64_t width, const CutmixBox &box);

/// Smoothed one-hot targets mixed with the flipped batch, in double and
/// rounded once: with off = smoothing / classes, on = 1 - smoothing + off
/// and y(l) the vector of off with on at class l,
///   target_i = lambda * y(label_i) + (1 - lambda) * y(label_{B-1-i}).
void mixTargets(const int32_t *labels, int64_t batch, int64_t classes,
                double lambda, double smoothing, float *targets);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_AUGMENT_H
