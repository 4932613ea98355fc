//===- ProbeTest.cpp - k-NN and linear evaluation of frozen features ------===//
//
// Synthetic features whose answer is known (tight clusters are classified
// perfectly, labels drawn independently of the features score at chance),
// votes computed by hand on a few two-dimensional rows, and a reference k-NN
// written here from DINO's definition in double precision, sharing no code
// with the library.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace lap::analysis;

namespace {

/// The error message of `f`, or "" if it did not throw std::runtime_error.
std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

void expectError(const std::function<void()> &f, const std::string &needle) {
  std::string message = errorOf(f);
  EXPECT_NE(message.find(needle), std::string::npos)
      << "expected '" << needle << "' in '" << message << "'";
}

/// Labelled feature rows, row-major [rows, d].
struct Features {
  int64_t rows, d;
  std::vector<float> x;
  std::vector<int32_t> labels;
};

/// `rows` rows with uniformly drawn labels in [0, classes): row i is the unit
/// vector centres[label] plus Gaussian noise of standard deviation `noise`
/// per coordinate, times a random positive factor (which the cosine of k-NN
/// ignores and the standardisation of the probe does not need). With
/// centres empty the rows are pure noise and the labels carry no
/// information.
Features sample(const std::vector<double> &centres, int64_t rows, int64_t d,
                int64_t classes, double noise, std::mt19937_64 &rng) {
  std::normal_distribution<double> normal;
  Features f{rows, d, std::vector<float>(rows * d), std::vector<int32_t>(rows)};
  for (int64_t i = 0; i < rows; ++i) {
    f.labels[i] = int32_t(rng() % uint64_t(classes));
    double factor = 0.5 + double(rng() % 1000) / 100.0;
    for (int64_t c = 0; c < d; ++c) {
      double centre = centres.empty() ? 0.0 : centres[f.labels[i] * d + c];
      f.x[i * d + c] = float(factor * (centre + noise * normal(rng)));
    }
  }
  return f;
}

/// `classes` random unit vectors in d dimensions, [classes, d].
std::vector<double> unitCentres(int64_t classes, int64_t d,
                                std::mt19937_64 &rng) {
  std::normal_distribution<double> normal;
  std::vector<double> centres(classes * d);
  for (int64_t k = 0; k < classes; ++k) {
    double norm = 0;
    for (int64_t c = 0; c < d; ++c) {
      centres[k * d + c] = normal(rng);
      norm += centres[k * d + c] * centres[k * d + c];
    }
    for (int64_t c = 0; c < d; ++c)
      centres[k * d + c] /= std::sqrt(norm);
  }
  return centres;
}

KnnResult knn(const Features &train, const Features &test, int64_t classes,
              int64_t k = kKnnDefaultK,
              double temperature = kKnnDefaultTemperature) {
  return knnClassifier(train.x.data(), train.labels.data(), train.rows,
                       test.x.data(), test.labels.data(), test.rows, train.d,
                       classes, k, temperature);
}

LinearProbeResult probe(const Features &train, const Features &test,
                        int64_t classes,
                        const LinearProbeOptions &options = {}) {
  return linearProbe(train.x.data(), train.labels.data(), train.rows,
                     test.x.data(), test.labels.data(), test.rows, train.d,
                     classes, options);
}

/// DINO's knn_classifier from its definition, in double: cosine
/// similarities, the k most similar train rows (ties to the lower index),
/// votes exp(s / T) summed per class, the largest sum (ties to the lower
/// class).
std::vector<int32_t> referenceKnn(const Features &train, const Features &test,
                                  int64_t classes, int64_t k, double T) {
  const int64_t d = train.d;
  auto unit = [d](const float *row) {
    std::vector<double> u(row, row + d);
    double norm = 0;
    for (double v : u)
      norm += v * v;
    for (double &v : u)
      v /= std::max(std::sqrt(norm), 1e-12);
    return u;
  };
  std::vector<int32_t> predictions;
  for (int64_t i = 0; i < test.rows; ++i) {
    std::vector<double> query = unit(&test.x[i * d]);
    std::vector<double> s(train.rows);
    for (int64_t j = 0; j < train.rows; ++j) {
      std::vector<double> row = unit(&train.x[j * d]);
      s[j] = std::inner_product(query.begin(), query.end(), row.begin(), 0.0);
    }
    std::vector<int64_t> order(train.rows);
    std::iota(order.begin(), order.end(), int64_t(0));
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return s[a] > s[b] || (s[a] == s[b] && a < b);
    });
    std::vector<double> votes(classes, 0.0);
    for (int64_t r = 0; r < std::min(k, train.rows); ++r)
      votes[train.labels[order[r]]] += std::exp(s[order[r]] / T);
    predictions.push_back(
        int32_t(std::max_element(votes.begin(), votes.end()) - votes.begin()));
  }
  return predictions;
}

//===----------------------------------------------------------------------===//
// k-NN
//===----------------------------------------------------------------------===//

TEST(KnnClassifier, SeparableClustersAreClassifiedPerfectly) {
  std::mt19937_64 rng(1);
  const int64_t classes = 10, d = 32;
  std::vector<double> centres = unitCentres(classes, d, rng);
  Features train = sample(centres, 500, d, classes, 0.05, rng);
  Features test = sample(centres, 200, d, classes, 0.05, rng);
  KnnResult result = knn(train, test, classes);
  EXPECT_EQ(result.top1, 1.0);
  EXPECT_EQ(result.top5, 1.0);
  EXPECT_EQ(result.predictions, test.labels);
}

TEST(KnnClassifier, RandomLabelsScoreAtChance) {
  std::mt19937_64 rng(2);
  const int64_t classes = 10, d = 32;
  Features train = sample({}, 1000, d, classes, 1.0, rng);
  Features test = sample({}, 400, d, classes, 1.0, rng);
  KnnResult result = knn(train, test, classes);
  EXPECT_GE(result.top1, 0.5 / classes);
  EXPECT_LE(result.top1, 2.0 / classes);
  EXPECT_GE(result.top5, 0.5 * 5 / classes);
  EXPECT_LE(result.top5, 1.5 * 5 / classes);
}

TEST(KnnClassifier, AgreesWithTheReference) {
  std::mt19937_64 rng(3);
  const int64_t classes = 7, d = 16;
  std::vector<double> centres = unitCentres(classes, d, rng);
  // Noisy enough that the vote, not the nearest row, decides many rows.
  Features train = sample(centres, 300, d, classes, 0.3, rng);
  Features test = sample(centres, 150, d, classes, 0.3, rng);
  for (auto [k, T] : {std::pair<int64_t, double>{20, 0.07},
                      {5, 0.5},
                      {1, 1.0},
                      {300, 0.07}}) {
    SCOPED_TRACE("k " + std::to_string(k) + ", T " + std::to_string(T));
    KnnResult result = knn(train, test, classes, k, T);
    std::vector<int32_t> expected = referenceKnn(train, test, classes, k, T);
    EXPECT_EQ(result.predictions, expected);
    int64_t correct = 0;
    for (int64_t i = 0; i < test.rows; ++i)
      correct += expected[i] == test.labels[i];
    EXPECT_EQ(result.top1, double(correct) / double(test.rows));
    EXPECT_GT(result.top1, 0.3); // Far above chance (1/7): the data is sound.
  }
}

/// The test row (2, 0) and train rows whose cosines with it are 1, c and c
/// (the last two mirror images), of lengths 1, 3 and 0.5 to show the
/// normalisation: with classes 0, 1, 1 and votes exp(s / T), class 1 wins
/// three neighbours iff 2 exp((c - 1) / T) > 1.
Features threeRows(double c, int32_t firstLabel = 0) {
  double s = std::sqrt(1 - c * c);
  return {
      3,
      2,
      {1.0f, 0.0f, float(3 * c), float(3 * s), float(0.5 * c), float(-0.5 * s)},
      {firstLabel, 1, 1}};
}

TEST(KnnClassifier, VotesByHand) {
  const Features query{1, 2, {2.0f, 0.0f}, {0}};
  // c = 0.98, T = 0.07: each far row votes exp(-0.02 / 0.07) = 0.7515 of
  // the near row's vote; two of them (1.503) outvote it.
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 3).predictions[0], 1);
  // k = 2 keeps the near row and the first far row (a tie in similarity
  // goes to the lower index): 1 against 0.7515.
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 2).predictions[0], 0);
  // k = 1: the nearest row alone.
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 1).predictions[0], 0);
  // c = 0.9: exp(-0.1 / 0.07) = 0.2397, twice 0.479 < 1, the near row wins;
  // at T = 1 the far rows vote exp(-0.1) = 0.905 each, 1.81 > 1.
  EXPECT_EQ(knn(threeRows(0.9), query, 2, 3).predictions[0], 0);
  EXPECT_EQ(knn(threeRows(0.9), query, 2, 3, 1.0).predictions[0], 1);
  // The threshold is c = 1 - T ln 2 = 0.95148 at T = 0.07.
  EXPECT_EQ(knn(threeRows(0.955), query, 2, 3).predictions[0], 1);
  EXPECT_EQ(knn(threeRows(0.948), query, 2, 3).predictions[0], 0);
  // Accuracy against the label of the query.
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 3).top1, 0.0);
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 1).top1, 1.0);
  EXPECT_TRUE(std::isnan(knn(threeRows(0.98), query, 2, 3).top5));
}

TEST(KnnClassifier, TiesGoToTheLowerIndexThenTheLowerClass) {
  // Rows 0 and 1 point the same way (cosine 1 with the query each).
  const Features train{3, 2, {1, 0, 2, 0, 0, 1}, {2, 1, 0}};
  const Features query{1, 2, {5, 0}, {1}};
  // k = 1: row 0 (label 2) over row 1, though label 1 is lower.
  EXPECT_EQ(knn(train, query, 3, 1).predictions[0], 2);
  // k = 2: equal votes for classes 1 and 2; the lower class wins.
  EXPECT_EQ(knn(train, query, 3, 2).predictions[0], 1);
}

TEST(KnnClassifier, TopFiveCountsOnlyClassesThatWereVotedFor) {
  // Six classes; the neighbours vote for classes 0 and 1 only.
  const Features train = threeRows(0.98);
  for (int32_t label : {0, 1, 4}) {
    const Features query{1, 2, {2.0f, 0.0f}, {label}};
    KnnResult result = knn(train, query, 6, 3);
    EXPECT_EQ(result.predictions[0], 1);
    EXPECT_EQ(result.top1, label == 1 ? 1.0 : 0.0) << "label " << label;
    EXPECT_EQ(result.top5, label == 4 ? 0.0 : 1.0) << "label " << label;
  }
  // Six classes, each voted for: the label ranked sixth misses top-5.
  std::vector<float> x;
  std::vector<int32_t> labels;
  for (int32_t c = 0; c < 6; ++c) {
    double angle = 0.01 * c; // Class 0 nearest, class 5 farthest.
    x.push_back(float(std::cos(angle)));
    x.push_back(float(std::sin(angle)));
    labels.push_back(c);
  }
  const Features six{6, 2, x, labels};
  for (int32_t label = 0; label < 6; ++label) {
    const Features query{1, 2, {1.0f, 0.0f}, {label}};
    EXPECT_EQ(knn(six, query, 6, 6).top5, label < 5 ? 1.0 : 0.0)
        << "label " << label;
  }
}

TEST(KnnClassifier, KLargerThanTheTrainSetUsesEveryRow) {
  const Features query{1, 2, {2.0f, 0.0f}, {1}};
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 1000).predictions,
            knn(threeRows(0.98), query, 2, 3).predictions);
  EXPECT_EQ(knn(threeRows(0.98), query, 2, 1000).top1, 1.0);

  std::mt19937_64 rng(4);
  Features train = sample(unitCentres(4, 8, rng), 40, 8, 4, 0.5, rng);
  Features test = sample({}, 30, 8, 4, 1.0, rng);
  EXPECT_EQ(knn(train, test, 4, 40).predictions,
            knn(train, test, 4, 1 << 30).predictions);
}

TEST(KnnClassifier, ZeroRowsHaveSimilarityZero) {
  // The zero train row is neither nearer nor farther than the orthogonal
  // row: a tie at cosine 0, won by the lower index.
  const Features train{3, 2, {1, 0, 0, 0, 0, 1}, {0, 1, 2}};
  const Features query{1, 2, {-1, 0}, {0}};
  // Similarities -1, 0, 0: the two nearest are rows 1 and 2, equal votes,
  // class 1 wins the tie.
  EXPECT_EQ(knn(train, query, 3, 2).predictions[0], 1);
  const Features zeroQuery{1, 2, {0, 0}, {0}};
  // All similarities 0: row 0 by index.
  EXPECT_EQ(knn(train, zeroQuery, 3, 1).predictions[0], 0);
}

TEST(KnnClassifier, BadInputIsRefusedWithAMessage) {
  const std::vector<float> x = {1, 0, 0, 1};
  const std::vector<int32_t> labels = {0, 1}, outOfRange = {0, 2},
                             negative = {-1, 0};
  const float *p = x.data();
  const int32_t *y = labels.data();
  expectError([&] { knnClassifier(nullptr, y, 2, p, y, 2, 2, 2); },
              "knnClassifier: train is null");
  expectError([&] { knnClassifier(p, y, 2, p, nullptr, 2, 2, 2); },
              "knnClassifier: testLabels is null");
  expectError([&] { knnClassifier(p, y, 0, p, y, 2, 2, 2); },
              "knnClassifier: n is 0, must be positive");
  expectError([&] { knnClassifier(p, y, 2, p, y, -1, 2, 2); },
              "knnClassifier: m is -1, must be positive");
  expectError([&] { knnClassifier(p, y, 2, p, y, 2, 0, 2); },
              "knnClassifier: d is 0, must be positive");
  expectError([&] { knnClassifier(p, y, 2, p, y, 2, 2, 1); },
              "knnClassifier: classes is 1, need at least 2");
  expectError([&] { knnClassifier(p, outOfRange.data(), 2, p, y, 2, 2, 2); },
              "knnClassifier: trainLabels[1] is 2, outside [0, 2)");
  expectError([&] { knnClassifier(p, y, 2, p, negative.data(), 2, 2, 2); },
              "knnClassifier: testLabels[0] is -1, outside [0, 2)");
  expectError([&] { knnClassifier(p, y, 2, p, y, 2, 2, 2, 0); },
              "knnClassifier: k is 0, must be positive");
  expectError([&] { knnClassifier(p, y, 2, p, y, 2, 2, 2, 20, 0.0); },
              "knnClassifier: temperature is 0");
  expectError([&] { knnClassifier(p, y, 2, p, y, 2, 2, 2, 20, NAN); },
              "must be positive and finite");
  const std::vector<float> bad = {1, 0, INFINITY, 1};
  EXPECT_EQ(errorOf([&] { knnClassifier(p, y, 2, bad.data(), y, 2, 2, 2); }),
            "knnClassifier: test[2] is not finite");
}

//===----------------------------------------------------------------------===//
// Linear probe
//===----------------------------------------------------------------------===//

/// The accuracy of logits = weight x + bias on the raw rows of f.
double rawAccuracy(const LinearProbeResult &r, const Features &f,
                   int64_t classes) {
  int64_t correct = 0;
  for (int64_t i = 0; i < f.rows; ++i) {
    std::vector<double> logits(r.bias);
    for (int64_t c = 0; c < classes; ++c)
      for (int64_t j = 0; j < f.d; ++j)
        logits[c] += r.weight[c * f.d + j] * double(f.x[i * f.d + j]);
    correct +=
        std::max_element(logits.begin(), logits.end()) - logits.begin() ==
        f.labels[i];
  }
  return double(correct) / double(f.rows);
}

TEST(LinearProbe, SeparableClustersAreLearned) {
  std::mt19937_64 rng(5);
  const int64_t classes = 10, d = 32;
  std::vector<double> centres = unitCentres(classes, d, rng);
  // Noise of norm about 0.57 around unit centres: well apart, but not
  // trivially.
  Features train = sample(centres, 1000, d, classes, 0.1, rng);
  Features test = sample(centres, 300, d, classes, 0.1, rng);
  LinearProbeResult result = probe(train, test, classes);
  EXPECT_EQ(result.trainAccuracy, 1.0);
  EXPECT_GE(result.testAccuracy, 0.99);
  EXPECT_LT(result.trainLoss, 0.2);
  ASSERT_EQ(result.weight.size(), size_t(classes * d));
  ASSERT_EQ(result.bias.size(), size_t(classes));
  // The returned classifier acts on the raw features.
  EXPECT_EQ(rawAccuracy(result, test, classes), result.testAccuracy);
  EXPECT_EQ(rawAccuracy(result, train, classes), result.trainAccuracy);
}

TEST(LinearProbe, RandomLabelsScoreAtChance) {
  std::mt19937_64 rng(6);
  const int64_t classes = 10, d = 32;
  Features train = sample({}, 2000, d, classes, 1.0, rng);
  Features test = sample({}, 500, d, classes, 1.0, rng);
  LinearProbeResult result = probe(train, test, classes);
  EXPECT_GE(result.testAccuracy, 0.5 / classes);
  EXPECT_LE(result.testAccuracy, 2.0 / classes);
  // It can only memorise a little of 2000 rows with 330 parameters.
  EXPECT_LT(result.trainAccuracy, 0.3);
  EXPECT_GT(result.trainLoss, 0.8 * std::log(double(classes)));
}

TEST(LinearProbe, IsDeterministic) {
  std::mt19937_64 rng(7);
  const int64_t classes = 5, d = 16;
  std::vector<double> centres = unitCentres(classes, d, rng);
  Features train = sample(centres, 500, d, classes, 0.4, rng);
  Features test = sample(centres, 200, d, classes, 0.4, rng);
  LinearProbeOptions options;
  options.epochs = 20;
  options.batch = 64;
  options.seed = 42;
  LinearProbeResult a = probe(train, test, classes, options);
  LinearProbeResult b = probe(train, test, classes, options);
  EXPECT_EQ(a.trainAccuracy, b.trainAccuracy);
  EXPECT_EQ(a.testAccuracy, b.testAccuracy);
  EXPECT_EQ(std::memcmp(&a.trainLoss, &b.trainLoss, sizeof(double)), 0);
  ASSERT_EQ(a.weight.size(), b.weight.size());
  EXPECT_EQ(std::memcmp(a.weight.data(), b.weight.data(),
                        a.weight.size() * sizeof(double)),
            0);
  EXPECT_EQ(
      std::memcmp(a.bias.data(), b.bias.data(), a.bias.size() * sizeof(double)),
      0);
  // The seed orders the batches: another seed gives other weights.
  options.seed = 43;
  LinearProbeResult c = probe(train, test, classes, options);
  EXPECT_NE(c.weight, a.weight);
}

TEST(LinearProbe, DimensionScalesDoNotMatter) {
  // Scaling a dimension by a power of two scales its mean and standard
  // deviation exactly, so the standardised features, and all that follows,
  // are the same bit for bit; only the raw-feature weights scale back.
  std::mt19937_64 rng(8);
  const int64_t classes = 4, d = 12;
  std::vector<double> centres = unitCentres(classes, d, rng);
  Features train = sample(centres, 300, d, classes, 0.3, rng);
  Features test = sample(centres, 100, d, classes, 0.3, rng);
  LinearProbeOptions options;
  options.epochs = 10;
  LinearProbeResult plain = probe(train, test, classes, options);
  Features scaledTrain = train, scaledTest = test;
  for (int64_t j = 0; j < d; ++j) {
    float scale = std::ldexp(1.0f, int(4 * j) - 20); // 2^-20 .. 2^24
    for (int64_t i = 0; i < train.rows; ++i)
      scaledTrain.x[i * d + j] *= scale;
    for (int64_t i = 0; i < test.rows; ++i)
      scaledTest.x[i * d + j] *= scale;
  }
  LinearProbeResult scaled = probe(scaledTrain, scaledTest, classes, options);
  EXPECT_EQ(scaled.trainLoss, plain.trainLoss);
  EXPECT_EQ(scaled.trainAccuracy, plain.trainAccuracy);
  EXPECT_EQ(scaled.testAccuracy, plain.testAccuracy);
  EXPECT_EQ(scaled.bias, plain.bias);
  for (int64_t c = 0; c < classes; ++c)
    for (int64_t j = 0; j < d; ++j)
      EXPECT_EQ(scaled.weight[c * d + j],
                std::ldexp(plain.weight[c * d + j], 20 - int(4 * j)));
}

TEST(LinearProbe, CorrelatedDimensionsReachTheOptimum) {
  // 128 noisy copies of one signal z, and labels that z predicts only
  // partly: the standardised features' covariance has one eigenvalue near
  // 128 and the rest near 0. The 1/sqrt(d) brings the large one to about 1,
  // where the default learning rate is stable, so a short run gets within 1%
  // of the loss of a long one; at lr d, what lr 1 would be without the
  // 1/sqrt(d), the same run is still oscillating when it ends.
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  const int64_t d = 128, n = 400;
  Features train{n, d, std::vector<float>(n * d), std::vector<int32_t>(n)};
  for (int64_t i = 0; i < n; ++i) {
    double z = normal(rng);
    train.labels[i] = z + 0.5 * normal(rng) > 0;
    for (int64_t j = 0; j < d; ++j)
      train.x[i * d + j] = float(z + 0.01 * normal(rng));
  }
  LinearProbeOptions options;
  options.epochs = 1000;
  const double optimum = probe(train, train, 2, options).trainLoss;
  options.epochs = 30;
  LinearProbeResult result = probe(train, train, 2, options);
  EXPECT_LT(result.trainLoss, 1.01 * optimum);
  EXPECT_GT(result.trainAccuracy, 0.8);
  options.lr = double(d);
  EXPECT_GT(probe(train, train, 2, options).trainLoss, 1.5 * optimum);
}

TEST(LinearProbe, OptionsChangeTheTraining) {
  std::mt19937_64 rng(10);
  const int64_t classes = 3, d = 8;
  std::vector<double> centres = unitCentres(classes, d, rng);
  Features train = sample(centres, 200, d, classes, 0.3, rng);
  Features test = sample(centres, 100, d, classes, 0.3, rng);
  LinearProbeOptions options;
  options.epochs = 30;
  // A batch larger than the train set is full-batch descent.
  options.batch = 1000;
  LinearProbeResult full = probe(train, test, classes, options);
  options.batch = 200;
  LinearProbeResult same = probe(train, test, classes, options);
  EXPECT_EQ(full.weight, same.weight);
  // More epochs fit the train set better.
  options.epochs = 1;
  LinearProbeResult brief = probe(train, test, classes, options);
  EXPECT_LT(full.trainLoss, brief.trainLoss);
  // Weight decay shrinks the weights.
  options.epochs = 30;
  options.batch = 32;
  LinearProbeResult undecayed = probe(train, test, classes, options);
  options.weightDecay = 0.1;
  LinearProbeResult decayed = probe(train, test, classes, options);
  auto norm = [](const std::vector<double> &w) {
    return std::sqrt(std::inner_product(w.begin(), w.end(), w.begin(), 0.0));
  };
  EXPECT_LT(norm(decayed.weight), 0.5 * norm(undecayed.weight));
}

TEST(LinearProbe, BadInputIsRefusedWithAMessage) {
  const std::vector<float> x = {1, 0, 0, 1};
  const std::vector<int32_t> labels = {0, 1}, outOfRange = {0, 3};
  const float *p = x.data();
  const int32_t *y = labels.data();
  auto withOptions = [&](auto change) {
    LinearProbeOptions options;
    change(options);
    return [=] { linearProbe(p, y, 2, p, y, 2, 2, 2, options); };
  };
  expectError([&] { linearProbe(p, y, 2, nullptr, y, 2, 2, 2); },
              "linearProbe: test is null");
  expectError([&] { linearProbe(p, y, 2, p, y, 2, 2, 0); },
              "linearProbe: classes is 0, need at least 2");
  expectError([&] { linearProbe(p, outOfRange.data(), 2, p, y, 2, 2, 2); },
              "linearProbe: trainLabels[1] is 3, outside [0, 2)");
  expectError(withOptions([](auto &o) { o.epochs = 0; }),
              "linearProbe: epochs is 0, must be positive");
  expectError(withOptions([](auto &o) { o.batch = -4; }),
              "linearProbe: batch is -4, must be positive");
  expectError(withOptions([](auto &o) { o.lr = 0; }), "linearProbe: lr is 0");
  expectError(withOptions([](auto &o) { o.lr = INFINITY; }),
              "must be positive and finite");
  expectError(withOptions([](auto &o) { o.momentum = 1; }),
              "linearProbe: momentum is 1");
  expectError(withOptions([](auto &o) { o.weightDecay = -1; }),
              "linearProbe: weightDecay is -1");
  // Cross-entropy's gradients are bounded, so only an absurd step size
  // overflows the weights.
  expectError(withOptions([](auto &o) { o.lr = 1e38; }),
              "linearProbe: the loss diverged in epoch");
  const std::vector<float> bad = {1, NAN, 0, 1};
  EXPECT_EQ(errorOf([&] { linearProbe(bad.data(), y, 2, p, y, 2, 2, 2); }),
            "linearProbe: train[1] is not finite");
}

} // namespace
