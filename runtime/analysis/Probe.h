//===- Probe.h - k-NN and linear evaluation of frozen features --*- C++ -*-===//
//
// How good are a self-supervised backbone's features? DINO (Caron et al.
// 2021) answers with two classifiers fitted on the frozen features of a
// labelled training set and scored on a test set: a weighted k-nearest-
// neighbour vote on cosine similarity (eval_knn.py), which needs no training,
// and a linear classifier trained with softmax cross-entropy (eval_linear.py).
//
// Inputs are plain row-major buffers: train [n, d] and test [m, d] hold one
// feature vector per row, trainLabels [n] and testLabels [m] the class of
// each row in [0, classes). Accuracies are fractions in [0, 1] (DINO prints
// percentages). Both functions are single-threaded and deterministic: the
// same inputs give the same result bit for bit. Bad input (a null buffer, a
// size that is not positive, a value that is not finite, classes < 2, a label
// out of range, a bad option) is a std::runtime_error naming the function and
// the problem.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ANALYSIS_PROBE_H
#define LAP_RUNTIME_ANALYSIS_PROBE_H

#include <cstdint>
#include <vector>

namespace lap::analysis {

/// DINO's defaults for ImageNet (eval_knn.py --nb_knn 20 --temperature 0.07).
constexpr int64_t kKnnDefaultK = 20;
constexpr double kKnnDefaultTemperature = 0.07;

/// The outcome of knnClassifier.
///   top1: the fraction of test rows whose prediction is their label;
///   top5: the fraction whose label is among the five best-scoring classes,
///     NaN when classes < 5. A class counts only with a positive score, i.e.
///     when it is the label of a neighbour: DINO ranks the classes no
///     neighbour voted for in an arbitrary order, so a hit among them is luck;
///   predictions[i]: the predicted class of test row i.
struct KnnResult {
  double top1, top5;
  std::vector<int32_t> predictions;
};

/// DINO's weighted k-NN classifier (eval_knn.py, knn_classifier). Every row
/// of train and test is first divided by max(its L2 norm, 1e-12), as
/// torch.nn.functional.normalize does, so the similarity of two rows is their
/// cosine (0 for a zero row). Each test row takes the k train rows most
/// similar to it, ties going to the lower train index; k larger than n takes
/// them all. Neighbour j votes exp(s_j / temperature) for its label, computed
/// as exp((s_j - s_max) / temperature): every vote scaled by one factor, so
/// the same ranking, with no overflow for a small temperature. The prediction
/// is the class with the largest sum of votes, ties going to the lowest class.
KnnResult knnClassifier(const float *train, const int32_t *trainLabels,
                        int64_t n, const float *test, const int32_t *testLabels,
                        int64_t m, int64_t d, int64_t classes,
                        int64_t k = kKnnDefaultK,
                        double temperature = kKnnDefaultTemperature);

/// Training of linearProbe: mini-batch SGD on the mean cross-entropy of each
/// batch, as DINO's eval_linear.py (momentum 0.9, no weight decay, learning
/// rate annealed to 0 on a cosine over the epochs, stepped once per epoch).
///   epochs: passes over the train set, each in a fresh random order;
///   lr: the learning rate of the first epoch;
///   batch: rows per step; the last step of an epoch takes the remainder, and
///     a batch larger than n is n (full-batch gradient descent);
///   momentum: in [0, 1), PyTorch's form v = momentum v + g, w -= lr v;
///   weightDecay: >= 0, an L2 penalty weightDecay/2 ||W||^2 on the weights
///     (not the bias), added to the gradient;
///   seed: of the std::mt19937_64 that orders each epoch.
struct LinearProbeOptions {
  int64_t epochs = 100;
  double lr = 1.0;
  int64_t batch = 256;
  double momentum = 0.9;
  double weightDecay = 0.0;
  uint64_t seed = 0;
};

/// The outcome of linearProbe, all measured with the final weights.
///   trainAccuracy, testAccuracy: fractions of rows classified correctly
///     (argmax of the logits, ties going to the lowest class);
///   trainLoss: the mean cross-entropy over the train set (without the
///     weight decay penalty);
///   weight [classes, d], bias [classes]: the classifier on the raw features,
///     logits = weight x + bias (the standardisation folded in).
struct LinearProbeResult {
  double trainAccuracy, testAccuracy, trainLoss;
  std::vector<double> weight, bias;
};

/// A linear classifier trained with softmax cross-entropy on the frozen
/// train features, scored on the test features. Features are first
/// standardised with the train set's per-dimension mean and standard
/// deviation (a constant dimension becomes 0), then divided by sqrt(d) so
/// that a row's mean squared norm is 1. Standardising rather than
/// L2-normalising rows makes the optimisation indifferent to the scale of
/// each dimension (backbone features often have a few dimensions far larger
/// than the rest, which would set the step size for all); the 1/sqrt(d)
/// bounds the curvature of the loss by 1 whatever d and however correlated
/// the dimensions, so one default learning rate serves every backbone. The
/// weights start at zero. A loss that is not finite, which with bounded
/// cross-entropy gradients takes an absurd lr, is a std::runtime_error.
LinearProbeResult linearProbe(const float *train, const int32_t *trainLabels,
                              int64_t n, const float *test,
                              const int32_t *testLabels, int64_t m, int64_t d,
                              int64_t classes,
                              const LinearProbeOptions &options = {});

} // namespace lap::analysis

#endif // LAP_RUNTIME_ANALYSIS_PROBE_H
