//===- Mixing.h - Mixup and CutMix of whole batches -------------*- C++ -*-===//
//
// timm's Mixup and CutMix on a batch of images [B, C, H, W] and their
// smoothed one-hot targets: image i mixes with image B-1-i.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_MIXING_H
#define LAP_RUNTIME_DATA_MIXING_H

#include <cstdint>
#include <random>

namespace lap::data {

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

#endif // LAP_RUNTIME_DATA_MIXING_H
