//===- AugmentTest.cpp - image augmentations and Mixup / CutMix -----------===//
//
// Every transform runs on images of a few pixels whose results are worked
// out by hand here, or by a plain double-precision routine written in this
// file. Random transforms are checked by replaying the draws the header
// documents on a copy of the generator.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Augment.h"
#include "runtime/data/MultiCrop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace lap::data;

namespace {

/// The header's uniform draw, written out: 53 random bits in [0, 1).
double unit(uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

Image makeImage(int64_t c, int64_t h, int64_t w, std::vector<float> pixels) {
  Image image(c, h, w);
  EXPECT_EQ(pixels.size(), image.pixels.size());
  image.pixels = std::move(pixels);
  return image;
}

Image randomImage(int64_t c, int64_t h, int64_t w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Image image(c, h, w);
  for (float &p : image.pixels)
    p = float(unit(rng()));
  return image;
}

/// Pixel 0 of every image is its index, so values say where they came from.
Image iotaImage(int64_t c, int64_t h, int64_t w) {
  Image image(c, h, w);
  std::iota(image.pixels.begin(), image.pixels.end(), 0.0f);
  return image;
}

void expectNear(const Image &actual, const Image &expected, double tolerance) {
  ASSERT_EQ(actual.channels, expected.channels);
  ASSERT_EQ(actual.height, expected.height);
  ASSERT_EQ(actual.width, expected.width);
  ASSERT_EQ(actual.pixels.size(), expected.pixels.size());
  for (size_t i = 0; i < actual.pixels.size(); ++i)
    EXPECT_NEAR(actual.pixels[i], expected.pixels[i], tolerance)
        << "pixel " << i;
}

/// PyTorch's bilinear, align_corners=False, straight from its definition.
double bilinearAt(const Image &in, int64_t c, int64_t outH, int64_t outW,
                  int64_t y, int64_t x) {
  auto source = [](int64_t d, int64_t inLen, int64_t outLen) {
    double s = (d + 0.5) * double(inLen) / double(outLen) - 0.5;
    return s < 0 ? 0.0 : s;
  };
  double sy = source(y, in.height, outH), sx = source(x, in.width, outW);
  int64_t y0 = int64_t(std::floor(sy)), x0 = int64_t(std::floor(sx));
  int64_t y1 = y0 + 1 < in.height ? y0 + 1 : in.height - 1;
  int64_t x1 = x0 + 1 < in.width ? x0 + 1 : in.width - 1;
  double fy = sy - y0, fx = sx - x0;
  return (1 - fy) * (1 - fx) * in.at(c, y0, x0) +
         (1 - fy) * fx * in.at(c, y0, x1) + fy * (1 - fx) * in.at(c, y1, x0) +
         fy * fx * in.at(c, y1, x1);
}

Image cropByHand(const Image &in, const CropBox &box) {
  Image out(in.channels, box.height, box.width);
  for (int64_t c = 0; c < in.channels; ++c)
    for (int64_t y = 0; y < box.height; ++y)
      for (int64_t x = 0; x < box.width; ++x)
        out.at(c, y, x) = in.at(c, box.top + y, box.left + x);
  return out;
}

/// The normalised Gaussian of radius ceil(3 sigma), index i + radius.
std::vector<double> gaussianKernel(double sigma) {
  int radius = int(std::ceil(3 * sigma));
  std::vector<double> k;
  double sum = 0;
  for (int i = -radius; i <= radius; ++i) {
    k.push_back(std::exp(-i * i / (2 * sigma * sigma)));
    sum += k.back();
  }
  for (double &v : k)
    v /= sum;
  return k;
}

//===----------------------------------------------------------------------===//
// Draws
//===----------------------------------------------------------------------===//

TEST(AugmentDraws, UniformAndIndexAreTheDocumentedFormulas) {
  std::mt19937_64 rng(7), replay(7);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(uniform(rng, 2, 5), 2 + 3 * unit(replay()));
    EXPECT_EQ(uniformIndex(rng, 7), int64_t(replay() % 7));
  }
  EXPECT_EQ(uniform(rng, 1.5, 1.5), 1.5);
  EXPECT_THROW(uniformIndex(rng, 0), std::runtime_error);
}

// Sample moments over 20,000 draws against mean a / (a + b) and variance
// ab / ((a + b)^2 (a + b + 1)). Tolerances: 5 standard errors of the mean;
// 0.01 for the variance, over 5 standard errors since (x - mean)^2 <= 1.
TEST(AugmentDraws, BetaHasTheRightMoments) {
  std::mt19937_64 rng(11);
  const int n = 20000;
  for (auto [a, b] : std::vector<std::pair<double, double>>{
           {0.2, 0.2}, {0.8, 0.8}, {1, 1}, {2, 5}, {5, 2}}) {
    double sum = 0, sumSq = 0;
    for (int i = 0; i < n; ++i) {
      double x = sampleBeta(rng, a, b);
      ASSERT_GE(x, 0);
      ASSERT_LE(x, 1);
      sum += x;
      sumSq += x * x;
    }
    double mean = sum / n, var = sumSq / n - mean * mean;
    double wantMean = a / (a + b);
    double wantVar = a * b / ((a + b) * (a + b) * (a + b + 1));
    EXPECT_NEAR(mean, wantMean, 5 * std::sqrt(wantVar / n)) << a << "," << b;
    EXPECT_NEAR(var, wantVar, 0.01) << a << "," << b;
  }
}

TEST(AugmentDraws, BetaWithTinyShapesStaysInRange) {
  // Beta(0.01, 0.01) puts almost all mass at the ends; X and Y underflow as
  // plain doubles, which must not turn into NaN.
  std::mt19937_64 rng(3);
  int low = 0, high = 0;
  for (int i = 0; i < 1000; ++i) {
    double x = sampleBeta(rng, 0.01, 0.01);
    ASSERT_TRUE(x >= 0 && x <= 1) << x;
    low += x < 0.01;
    high += x > 0.99;
  }
  EXPECT_GT(low, 400);
  EXPECT_GT(high, 400);
  EXPECT_THROW(sampleBeta(rng, 0, 1), std::runtime_error);
  EXPECT_THROW(sampleBeta(rng, 1, -1), std::runtime_error);
}

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

TEST(AugmentResize, SameSizeIsTheIdentity) {
  Image image = randomImage(3, 4, 5, 1);
  expectNear(resize(image, 4, 5), image, 0);
}

TEST(AugmentResize, TwoByTwoToFourByFourByHand) {
  // Source coordinates (d + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25,
  // 0.75, 1.25 (reads 1 and its clamped neighbour 1): weights 0, .25, .75,
  // 1 between the two rows and columns of [[0, 1], [2, 3]].
  Image image = makeImage(1, 2, 2, {0, 1, 2, 3});
  Image want = makeImage(1, 4, 4,
                         {0.0f, 0.25f, 0.75f, 1.0f, //
                          0.5f, 0.75f, 1.25f, 1.5f, //
                          1.5f, 1.75f, 2.25f, 2.5f, //
                          2.0f, 2.25f, 2.75f, 3.0f});
  expectNear(resize(image, 4, 4), want, 1e-7); // exact in binary; slack 1e-7
}

TEST(AugmentResize, HalvingAveragesPairs) {
  // Source coordinates 0.5 and 2.5: the means of pixels 0,1 and 2,3.
  Image image = makeImage(1, 1, 4, {0, 1, 2, 3});
  expectNear(resize(image, 1, 2), makeImage(1, 1, 2, {0.5f, 2.5f}), 1e-7);
}

// Tolerance 1e-6: float pixels, interpolation done in double on both sides.
TEST(AugmentResize, MatchesTheDefinition) {
  Image image = randomImage(2, 3, 5, 2);
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{
           {7, 4}, {2, 9}, {1, 1}, {6, 10}}) {
    Image out = resize(image, h, w);
    ASSERT_EQ(out.channels, 2);
    ASSERT_EQ(out.height, h);
    ASSERT_EQ(out.width, w);
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          EXPECT_NEAR(out.at(c, y, x), bilinearAt(image, c, h, w, y, x), 1e-6);
  }
}

TEST(AugmentResize, RefusesBadInput) {
  Image image = randomImage(1, 2, 2, 3);
  EXPECT_THROW(resize(image, 0, 2), std::runtime_error);
  EXPECT_THROW(resize(image, 2, -1), std::runtime_error);
  image.pixels.pop_back();
  EXPECT_THROW(resize(image, 2, 2), std::runtime_error);
  EXPECT_THROW(resize(Image(), 2, 2), std::runtime_error);
}

TEST(AugmentEval, ResizeShorterKeepsTheAspectRatio) {
  struct Case {
    int64_t h, w, shorter, wantH, wantW;
  };
  for (Case c : {Case{2, 3, 4, 4, 6}, Case{3, 2, 4, 6, 4},
                 Case{3, 5, 4, 4, 6}, // 4 * 5 / 3 = 6.67, truncated
                 Case{7, 3, 2, 4, 2}, // 2 * 7 / 3 = 4.67, truncated
                 Case{3, 3, 4, 4, 4}}) {
    Image image = randomImage(2, c.h, c.w, 4);
    Image out = resizeShorter(image, c.shorter);
    EXPECT_EQ(out.height, c.wantH);
    EXPECT_EQ(out.width, c.wantW);
    expectNear(out, resize(image, c.wantH, c.wantW), 0);
  }
  EXPECT_THROW(resizeShorter(randomImage(1, 2, 2, 4), 0), std::runtime_error);
}

TEST(AugmentEval, CenterCropRoundsOffsetsHalfToEven) {
  // 4x5, crop 2: top = round(1) = 1, left = round(1.5) = 2.
  Image a = iotaImage(1, 4, 5);
  expectNear(centerCrop(a, 2), makeImage(1, 2, 2, {7, 8, 12, 13}), 0);
  // 6x4, crop 3: top = round(1.5) = 2, left = round(0.5) = 0.
  Image b = iotaImage(2, 6, 4);
  expectNear(centerCrop(b, 3),
             makeImage(2, 3, 3,
                       {8, 9, 10, 12, 13, 14, 16, 17, 18, //
                        32, 33, 34, 36, 37, 38, 40, 41, 42}),
             0);
  // The whole image, and a crop that does not fit.
  expectNear(centerCrop(a, 4), cropByHand(a, {0, 0, 4, 4}), 0);
  EXPECT_THROW(centerCrop(a, 5), std::runtime_error);
  EXPECT_THROW(centerCrop(a, 0), std::runtime_error);
}

TEST(AugmentGeometry, HorizontalFlipMirrorsRows) {
  Image image = iotaImage(2, 2, 3);
  horizontalFlip(image);
  expectNear(image, makeImage(2, 2, 3, {2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9}),
             0);
}

TEST(AugmentGeometry, RandomResizedCropHasTheRequestedSize) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20; ++i) {
    Image out = randomResizedCrop(randomImage(3, 7, 5, i), 4, rng);
    EXPECT_EQ(out.channels, 3);
    EXPECT_EQ(out.height, 4);
    EXPECT_EQ(out.width, 4);
  }
}

TEST(AugmentGeometry, FullScaleSquareCropIsTheIdentity) {
  std::mt19937_64 rng(6);
  Image image = randomImage(3, 6, 6, 6);
  expectNear(randomResizedCrop(image, 6, rng, 1, 1, 1, 1), image, 1e-6);
}

TEST(AugmentGeometry, RandomResizedCropBoxReplaysItsDraws) {
  // Scale 0.25 and ratio 1 on 10x10 ask for 5x5 at the first attempt: two
  // draws for scale and ratio, then top and left uniform in [0, 6).
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    CropBox box = randomResizedCropBox(10, 10, rng, 0.25, 0.25, 1, 1);
    replay.discard(2);
    int64_t top = int64_t(replay() % 6), left = int64_t(replay() % 6);
    EXPECT_EQ(box.height, 5);
    EXPECT_EQ(box.width, 5);
    EXPECT_EQ(box.top, top);
    EXPECT_EQ(box.left, left);
    EXPECT_EQ(rng(), replay());
  }
}

TEST(AugmentGeometry, RandomResizedCropFallsBackToTheCentre) {
  // No w x h of area >= 0.9 * 1000 with ratio in [3/4, 4/3] fits 10 rows, so
  // all 10 attempts fail; the crop is the centre narrowed to ratio 4/3:
  // w = round(10 * 4/3) = 13, left = (100 - 13) / 2 = 43.
  std::mt19937_64 rng(8);
  CropBox wide = randomResizedCropBox(10, 100, rng, 0.9, 1.0);
  EXPECT_EQ(wide.top, 0);
  EXPECT_EQ(wide.left, 43);
  EXPECT_EQ(wide.height, 10);
  EXPECT_EQ(wide.width, 13);
  // Tall: h = round(10 / (3/4)) = 13, top = 43.
  CropBox tall = randomResizedCropBox(100, 10, rng, 0.9, 1.0);
  EXPECT_EQ(tall.top, 43);
  EXPECT_EQ(tall.left, 0);
  EXPECT_EQ(tall.height, 13);
  EXPECT_EQ(tall.width, 10);
}

TEST(AugmentGeometry, RandomResizedCropResizesItsBox) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Image image = randomImage(3, 9, 12, seed);
    std::mt19937_64 rng(seed), replay(seed);
    CropBox box = randomResizedCropBox(9, 12, replay);
    EXPECT_GE(box.top, 0);
    EXPECT_GE(box.left, 0);
    EXPECT_GE(box.height, 1);
    EXPECT_GE(box.width, 1);
    EXPECT_LE(box.top + box.height, 9);
    EXPECT_LE(box.left + box.width, 12);
    expectNear(randomResizedCrop(image, 5, rng),
               resize(cropByHand(image, box), 5, 5), 0);
  }
  std::mt19937_64 rng(0);
  EXPECT_THROW(randomResizedCropBox(4, 4, rng, 0.5, 0.4), std::runtime_error);
  EXPECT_THROW(randomResizedCropBox(4, 4, rng, 0.5, 1, 0, 1),
               std::runtime_error);
  EXPECT_THROW(randomResizedCrop(randomImage(1, 4, 4, 0), 0, rng),
               std::runtime_error);
}

//===----------------------------------------------------------------------===//
// Colour
//===----------------------------------------------------------------------===//

TEST(AugmentColour, GrayscaleUsesRec601Weights) {
  // (1, 0, 0) -> 0.299; (0.2, 0.4, 0.6) -> 0.0598 + 0.2348 + 0.0684 = 0.363.
  Image image = makeImage(3, 1, 2, {1.0f, 0.2f, 0.0f, 0.4f, 0.0f, 0.6f});
  grayscale(image);
  expectNear(
      image,
      makeImage(3, 1, 2, {0.299f, 0.363f, 0.299f, 0.363f, 0.299f, 0.363f}),
      1e-6); // float inputs 0.2, 0.4, 0.6 are off by < 1e-7
  Image gray = makeImage(1, 1, 2, {0.3f, 0.7f});
  grayscale(gray);
  expectNear(gray, makeImage(1, 1, 2, {0.3f, 0.7f}), 0);
  Image two(2, 1, 1);
  EXPECT_THROW(grayscale(two), std::runtime_error);
}

TEST(AugmentColour, SolarizeInvertsFromTheThreshold) {
  Image image = makeImage(1, 1, 5, {0, 0.25f, 0.5f, 0.75f, 1});
  solarize(image);
  expectNear(image, makeImage(1, 1, 5, {0, 0.25f, 0.5f, 0.25f, 0}), 0);
  Image bytes = makeImage(1, 1, 2, {127 / 255.0f, 128 / 255.0f});
  solarize(bytes);
  expectNear(bytes, makeImage(1, 1, 2, {127 / 255.0f, 1 - 128 / 255.0f}), 0);
  Image low = makeImage(1, 1, 2, {0.25f, 0.3f});
  solarize(low, 0.3f);
  expectNear(low, makeImage(1, 1, 2, {0.25f, 0.7f}), 1e-7);
}

// Tolerance 1e-6: weights sum to 1 in double; results are rounded to float.
TEST(AugmentColour, BlurKeepsAConstantImage) {
  Image image(3, 4, 5, 0.375f);
  gaussianBlur(image, 2.0); // radius 6: every tap folds back, some twice
  expectNear(image, Image(3, 4, 5, 0.375f), 1e-6);
}

TEST(AugmentColour, BlurOfAnImpulseIsTheKernel) {
  // sigma 1: radius 3 around the centre of 9x9 never reaches an edge.
  Image image(1, 9, 9);
  image.at(0, 4, 4) = 1;
  gaussianBlur(image, 1.0);
  std::vector<double> k = gaussianKernel(1.0);
  for (int64_t y = 0; y < 9; ++y)
    for (int64_t x = 0; x < 9; ++x) {
      double ky = std::abs(y - 4) <= 3 ? k[size_t(y - 4 + 3)] : 0;
      double kx = std::abs(x - 4) <= 3 ? k[size_t(x - 4 + 3)] : 0;
      EXPECT_NEAR(image.at(0, y, x), ky * kx, 1e-7) << y << "," << x;
    }
}

TEST(AugmentColour, BlurReflectsAtTheEdges) {
  // One row of 5 with an impulse at 1, radius 3. Index 1 is read directly
  // and through its reflections -1 and 7 (past the end 5 reads 3, 6 reads
  // 2, 7 reads 1): out[x] sums k(1 - x), k(-1 - x) and k(7 - x) over the
  // offsets within 3. A single row blurs vertically into itself.
  Image image = makeImage(1, 1, 5, {0, 1, 0, 0, 0});
  gaussianBlur(image, 1.0);
  std::vector<double> k = gaussianKernel(1.0); // k[3 + i] = weight of i
  std::vector<double> want = {2 * k[4], k[3] + k[5], k[4] + k[6], k[5],
                              2 * k[6]};
  for (int64_t x = 0; x < 5; ++x)
    EXPECT_NEAR(image.at(0, 0, x), want[size_t(x)], 1e-7) << x;
  EXPECT_THROW(gaussianBlur(image, 0), std::runtime_error);
  EXPECT_THROW(gaussianBlur(image, std::nan("")), std::runtime_error);
}

TEST(AugmentColour, ThreeAugmentAppliesExactlyOneOfThree) {
  Image image = randomImage(3, 5, 6, 9);
  Image gray = image, solar = image;
  grayscale(gray);
  solarize(solar);
  int seen[3] = {0, 0, 0};
  for (uint64_t seed = 0; seed < 60; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    replay.discard(1); // the choice; blur's sigma is the next draw
    Image blur = image;
    gaussianBlur(blur, 0.1 + 1.9 * unit(replay()));
    Image out = image;
    threeAugment(out, rng);
    bool matches[3] = {out.pixels == gray.pixels, out.pixels == solar.pixels,
                       out.pixels == blur.pixels};
    ASSERT_EQ(matches[0] + matches[1] + matches[2], 1) << "seed " << seed;
    for (int i = 0; i < 3; ++i)
      seen[i] += matches[i];
  }
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
}

TEST(AugmentColour, JitterOfZeroIsTheIdentityAndDrawsNothing) {
  Image image = randomImage(3, 3, 4, 10);
  Image out = image;
  std::mt19937_64 rng(12), untouched(12);
  colorJitter(out, 0, 0, 0, rng);
  expectNear(out, image, 0);
  EXPECT_EQ(rng(), untouched());
}

// Tolerance 1e-6: the factor is replayed exactly; the rest is double maths
// rounded to float on both sides.
TEST(AugmentColour, BrightnessScalesAndClamps) {
  Image image = makeImage(1, 2, 2, {0.0f, 0.25f, 0.5f, 0.95f});
  for (uint64_t seed = 0; seed < 10; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    double f = (1 - double(0.4f)) + 2 * double(0.4f) * unit(replay());
    Image out = image;
    colorJitter(out, 0.4f, 0, 0, rng);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(out.pixels[i], std::min(1.0, f * image.pixels[i]), 1e-6);
  }
}

TEST(AugmentColour, ContrastBlendsWithTheMeanLuma) {
  // Lumas 0.299 and 0.363 (see grayscale): mean m = 0.331.
  Image image = makeImage(3, 1, 2, {1.0f, 0.2f, 0.0f, 0.4f, 0.0f, 0.6f});
  std::mt19937_64 rng(4), replay(4);
  double f = (1 - double(0.75f)) + 2 * double(0.75f) * unit(replay());
  colorJitter(image, 0, 0.75f, 0, rng);
  const double in[6] = {1.0, 0.2, 0.0, 0.4, 0.0, 0.6};
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(image.pixels[i],
                std::clamp(f * in[i] + (1 - f) * 0.331, 0.0, 1.0), 1e-6);
}

TEST(AugmentColour, SaturationBlendsWithEachPixelsLuma) {
  const double in[6] = {1.0, 0.2, 0.0, 0.4, 0.0, 0.6};
  const double luma[2] = {0.299, 0.363};
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Image image = makeImage(3, 1, 2, {1.0f, 0.2f, 0.0f, 0.4f, 0.0f, 0.6f});
    std::mt19937_64 rng(seed), replay(seed);
    double f = 0 + 2 * double(1.0f) * unit(replay()); // max(0, 1 - 1) = 0
    colorJitter(image, 0, 0, 1.0f, rng);
    for (size_t i = 0; i < 6; ++i)
      EXPECT_NEAR(image.pixels[i],
                  std::clamp(f * in[i] + (1 - f) * luma[i % 2], 0.0, 1.0),
                  1e-6);
  }
  // One channel has no saturation to change.
  Image gray = makeImage(1, 1, 2, {0.3f, 0.7f});
  std::mt19937_64 rng(1);
  colorJitter(gray, 0, 0, 0.5f, rng);
  expectNear(gray, makeImage(1, 1, 2, {0.3f, 0.7f}), 0);
  EXPECT_THROW(colorJitter(gray, -0.1f, 0, 0, rng), std::runtime_error);
}

TEST(AugmentColour, NormalizePerChannel) {
  Image image = makeImage(2, 1, 2, {0.0f, 1.0f, 0.25f, 0.75f});
  normalize(image, {0.5f, 0.25f}, {0.5f, 2.0f});
  expectNear(image, makeImage(2, 1, 2, {-1.0f, 1.0f, 0.0f, 0.25f}), 0);
  EXPECT_THROW(normalize(image, {0.5f}, {0.5f, 2.0f}), std::runtime_error);
  EXPECT_THROW(normalize(image, {0.5f, 0.5f}, {0.5f, 0.0f}),
               std::runtime_error);
}

/// Textbook HSV (hue in degrees through chroma C = max - min and
/// X = C (1 - |H' mod 2 - 1|)), written apart from the library's
/// torchvision-shaped formulas: the pixel's hue moved by `shift` turns.
std::vector<double> hueShiftedByHand(double r, double g, double b,
                                     double shift) {
  double v = std::max({r, g, b}), c = v - std::min({r, g, b});
  double s = v == 0 ? 0 : c / v;
  double degrees = 0;
  if (c > 0) {
    if (v == r)
      degrees = 60 * std::fmod((g - b) / c + 6, 6.0);
    else if (v == g)
      degrees = 60 * ((b - r) / c + 2);
    else
      degrees = 60 * ((r - g) / c + 4);
  }
  double turns = degrees / 360 + shift;
  turns -= std::floor(turns);
  double h6 = turns * 6, chroma = v * s;
  double x = chroma * (1 - std::fabs(std::fmod(h6, 2.0) - 1));
  double m = v - chroma;
  switch (int(std::floor(h6)) % 6) {
  case 0:
    return {chroma + m, x + m, m};
  case 1:
    return {x + m, chroma + m, m};
  case 2:
    return {m, chroma + m, x + m};
  case 3:
    return {m, x + m, chroma + m};
  case 4:
    return {x + m, m, chroma + m};
  default:
    return {chroma + m, m, x + m};
  }
}

/// Expects `run` to throw std::runtime_error whose message starts with
/// "<function>: ".
template <class F> void expectRefusal(F run, const std::string &function) {
  try {
    run();
    ADD_FAILURE() << "no exception, expected one from " << function;
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()).rfind(function + ": ", 0), 0u) << e.what();
  }
}

TEST(AugmentColour, HueShiftsPrimariesByHand) {
  // Red (hue 0) by 1/3 turn is green, by -1/3 is blue; orange (1, 0.5, 0),
  // hue 30 degrees, by half a turn is 210 degrees: (0, 0.5, 1). Grey and
  // black pixels have no hue and stay.
  Image image = makeImage(3, 1, 4,
                          {1.0f, 1.0f, 0.5f, 0.0f,   //
                           0.0f, 0.5f, 0.5f, 0.0f,   //
                           0.0f, 0.0f, 0.5f, 0.0f}); // red, orange, grey, black
  Image third = image;
  adjustHue(third, 1.0 / 3);
  expectNear(third,
             makeImage(3, 1, 4,
                       {0.0f, 0.0f, 0.5f, 0.0f, //
                        1.0f, 1.0f, 0.5f, 0.0f, //
                        0.0f, 0.5f, 0.5f, 0.0f}),
             1e-6);
  Image back = image;
  adjustHue(back, -1.0 / 3);
  expectNear(back,
             makeImage(3, 1, 4,
                       {0.0f, 0.5f, 0.5f, 0.0f, //
                        0.0f, 0.0f, 0.5f, 0.0f, //
                        1.0f, 1.0f, 0.5f, 0.0f}),
             1e-6);
  Image half = image;
  adjustHue(half, 0.5);
  expectNear(half,
             makeImage(3, 1, 4,
                       {0.0f, 0.0f, 0.5f, 0.0f, //
                        1.0f, 0.5f, 0.5f, 0.0f, //
                        1.0f, 1.0f, 0.5f, 0.0f}),
             1e-6);
}

// Tolerance 1e-6: both sides work in double from the same float pixels.
TEST(AugmentColour, HueMatchesTextbookHsv) {
  Image image = randomImage(3, 5, 6, 13);
  for (double shift : {-0.5, -0.3, -0.01, 0.0, 0.1, 0.25, 0.5}) {
    Image out = image;
    adjustHue(out, shift);
    int64_t plane = 30;
    for (int64_t i = 0; i < plane; ++i) {
      std::vector<double> want = hueShiftedByHand(
          image.pixels[size_t(i)], image.pixels[size_t(plane + i)],
          image.pixels[size_t(2 * plane + i)], shift);
      for (int64_t c = 0; c < 3; ++c)
        EXPECT_NEAR(out.pixels[size_t(c * plane + i)], want[size_t(c)], 1e-6)
            << "shift " << shift << " pixel " << i << " channel " << c;
    }
  }
  Image same = image;
  adjustHue(same, 0);
  expectNear(same, image, 1e-6);
}

TEST(AugmentColour, HueLeavesOneChannelAndRefusesBadShifts) {
  Image gray = makeImage(1, 1, 3, {0.1f, 0.5f, 0.9f});
  adjustHue(gray, 0.3);
  expectNear(gray, makeImage(1, 1, 3, {0.1f, 0.5f, 0.9f}), 0);
  expectRefusal([&] { adjustHue(gray, 0.6); }, "adjustHue");
  expectRefusal([&] { adjustHue(gray, std::nan("")); }, "adjustHue");
  Image two(2, 1, 1);
  expectRefusal([&] { adjustHue(two, 0.1); }, "adjustHue");
}

TEST(AugmentColour, AdjustStepsAreColorJittersSteps) {
  // colorJitter with one strength is that adjust step with the drawn factor.
  Image image = randomImage(3, 4, 4, 14);
  for (int step = 0; step < 3; ++step) {
    std::mt19937_64 rng(step), replay(step);
    double f = 0.5 + 1.0 * unit(replay()); // strength 0.5: [0.5, 1.5)
    Image jittered = image, adjusted = image;
    colorJitter(jittered, step == 0 ? 0.5f : 0, step == 1 ? 0.5f : 0,
                step == 2 ? 0.5f : 0, rng);
    if (step == 0)
      adjustBrightness(adjusted, f);
    else if (step == 1)
      adjustContrast(adjusted, f);
    else
      adjustSaturation(adjusted, f);
    expectNear(jittered, adjusted, 0);
  }
  // Saturation 0 is the luma image; contrast 0 the mean luma everywhere.
  Image pixels = makeImage(3, 1, 2, {1.0f, 0.2f, 0.0f, 0.4f, 0.0f, 0.6f});
  Image grey = pixels;
  adjustSaturation(grey, 0);
  expectNear(
      grey,
      makeImage(3, 1, 2, {0.299f, 0.363f, 0.299f, 0.363f, 0.299f, 0.363f}),
      1e-6);
  adjustContrast(pixels, 0);
  expectNear(pixels, Image(3, 1, 2, 0.331f), 1e-6);
  expectRefusal([&] { adjustBrightness(pixels, -1); }, "adjustBrightness");
  expectRefusal([&] { adjustContrast(pixels, INFINITY); }, "adjustContrast");
}

TEST(AugmentColour, RandomOrderJitterOfZeroIsTheIdentityAndDrawsNothing) {
  Image image = randomImage(3, 3, 4, 15);
  Image out = image;
  std::mt19937_64 rng(16), untouched(16);
  colorJitterRandomOrder(out, 0, 0, 0, 0, rng);
  expectNear(out, image, 0);
  EXPECT_EQ(rng(), untouched());
}

/// colorJitterRandomOrder's documented draws replayed: the Fisher-Yates
/// order, then the factors of the enabled steps, then the steps in order.
std::vector<int> replayRandomOrderJitter(Image &image, float b, float c,
                                         float s, float h,
                                         std::mt19937_64 &replay) {
  std::vector<int> order = {0, 1, 2, 3};
  for (uint64_t i = 3; i >= 1; --i)
    std::swap(order[i], order[replay() % (i + 1)]);
  auto factor = [&](double v) {
    return v > 0 ? std::max(0.0, 1 - v) +
                       (1 + v - std::max(0.0, 1 - v)) * unit(replay())
                 : 1.0;
  };
  double fb = factor(b), fc = factor(c), fs = factor(s);
  double shift = h > 0 ? -double(h) + 2 * double(h) * unit(replay()) : 0;
  for (int step : order) {
    if (step == 0 && b > 0)
      adjustBrightness(image, fb);
    if (step == 1 && c > 0)
      adjustContrast(image, fc);
    if (step == 2 && s > 0)
      adjustSaturation(image, fs);
    if (step == 3 && h > 0)
      adjustHue(image, shift);
  }
  return order;
}

TEST(AugmentColour, RandomOrderJitterReplaysItsDraws) {
  Image image = randomImage(3, 4, 5, 17);
  std::vector<std::vector<int>> orders;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    Image out = image, want = image;
    colorJitterRandomOrder(out, 0.4f, 0.4f, 0.2f, 0.1f, rng);
    orders.push_back(
        replayRandomOrderJitter(want, 0.4f, 0.4f, 0.2f, 0.1f, replay));
    expectNear(out, want, 0);
    EXPECT_EQ(rng(), replay()) << "seed " << seed;
  }
  std::sort(orders.begin(), orders.end());
  int64_t distinct = std::unique(orders.begin(), orders.end()) - orders.begin();
  EXPECT_GE(distinct, 10); // of 24; 40 seeds miss many with tiny odds

  // Only some steps enabled: all three order draws, then only their factors.
  for (uint64_t seed = 0; seed < 10; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    Image out = image, want = image;
    colorJitterRandomOrder(out, 0, 0.3f, 0, 0.2f, rng);
    replayRandomOrderJitter(want, 0, 0.3f, 0, 0.2f, replay);
    expectNear(out, want, 0);
    EXPECT_EQ(rng(), replay());
  }
}

TEST(AugmentColour, RandomOrderJitterIsReproducibleAndOrderMatters) {
  Image image = randomImage(3, 6, 6, 18);
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    Image out = image;
    colorJitterRandomOrder(out, 0.4f, 0.4f, 0.2f, 0.1f, rng);
    return out.pixels;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));

  // The same factors in two orders give two images: brightness 1.3 then
  // contrast 0.5 against contrast then brightness. Both are linear, so only
  // brightness's clamp of the pixels above 1 / 1.3 tells them apart.
  Image a = image, b = image;
  adjustBrightness(a, 1.3);
  adjustContrast(a, 0.5);
  adjustContrast(b, 0.5);
  adjustBrightness(b, 1.3);
  EXPECT_NE(a.pixels, b.pixels);
}

TEST(AugmentColour, RandomOrderJitterOnOneChannel) {
  // Hue and saturation leave grey alone but still draw their factors.
  Image gray = makeImage(1, 1, 3, {0.1f, 0.5f, 0.9f});
  std::mt19937_64 rng(19), replay(19);
  colorJitterRandomOrder(gray, 0, 0, 0.5f, 0.3f, rng);
  expectNear(gray, makeImage(1, 1, 3, {0.1f, 0.5f, 0.9f}), 0);
  replay.discard(3 + 2);
  EXPECT_EQ(rng(), replay());
  expectRefusal([&] { colorJitterRandomOrder(gray, 0, 0, 0, 0.6f, rng); },
                "colorJitterRandomOrder");
  expectRefusal([&] { colorJitterRandomOrder(gray, -1, 0, 0, 0, rng); },
                "colorJitterRandomOrder");
  Image two(2, 1, 1);
  expectRefusal([&] { colorJitterRandomOrder(two, 0.1f, 0, 0, 0, rng); },
                "colorJitterRandomOrder");
}

//===----------------------------------------------------------------------===//
// Mixup / CutMix
//===----------------------------------------------------------------------===//

/// A batch whose sample b is the constant b + 1, so a pixel's value names
/// the sample it came from.
std::vector<float> constantBatch(int64_t batch, int64_t count) {
  std::vector<float> images(size_t(batch * count));
  for (int64_t b = 0; b < batch; ++b)
    std::fill_n(images.begin() + b * count, count, float(b + 1));
  return images;
}

TEST(AugmentMix, SmoothingOnlyWhenMixingIsOff) {
  // off = 0.1 / 5 = 0.02, on = 1 - 0.1 + 0.02 = 0.92.
  const int32_t labels[3] = {4, 0, 2};
  for (MixConfig config :
       {MixConfig{0, 0, 0.5, 1, 0.1}, MixConfig{0.8, 1, 0.5, 0, 0.1}}) {
    std::vector<float> images = constantBatch(3, 4), before = images;
    std::vector<float> targets(15);
    std::mt19937_64 rng(1), untouched(1);
    mixBatch(images.data(), 3, 1, 2, 2, labels, 5, targets.data(), config, rng);
    EXPECT_EQ(images, before);
    EXPECT_EQ(rng(), untouched());
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t k = 0; k < 5; ++k)
        EXPECT_EQ(targets[size_t(i * 5 + k)],
                  k == labels[i] ? float(0.92) : float(0.02));
  }
}

TEST(AugmentMix, TargetRowsSumToOne) {
  const int32_t labels[4] = {0, 1, 2, 1};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> images = constantBatch(4, 3 * 4 * 4);
    std::vector<float> targets(4 * 3);
    std::mt19937_64 rng(seed);
    mixBatch(images.data(), 4, 3, 4, 4, labels, 3, targets.data(), MixConfig{},
             rng);
    for (int64_t i = 0; i < 4; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < 3; ++k)
        sum += targets[size_t(i * 3 + k)];
      EXPECT_NEAR(sum, 1.0, 1e-6); // three float roundings
    }
  }
}

TEST(AugmentMix, MixupWithAFixedLambda) {
  // Batch 3: sample 0 pairs with 2 and the middle one with itself.
  std::vector<float> images = {0.0f, 1.0f, 0.5f, 0.25f, 0.2f, 0.6f};
  mixupImages(images.data(), 3, 1, 1, 2, 0.3);
  std::vector<float> want = {float(0.3 * 0.0 + 0.7 * double(0.2f)),
                             float(0.3 * 1.0 + 0.7 * double(0.6f)),
                             0.5f,
                             0.25f,
                             float(0.3 * double(0.2f) + 0.7 * 0.0),
                             float(0.3 * double(0.6f) + 0.7 * 1.0)};
  EXPECT_EQ(images, want); // the same double expression, rounded once

  // off = 0.025, on = 0.925; sample 0: 0.3 of class 1 and 0.7 of class 2.
  const int32_t labels[3] = {1, 3, 2};
  std::vector<float> targets(12);
  mixTargets(labels, 3, 4, 0.3, 0.1, targets.data());
  const double wantTargets[12] = {0.025, 0.295, 0.655, 0.025, //
                                  0.025, 0.025, 0.025, 0.925, //
                                  0.025, 0.655, 0.295, 0.025};
  for (size_t i = 0; i < 12; ++i)
    EXPECT_NEAR(targets[i], wantTargets[i], 1e-7) << i; // float rounding
}

TEST(AugmentMix, CutmixBoxReplaysItsDraws) {
  // lambda 0.75 on 8x6: cuts int(8 * 0.5) = 4 by int(6 * 0.5) = 3, half
  // extents 2 and 1, around cy = r1 % 8 and cx = r2 % 6.
  for (uint64_t seed = 0; seed < 30; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    CutmixBox box = cutmixBox(8, 6, 0.75, rng);
    int64_t cy = int64_t(replay() % 8), cx = int64_t(replay() % 6);
    EXPECT_EQ(box.top, std::max<int64_t>(cy - 2, 0));
    EXPECT_EQ(box.bottom, std::min<int64_t>(cy + 2, 8));
    EXPECT_EQ(box.left, std::max<int64_t>(cx - 1, 0));
    EXPECT_EQ(box.right, std::min<int64_t>(cx + 1, 6));
    double area = double((box.bottom - box.top) * (box.right - box.left));
    EXPECT_DOUBLE_EQ(cutmixLambda(box, 8, 6), 1 - area / 48);
  }
  EXPECT_DOUBLE_EQ(cutmixLambda({0, 0, 0, 0}, 8, 6), 1.0);
  std::mt19937_64 rng(0);
  EXPECT_THROW(cutmixBox(8, 6, 1.5, rng), std::runtime_error);
  EXPECT_THROW(cutmixLambda({2, 9, 0, 1}, 8, 6), std::runtime_error);
}

TEST(AugmentMix, CutmixImagesSwapsTheBox) {
  std::vector<float> images = constantBatch(2, 2 * 3 * 4);
  CutmixBox box{1, 3, 0, 2};
  cutmixImages(images.data(), 2, 2, 3, 4, box);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < 3; ++y)
        for (int64_t x = 0; x < 4; ++x) {
          bool inside = y >= 1 && y < 3 && x < 2;
          float want = float(inside ? 2 - b : b + 1);
          EXPECT_EQ(images[size_t(((b * 2 + c) * 3 + y) * 4 + x)], want);
        }
}

// Recovers lambda from the targets, (t[own] - off) / (on - off), and checks
// the pixels against it. Tolerance 1e-6 (float targets and pixels).
TEST(AugmentMix, BatchPixelsAgreeWithTheTargetLambda) {
  const int64_t batch = 4, c = 1, h = 6, w = 5, classes = 4;
  const int32_t labels[batch] = {0, 1, 2, 3};
  const double off = 0.1 / classes, on = 1 - 0.1 + off;
  int cutmixes = 0, mixups = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    bool cut = seed % 2;
    MixConfig config;
    (cut ? config.mixupAlpha : config.cutmixAlpha) = 0;
    std::vector<float> images = constantBatch(batch, c * h * w);
    std::vector<float> targets(batch * classes);
    std::mt19937_64 rng(seed);
    mixBatch(images.data(), batch, c, h, w, labels, classes, targets.data(),
             config, rng);
    for (int64_t i = 0; i < batch; ++i) {
      double lambda =
          (targets[size_t(i * classes + labels[i])] - off) / (on - off);
      double own = double(i + 1), partner = double(batch - i);
      const float *image = images.data() + i * c * h * w;
      if (cut) {
        int64_t fromPartner = 0;
        for (int64_t k = 0; k < c * h * w; ++k) {
          ASSERT_TRUE(image[k] == own || image[k] == partner);
          fromPartner += image[k] == partner;
        }
        EXPECT_NEAR(1 - double(fromPartner) / (h * w), lambda, 1e-6);
      } else {
        // Pixels up to 4 and lambda read back from a float: 1e-5.
        for (int64_t k = 0; k < c * h * w; ++k)
          EXPECT_NEAR(image[k], lambda * own + (1 - lambda) * partner, 1e-5);
      }
    }
    (cut ? cutmixes : mixups) += 1;
  }
  EXPECT_EQ(cutmixes, 20);
  EXPECT_EQ(mixups, 20);
}

TEST(AugmentMix, SeedsDecideTheBatch) {
  const int32_t labels[4] = {3, 1, 0, 2};
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> images(4 * 3 * 4 * 4);
    for (float &p : images)
      p = float(unit(rng()));
    std::vector<float> targets(4 * 5);
    mixBatch(images.data(), 4, 3, 4, 4, labels, 5, targets.data(), MixConfig{},
             rng);
    images.insert(images.end(), targets.begin(), targets.end());
    return images;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(AugmentMix, RefusesBadInputBeforeTouchingPixels) {
  std::vector<float> images = constantBatch(2, 4), before = images;
  std::vector<float> targets(6);
  std::mt19937_64 rng(0);
  const int32_t bad[2] = {0, 3};
  EXPECT_THROW(mixBatch(images.data(), 2, 1, 2, 2, bad, 3, targets.data(),
                        MixConfig{}, rng),
               std::runtime_error);
  const int32_t good[2] = {0, 2};
  MixConfig negative;
  negative.mixupAlpha = -1;
  EXPECT_THROW(mixBatch(images.data(), 2, 1, 2, 2, good, 3, targets.data(),
                        negative, rng),
               std::runtime_error);
  MixConfig smoothing;
  smoothing.labelSmoothing = 1;
  EXPECT_THROW(mixBatch(images.data(), 2, 1, 2, 2, good, 3, targets.data(),
                        smoothing, rng),
               std::runtime_error);
  EXPECT_EQ(images, before);
}

//===----------------------------------------------------------------------===//
// DINO multi-crop
//===----------------------------------------------------------------------===//

/// Small views so that many seeds run quickly; DINO's probabilities and
/// strengths.
MultiCropConfig smallConfig() {
  MultiCropConfig config;
  config.globalSize = 10;
  config.localSize = 5;
  return config;
}

/// multiCropViews' documented draws replayed with the public steps.
std::vector<Image> replayViews(const Image &image, const MultiCropConfig &c,
                               std::mt19937_64 &replay) {
  std::vector<Image> views;
  for (int64_t v = 0; v < c.globalCrops + c.localCrops; ++v) {
    bool global = v < c.globalCrops;
    Image out = global ? randomResizedCrop(image, c.globalSize, replay,
                                           c.globalMinScale, c.globalMaxScale)
                       : randomResizedCrop(image, c.localSize, replay,
                                           c.localMinScale, c.localMaxScale);
    if (unit(replay()) < c.flipProb)
      horizontalFlip(out);
    if (unit(replay()) < c.jitterProb)
      colorJitterRandomOrder(out, c.brightness, c.contrast, c.saturation, c.hue,
                             replay);
    if (unit(replay()) < c.grayscaleProb)
      grayscale(out);
    double blurProb = !global  ? c.localBlurProb
                      : v == 0 ? c.firstBlurProb
                               : c.secondBlurProb;
    if (unit(replay()) < blurProb) {
      double sigma = c.minSigma + (c.maxSigma - c.minSigma) * unit(replay());
      gaussianBlur(out, sigma);
    }
    if (global && v > 0 && unit(replay()) < c.solarizeProb)
      solarize(out);
    if (!c.mean.empty())
      normalize(out, c.mean, c.stddev);
    views.push_back(out);
  }
  return views;
}

TEST(AugmentMultiCrop, DinoDefaultsGiveTenViewsOfTheRightSizes) {
  MultiCropConfig config; // 2 x 224 and 8 x 96, ImageNet normalisation
  Image image = randomImage(3, 30, 40, 20);
  std::mt19937_64 rng(21);
  std::vector<Image> views = multiCropViews(image, config, rng);
  ASSERT_EQ(views.size(), 10u);
  for (size_t v = 0; v < views.size(); ++v) {
    int64_t size = v < 2 ? 224 : 96;
    EXPECT_EQ(views[v].channels, 3);
    EXPECT_EQ(views[v].height, size);
    EXPECT_EQ(views[v].width, size);
    EXPECT_EQ(views[v].pixels.size(), size_t(3 * size * size));
    // Normalised from [0, 1]: within [-mean / std, (1 - mean) / std].
    for (int64_t c = 0; c < 3; ++c) {
      float lo = -config.mean[size_t(c)] / config.stddev[size_t(c)];
      float hi = (1 - config.mean[size_t(c)]) / config.stddev[size_t(c)];
      for (int64_t i = 0; i < size * size; ++i) {
        float p = views[v].pixels[size_t(c * size * size + i)];
        ASSERT_TRUE(p >= lo - 1e-5f && p <= hi + 1e-5f) << p;
      }
    }
  }

  // Grey images, other counts; local views may be none.
  MultiCropConfig gray = smallConfig();
  gray.globalCrops = 3;
  gray.localCrops = 2;
  gray.mean = {0.5f};
  gray.stddev = {0.5f};
  std::vector<Image> grayViews =
      multiCropViews(randomImage(1, 12, 9, 22), gray, rng);
  ASSERT_EQ(grayViews.size(), 5u);
  for (size_t v = 0; v < 5; ++v) {
    EXPECT_EQ(grayViews[v].channels, 1);
    EXPECT_EQ(grayViews[v].height, v < 3 ? 10 : 5);
    EXPECT_EQ(grayViews[v].width, v < 3 ? 10 : 5);
  }
  gray.localCrops = 0;
  EXPECT_EQ(multiCropViews(randomImage(1, 12, 9, 22), gray, rng).size(), 3u);
}

TEST(AugmentMultiCrop, SameSeedSameViews) {
  Image image = randomImage(3, 16, 20, 23);
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<float>> pixels;
    for (const Image &view : multiCropViews(image, smallConfig(), rng))
      pixels.push_back(view.pixels);
    return pixels;
  };
  EXPECT_EQ(run(7), run(7));
  std::vector<std::vector<float>> a = run(7), b = run(8);
  for (size_t v = 0; v < a.size(); ++v)
    EXPECT_NE(a[v], b[v]) << "view " << v;
}

TEST(AugmentMultiCrop, ReplaysTheDocumentedDraws) {
  Image colour = randomImage(3, 16, 20, 24);
  Image gray = randomImage(1, 14, 11, 25);
  MultiCropConfig plain = smallConfig();
  plain.mean.clear();
  plain.stddev.clear();
  MultiCropConfig grayConfig = smallConfig();
  grayConfig.globalCrops = 3;   // view 3 takes view 2's recipe
  grayConfig.grayscaleProb = 1; // the coin is drawn, grey stays grey
  grayConfig.mean = {0.5f};
  grayConfig.stddev = {0.25f};
  for (uint64_t seed = 0; seed < 30; ++seed) {
    for (auto [image, config] :
         {std::pair{&colour, smallConfig()}, std::pair{&colour, plain},
          std::pair{&gray, grayConfig}}) {
      std::mt19937_64 rng(seed), replay(seed);
      std::vector<Image> views = multiCropViews(*image, config, rng);
      std::vector<Image> want = replayViews(*image, config, replay);
      ASSERT_EQ(views.size(), want.size());
      for (size_t v = 0; v < views.size(); ++v)
        EXPECT_EQ(views[v].pixels, want[v].pixels)
            << "seed " << seed << " view " << v;
      EXPECT_EQ(rng(), replay()) << "seed " << seed;
    }
  }
}

// With flip, jitter, grayscale and solarize off, a view is its crop, or the
// crop blurred. Whether it was blurred is read off the pixels (a blur with
// sigma >= 0.5 changes a random image), and the replay follows along to
// find the next crop. Bounds: global view 1 always; global view 2, p = 0.1 over
// 1000 seeds, [0.06, 0.14] (4 standard deviations); local views, p = 0.5 over
// 8000, [0.47, 0.53] (over 5). The seeds are fixed, so this is
// deterministic.
TEST(AugmentMultiCrop, BlurProbabilitiesPerView) {
  MultiCropConfig config = smallConfig();
  config.flipProb = config.jitterProb = config.grayscaleProb = 0;
  config.solarizeProb = 0;
  config.minSigma = 0.5; // below about 0.2 the blur rounds to the identity
  config.mean.clear();
  config.stddev.clear();
  Image image = randomImage(3, 20, 20, 26);
  int64_t blurred[10] = {};
  const int seeds = 1000;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(seed), replay(seed);
    std::vector<Image> views = multiCropViews(image, config, rng);
    ASSERT_EQ(views.size(), 10u);
    for (size_t v = 0; v < 10; ++v) {
      Image crop = v < 2 ? randomResizedCrop(image, 10, replay, 0.4, 1.0)
                         : randomResizedCrop(image, 5, replay, 0.05, 0.4);
      replay.discard(3 + 1); // flip, jitter, grayscale and blur coins
      bool isBlurred = views[v].pixels != crop.pixels;
      if (isBlurred) {
        Image want = crop;
        gaussianBlur(want, 0.5 + 1.5 * unit(replay()));
        EXPECT_EQ(views[v].pixels, want.pixels)
            << "seed " << seed << " view " << v;
      }
      if (v == 1)
        replay.discard(1); // the solarize coin
      blurred[v] += isBlurred;
    }
    EXPECT_EQ(rng(), replay()) << "seed " << seed;
  }
  EXPECT_EQ(blurred[0], seeds);
  EXPECT_GE(blurred[1], 60);
  EXPECT_LE(blurred[1], 140);
  int64_t local = std::accumulate(blurred + 2, blurred + 10, int64_t(0));
  EXPECT_GE(local, 3760);
  EXPECT_LE(local, 4240);
}

// A constant 0.9 grey image stays at about 0.54 or more through every step
// but solarize (brightness can scale it by 0.6; contrast, saturation, hue
// and grayscale keep grey; crop and blur keep a constant, up to rounding),
// and solarize takes it to about 0.46 or less; 0.47 and 0.53 tell them
// apart with room for the rounding. Global views 2 and 3 solarise with p = 0.2:
// over 2000 seeds each, [0.164, 0.236] (4 standard deviations); the others
// never.
TEST(AugmentMultiCrop, OnlyLaterGlobalViewsSolarise) {
  MultiCropConfig config = smallConfig();
  config.globalCrops = 3;
  config.mean.clear();
  config.stddev.clear();
  Image image(3, 12, 12, 0.9f);
  int64_t solarised[11] = {};
  const int seeds = 2000;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Image> views = multiCropViews(image, config, rng);
    ASSERT_EQ(views.size(), 11u);
    for (size_t v = 0; v < 11; ++v) {
      auto [lo, hi] =
          std::minmax_element(views[v].pixels.begin(), views[v].pixels.end());
      bool low = *hi <= 0.47f, high = *lo >= 0.53f;
      ASSERT_TRUE(low || high) << "seed " << seed << " view " << v;
      solarised[v] += low;
    }
  }
  for (size_t v : {size_t(1), size_t(2)}) {
    EXPECT_GE(solarised[v], 328) << "view " << v;
    EXPECT_LE(solarised[v], 472) << "view " << v;
  }
  EXPECT_EQ(solarised[0], 0);
  for (size_t v = 3; v < 11; ++v)
    EXPECT_EQ(solarised[v], 0) << "view " << v;
}

TEST(AugmentMultiCrop, RefusesBadConfigsBeforeDrawing) {
  Image image = randomImage(3, 8, 8, 27);
  std::vector<std::pair<const char *, void (*)(MultiCropConfig &)>> bad = {
      {"globalCrops 0", [](MultiCropConfig &c) { c.globalCrops = 0; }},
      {"localCrops -1", [](MultiCropConfig &c) { c.localCrops = -1; }},
      {"globalSize 0", [](MultiCropConfig &c) { c.globalSize = 0; }},
      {"localSize -3", [](MultiCropConfig &c) { c.localSize = -3; }},
      {"globalMinScale 0", [](MultiCropConfig &c) { c.globalMinScale = 0; }},
      {"globalMaxScale 1.5",
       [](MultiCropConfig &c) { c.globalMaxScale = 1.5; }},
      {"global min > max",
       [](MultiCropConfig &c) {
         c.globalMinScale = 0.6;
         c.globalMaxScale = 0.5;
       }},
      {"local min > max",
       [](MultiCropConfig &c) {
         c.localMinScale = 0.3;
         c.localMaxScale = 0.2;
       }},
      {"localMaxScale 1.01",
       [](MultiCropConfig &c) { c.localMaxScale = 1.01; }},
      {"localMinScale NaN",
       [](MultiCropConfig &c) { c.localMinScale = std::nan(""); }},
      {"hue 0.6", [](MultiCropConfig &c) { c.hue = 0.6f; }},
      {"brightness -1", [](MultiCropConfig &c) { c.brightness = -1; }},
      {"flipProb 1.5", [](MultiCropConfig &c) { c.flipProb = 1.5; }},
      {"solarizeProb -0.1", [](MultiCropConfig &c) { c.solarizeProb = -0.1; }},
      {"minSigma 0", [](MultiCropConfig &c) { c.minSigma = 0; }},
      {"sigma min > max", [](MultiCropConfig &c) { c.maxSigma = 0.05; }},
      {"two means", [](MultiCropConfig &c) { c.mean.pop_back(); }},
      {"no deviations", [](MultiCropConfig &c) { c.stddev.clear(); }},
      {"zero deviation", [](MultiCropConfig &c) { c.stddev[1] = 0; }},
  };
  for (auto [what, spoil] : bad) {
    MultiCropConfig config = smallConfig();
    spoil(config);
    std::mt19937_64 rng(28), untouched(28);
    SCOPED_TRACE(what);
    expectRefusal([&] { multiCropViews(image, config, rng); },
                  "multiCropViews");
    EXPECT_EQ(rng(), untouched());
  }
  std::mt19937_64 rng(29);
  expectRefusal([&] { multiCropViews(Image(2, 4, 4), smallConfig(), rng); },
                "multiCropViews");
  Image shortOne = image;
  shortOne.pixels.pop_back();
  expectRefusal([&] { multiCropViews(shortOne, smallConfig(), rng); },
                "multiCropViews");
  // ImageNet statistics on a grey image: one per channel is required.
  expectRefusal(
      [&] { multiCropViews(randomImage(1, 8, 8, 30), MultiCropConfig(), rng); },
      "multiCropViews");
}

} // namespace
