//===- MultiCrop.h - DINO's multi-crop views of one image -------*- C++ -*-===//
//
// The views of DINO's DataAugmentationDINO (facebookresearch/dino,
// main_dino.py): a few large "global" crops and many small "local" ones of
// the same image, each flipped, colour-jittered, greyed, blurred and (the
// second global view) solarised at random, then normalised.
//
// Built from Augment.h and under its conventions: every draw comes from the
// caller's std::mt19937_64 through uniform() and uniformIndex(), in the
// order documented below, and bad input throws std::runtime_error naming
// the function before anything is drawn.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_MULTICROP_H
#define LAP_RUNTIME_DATA_MULTICROP_H

#include "runtime/data/Augment.h"
#include "runtime/data/Image.h"

#include <cstdint>
#include <random>
#include <vector>

namespace lap::data {

/// DINO's defaults throughout. Probabilities are in [0, 1]; each coin is
/// "apply iff uniform(0, 1) < p", so 0 never applies and 1 always does
/// (DINO's blur and torchvision's RandomApply compare with <=, which differs
/// only when the draw equals p exactly).
struct MultiCropConfig {
  int64_t globalCrops = 2;     ///< >= 1: views 2 on use view 2's recipe
  int64_t globalSize = 224;    ///< global views are globalSize squared
  double globalMinScale = 0.4; ///< RandomResizedCrop's scale range for
  double globalMaxScale = 1.0; ///< global views, within (0, 1]
  int64_t localCrops = 8;      ///< >= 0
  int64_t localSize = 96;      ///< local views are localSize squared
  double localMinScale = 0.05; ///< the scale range for local views,
  double localMaxScale = 0.4;  ///< within (0, 1]
  /// ColorJitter's strengths, as colorJitterRandomOrder takes them.
  float brightness = 0.4f, contrast = 0.4f, saturation = 0.2f, hue = 0.1f;
  double flipProb = 0.5;       ///< RandomHorizontalFlip
  double jitterProb = 0.8;     ///< RandomApply(ColorJitter)
  double grayscaleProb = 0.2;  ///< RandomGrayscale
  double firstBlurProb = 1.0;  ///< GaussianBlur on global view 1
  double secondBlurProb = 0.1; ///< on global views 2 on
  double localBlurProb = 0.5;  ///< on local views
  double solarizeProb = 0.2;   ///< Solarization, global views 2 on
  double minSigma = 0.1;       ///< blur sigma = uniform(minSigma,
  double maxSigma = 2.0;       ///< maxSigma), 0 < min <= max <= 1000
  /// normalize's statistics, one per channel (ImageNet's by default, for 3
  /// channels); both empty skips normalising.
  std::vector<float> mean = {0.485f, 0.456f, 0.406f};
  std::vector<float> stddev = {0.229f, 0.224f, 0.225f};
};

/// DINO's crops of `image` (pixels in [0, 1], [C, H, W], 1 or 3 channels):
/// globalCrops views of globalSize x globalSize, then localCrops views of
/// localSize x localSize, in that order, each C channels.
///
/// Global view 1 is DINO's global_transfo1, global view 2 its
/// global_transfo2; DINO has exactly two, and any further global views here
/// repeat view 2's recipe. Local views are its local_transfo. Each view
/// makes these draws, in order, and the next view's follow:
///  1. The crop: randomResizedCrop(image, size, rng, minScale, maxScale)
///     with the view's size and scale range and the default ratio range
///     [3/4, 4/3] (its randomResizedCropBox draws). The resize is bilinear,
///     where DINO asks for bicubic.
///  2. Flip coin: horizontalFlip iff uniform(0, 1) < flipProb.
///  3. Jitter coin: iff uniform(0, 1) < jitterProb, colorJitterRandomOrder
///     with the configured strengths, and its draws (none when all four are
///     0).
///  4. Grayscale coin: grayscale iff uniform(0, 1) < grayscaleProb. The coin
///     is drawn for a 1-channel image too, where grayscale changes nothing.
///  5. Blur coin: iff uniform(0, 1) < p, gaussianBlur with sigma =
///     uniform(minSigma, maxSigma), drawn after the coin; p is
///     firstBlurProb for global view 1, secondBlurProb for global views 2
///     on and localBlurProb for local views. (DINO blurs PIL images with
///     ImageFilter.GaussianBlur(radius = sigma); gaussianBlur is the exact
///     Gaussian.)
///  6. Global views 2 on only, solarize coin: solarize (threshold 0.5) iff
///     uniform(0, 1) < solarizeProb.
///  7. normalize(mean, stddev), which draws nothing; skipped when both are
///     empty, leaving pixels in [0, 1].
/// Every coin is drawn whatever its probability. Colour steps work on float
/// pixels, without the 8-bit rounding of DINO's PIL images.
///
/// Throws, naming multiCropViews, on a bad image or config: a count or
/// size below 1 (localCrops may be 0), a scale range not within (0, 1] or
/// with min > max, a strength or probability out of range, or mean and
/// stddev not both empty or both one per channel with stddev nonzero.
std::vector<Image> multiCropViews(const Image &image,
                                  const MultiCropConfig &config,
                                  std::mt19937_64 &rng);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_MULTICROP_H
