//===- Probe.cpp - k-NN and linear probes of frozen features ----*- C++ -*-===//

#include "runtime/analysis/Probe.h"
#include "runtime/analysis/InputChecks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

using namespace lap::analysis;

namespace {

using namespace checks;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// torch.nn.functional.normalize's default eps.
constexpr double kNormalizeEps = 1e-12;

void requireLabels(const char *function, const char *name,
                   const int32_t *labels, int64_t count, int64_t classes) {
  for (int64_t i = 0; i < count; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      fail(function, std::string(name) + "[" + std::to_string(i) + "] is " +
                         std::to_string(labels[i]) + ", outside [0, " +
                         std::to_string(classes) + ")");
}

/// The checks both classifiers share on their train and test sets.
void requireProblem(const char *function, const float *train,
                    const int32_t *trainLabels, int64_t n, const float *test,
                    const int32_t *testLabels, int64_t m, int64_t d,
                    int64_t classes) {
  requireData(function, "train", train);
  requireData(function, "trainLabels", trainLabels);
  requireData(function, "test", test);
  requireData(function, "testLabels", testLabels);
  requirePositive(function, "n", n);
  requirePositive(function, "m", m);
  requirePositive(function, "d", d);
  if (classes < 2)
    fail(function,
         "classes is " + std::to_string(classes) + ", need at least 2");
  requireLabels(function, "trainLabels", trainLabels, n, classes);
  requireLabels(function, "testLabels", testLabels, m, classes);
  requireFinite(function, "train", train, n * d);
  requireFinite(function, "test", test, m * d);
}

/// Dot products in float, each always summed in the same order: kLanes
/// interleaved partial sums (which the compiler keeps in vector registers; it
/// may not reorder a single running sum), combined in a fixed tree, then the
/// tail. dots<R> forms a[r] . b for R rows at once, loading b once for all of
/// them, and gives each exactly the value dots<1> would.
constexpr int64_t kLanes = 8;
static_assert(kLanes == 8, "dots combines exactly eight partial sums");

template <int R>
void dots(const float *const *a, const float *b, int64_t d, float *out) {
  float lane[R][kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= d; c += kLanes)
    for (int r = 0; r < R; ++r)
      for (int64_t l = 0; l < kLanes; ++l)
        lane[r][l] += a[r][c + l] * b[c + l];
  for (int r = 0; r < R; ++r) {
    const float *p = lane[r];
    float sum =
        ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (int64_t t = c; t < d; ++t)
      sum += a[r][t] * b[t];
    out[r] = sum;
  }
}

/// a[r] . b for r < rows, in blocks of four.
void manyDots(const float *const *a, int64_t rows, const float *b, int64_t d,
              float *out) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    dots<4>(a + r, b, d, out + r);
  switch (rows - r) {
  case 3:
    dots<3>(a + r, b, d, out + r);
    break;
  case 2:
    dots<2>(a + r, b, d, out + r);
    break;
  case 1:
    dots<1>(a + r, b, d, out + r);
    break;
  }
}

/// Rows of x [rows, d] divided by max(norm, kNormalizeEps), norms in double.
std::vector<float> normalizedRows(const float *x, int64_t rows, int64_t d) {
  std::vector<float> out(rows * d);
  for (int64_t i = 0; i < rows; ++i) {
    const float *row = x + i * d;
    double squares = 0;
    for (int64_t c = 0; c < d; ++c)
      squares += double(row[c]) * double(row[c]);
    double norm = std::max(std::sqrt(squares), kNormalizeEps);
    for (int64_t c = 0; c < d; ++c)
      out[i * d + c] = float(double(row[c]) / norm);
  }
  return out;
}

/// Test rows whose similarities knnClassifier computes together: 64 rows of
/// 384 floats stay in L2 while the train rows stream past. Fewer (not below
/// 4) when the block's similarities would pass kSimilarityFloats, so an
/// ImageNet-sized train set does not need gigabytes. The block size changes
/// no result.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kSimilarityFloats = int64_t(1) << 22;

/// The class with the largest score, ties going to the lowest class.
int32_t argmax(const double *scores, int64_t classes) {
  int64_t best = 0;
  for (int64_t c = 1; c < classes; ++c)
    if (scores[c] > scores[best])
      best = c;
  return int32_t(best);
}

} // namespace

KnnResult lap::analysis::knnClassifier(const float *train,
                                       const int32_t *trainLabels, int64_t n,
                                       const float *test,
                                       const int32_t *testLabels, int64_t m,
                                       int64_t d, int64_t classes, int64_t k,
                                       double temperature) {
  const char *function = "knnClassifier";
  requireProblem(function, train, trainLabels, n, test, testLabels, m, d,
                 classes);
  requirePositive(function, "k", k);
  if (!(temperature > 0 && std::isfinite(temperature)))
    fail(function, "temperature is " + std::to_string(temperature) +
                       ", must be positive and finite");

  const std::vector<float> trainUnit = normalizedRows(train, n, d);
  const std::vector<float> testUnit = normalizedRows(test, m, d);
  const int64_t neighbours = std::min(k, n);

  KnnResult result{0.0, classes >= 5 ? 0.0 : kNaN, std::vector<int32_t>(m)};
  // Similarities of a block of test rows to every train row: each train row
  // is read once per block rather than once per test row, which keeps the
  // scan out of main memory.
  const int64_t queryBlock =
      std::clamp(kSimilarityFloats / n, int64_t(4), kQueryBlock);
  std::vector<float> similarities(queryBlock * n), column(queryBlock);
  std::vector<const float *> queries(queryBlock);
  std::vector<int64_t> order(n);
  std::vector<double> scores(classes);
  int64_t top1 = 0, top5 = 0;
  for (int64_t first = 0; first < m; first += queryBlock) {
    const int64_t block = std::min(queryBlock, m - first);
    for (int64_t q = 0; q < block; ++q)
      queries[q] = &testUnit[(first + q) * d];
    for (int64_t j = 0; j < n; ++j) {
      manyDots(queries.data(), block, &trainUnit[j * d], d, column.data());
      for (int64_t q = 0; q < block; ++q)
        similarities[q * n + j] = column[q];
    }

    for (int64_t q = 0; q < block; ++q) {
      const float *similarity = &similarities[q * n];
      // A total order (indices are distinct), so the chosen set and its
      // order do not depend on how the standard library selects.
      auto moreSimilar = [&](int64_t a, int64_t b) {
        return similarity[a] > similarity[b] ||
               (similarity[a] == similarity[b] && a < b);
      };
      std::iota(order.begin(), order.end(), int64_t(0));
      if (neighbours < n)
        std::nth_element(order.begin(), order.begin() + neighbours, order.end(),
                         moreSimilar);
      std::sort(order.begin(), order.begin() + neighbours, moreSimilar);

      std::fill(scores.begin(), scores.end(), 0.0);
      const double nearest = similarity[order[0]];
      for (int64_t r = 0; r < neighbours; ++r) {
        int64_t j = order[r];
        scores[trainLabels[j]] +=
            std::exp((double(similarity[j]) - nearest) / temperature);
      }

      const int64_t i = first + q;
      const int32_t label = testLabels[i];
      result.predictions[i] = argmax(scores.data(), classes);
      top1 += result.predictions[i] == label;
      if (classes >= 5 && scores[label] > 0) {
        // The label's place in the ranking by score, ties to the lower class.
        int64_t ahead = 0;
        for (int64_t c = 0; c < classes; ++c)
          ahead += scores[c] > scores[label] ||
                   (scores[c] == scores[label] && c < label);
        top5 += ahead < 5;
      }
    }
  }
  result.top1 = double(top1) / double(m);
  if (classes >= 5)
    result.top5 = double(top5) / double(m);
  return result;
}

namespace {

/// The per-dimension affine map x -> (x - mean) * scale applied to the
/// features before training, scale = 1 / (std sqrt(d)), 0 for a constant
/// dimension.
struct Standardisation {
  std::vector<double> mean, scale;
};

Standardisation standardisationOf(const float *x, int64_t n, int64_t d) {
  Standardisation s{std::vector<double>(d, 0.0), std::vector<double>(d, 0.0)};
  std::vector<double> squares(d, 0.0);
  std::vector<float> lowest(x, x + d), highest(x, x + d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) {
      float v = x[i * d + c];
      s.mean[c] += v;
      lowest[c] = std::min(lowest[c], v);
      highest[c] = std::max(highest[c], v);
    }
  for (int64_t c = 0; c < d; ++c)
    s.mean[c] /= double(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) {
      double centred = double(x[i * d + c]) - s.mean[c];
      squares[c] += centred * centred;
    }
  const double rootD = std::sqrt(double(d));
  for (int64_t c = 0; c < d; ++c)
    // Decided on the values rather than on the variance: the rounding of
    // the mean leaves a constant column a tiny variance, which a threshold
    // would have to guess.
    if (lowest[c] != highest[c])
      s.scale[c] = 1 / (std::sqrt(squares[c] / double(n)) * rootD);
  return s;
}

std::vector<float> standardised(const Standardisation &s, const float *x,
                                int64_t rows, int64_t d) {
  std::vector<float> out(rows * d);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < d; ++c)
      out[i * d + c] = float((double(x[i * d + c]) - s.mean[c]) * s.scale[c]);
  return out;
}

/// A linear classifier on standardised features: weight [classes, d] and
/// bias [classes].
class Linear {
public:
  Linear(int64_t d, int64_t classes)
      : d(d), classes(classes), weight(classes * d, 0.0f), bias(classes, 0.0f),
        rows(classes), dotScratch(classes) {
    for (int64_t c = 0; c < classes; ++c)
      rows[c] = &weight[c * d];
  }
  Linear(const Linear &) = delete; // `rows` points into `weight`.
  Linear &operator=(const Linear &) = delete;

  /// logits [classes] of row x [d], in double for the softmax.
  void logits(const float *x, double *out) {
    manyDots(rows.data(), classes, x, d, dotScratch.data());
    for (int64_t c = 0; c < classes; ++c)
      out[c] = double(dotScratch[c]) + double(bias[c]);
  }

  const int64_t d, classes;
  std::vector<float> weight, bias;

private:
  std::vector<const float *> rows;
  std::vector<float> dotScratch;
};

/// Rows whose gradients linearProbe adds to the batch gradient together.
constexpr int64_t kRowGroup = 4;

/// Overwrites logits [classes] with their softmax; returns the cross-entropy
/// of class `label`, -log p[label], computed from the logits (no log of an
/// underflowed probability).
double softmaxCrossEntropy(double *logits, int64_t classes, int32_t label) {
  double top = *std::max_element(logits, logits + classes);
  double sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum += std::exp(logits[c] - top);
  double loss = std::log(sum) - (logits[label] - top);
  for (int64_t c = 0; c < classes; ++c)
    logits[c] = std::exp(logits[c] - top) / sum;
  return loss;
}

/// Mean cross-entropy and accuracy of `model` on rows x [rows, d].
std::pair<double, double> evaluate(Linear &model, const float *x,
                                   const int32_t *labels, int64_t rows) {
  std::vector<double> logits(model.classes);
  double loss = 0;
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    model.logits(x + i * model.d, logits.data());
    correct += argmax(logits.data(), model.classes) == labels[i];
    loss += softmaxCrossEntropy(logits.data(), model.classes, labels[i]);
  }
  return {loss / double(rows), double(correct) / double(rows)};
}

} // namespace

LinearProbeResult
lap::analysis::linearProbe(const float *train, const int32_t *trainLabels,
                           int64_t n, const float *test,
                           const int32_t *testLabels, int64_t m, int64_t d,
                           int64_t classes, const LinearProbeOptions &options) {
  const char *function = "linearProbe";
  requireProblem(function, train, trainLabels, n, test, testLabels, m, d,
                 classes);
  requirePositive(function, "epochs", options.epochs);
  requirePositive(function, "batch", options.batch);
  if (!(options.lr > 0 && std::isfinite(options.lr)))
    fail(function, "lr is " + std::to_string(options.lr) +
                       ", must be positive and finite");
  if (!(options.momentum >= 0 && options.momentum < 1))
    fail(function, "momentum is " + std::to_string(options.momentum) +
                       ", must lie in [0, 1)");
  if (!(options.weightDecay >= 0 && std::isfinite(options.weightDecay)))
    fail(function, "weightDecay is " + std::to_string(options.weightDecay) +
                       ", must be non-negative and finite");

  const Standardisation standardisation = standardisationOf(train, n, d);
  const std::vector<float> x = standardised(standardisation, train, n, d);
  const float momentum = float(options.momentum);
  const float weightDecay = float(options.weightDecay);
  const int64_t batch = std::min(options.batch, n);

  Linear model(d, classes);
  std::vector<float> gradWeight(classes * d), gradBias(classes),
      gradLogits(kRowGroup * classes);
  std::vector<float> velocityWeight(classes * d, 0.0f),
      velocityBias(classes, 0.0f);
  std::vector<double> probabilities(classes);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t(0));
  std::mt19937_64 rng(options.seed);
  const double pi = std::acos(-1.0);

  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    const float lr =
        float(options.lr * 0.5 *
              (1 + std::cos(pi * double(epoch) / double(options.epochs))));
    // Fisher-Yates on the raw generator: std::shuffle and the distributions
    // differ between standard libraries. The modulo's bias is below 2^-40
    // for any n this is meant for.
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(order[i], order[rng() % uint64_t(i + 1)]);

    for (int64_t start = 0; start < n; start += batch) {
      const int64_t end = std::min(start + batch, n);
      const float share = float(1.0 / double(end - start));
      std::fill(gradWeight.begin(), gradWeight.end(), 0.0f);
      std::fill(gradBias.begin(), gradBias.end(), 0.0f);
      for (int64_t first = start; first < end; first += kRowGroup) {
        // A group short of kRowGroup rows is padded with rows of gradient 0,
        // which add exact zeros.
        const float *rows[kRowGroup];
        for (int64_t q = 0; q < kRowGroup; ++q) {
          float *g = &gradLogits[q * classes];
          if (first + q >= end) {
            rows[q] = rows[0];
            std::fill(g, g + classes, 0.0f);
            continue;
          }
          rows[q] = &x[order[first + q] * d];
          const int32_t label = trainLabels[order[first + q]];
          model.logits(rows[q], probabilities.data());
          double loss =
              softmaxCrossEntropy(probabilities.data(), classes, label);
          if (!std::isfinite(loss))
            fail(function, "the loss diverged in epoch " +
                               std::to_string(epoch) + "; lower lr (" +
                               std::to_string(options.lr) + ")");
          for (int64_t c = 0; c < classes; ++c)
            g[c] = float(probabilities[c] - (c == label ? 1.0 : 0.0)) * share;
        }
        // The gradient of the group's rows added at once: one pass over
        // gradWeight per kRowGroup rows instead of one per row.
        for (int64_t c = 0; c < classes; ++c) {
          const float g0 = gradLogits[c], g1 = gradLogits[classes + c],
                      g2 = gradLogits[2 * classes + c],
                      g3 = gradLogits[3 * classes + c];
          gradBias[c] += (g0 + g1) + (g2 + g3);
          float *gw = &gradWeight[c * d];
          const float *x0 = rows[0], *x1 = rows[1], *x2 = rows[2],
                      *x3 = rows[3];
          for (int64_t j = 0; j < d; ++j)
            gw[j] += (g0 * x0[j] + g1 * x1[j]) + (g2 * x2[j] + g3 * x3[j]);
        }
      }
      for (int64_t i = 0; i < classes * d; ++i) {
        float g = gradWeight[i] + weightDecay * model.weight[i];
        velocityWeight[i] = momentum * velocityWeight[i] + g;
        model.weight[i] -= lr * velocityWeight[i];
      }
      for (int64_t c = 0; c < classes; ++c) {
        velocityBias[c] = momentum * velocityBias[c] + gradBias[c];
        model.bias[c] -= lr * velocityBias[c];
      }
    }
  }

  LinearProbeResult result{};
  std::tie(result.trainLoss, result.trainAccuracy) =
      evaluate(model, x.data(), trainLabels, n);
  const std::vector<float> testX = standardised(standardisation, test, m, d);
  result.testAccuracy = evaluate(model, testX.data(), testLabels, m).second;

  // w . ((x - mean) * scale) + b = (w * scale) . x + (b - (w * scale) . mean)
  result.weight.assign(classes * d, 0.0);
  result.bias.assign(classes, 0.0);
  for (int64_t c = 0; c < classes; ++c) {
    double shift = 0;
    for (int64_t j = 0; j < d; ++j) {
      double w = double(model.weight[c * d + j]) * standardisation.scale[j];
      result.weight[c * d + j] = w;
      shift += w * standardisation.mean[j];
    }
    result.bias[c] = double(model.bias[c]) - shift;
  }
  return result;
}
