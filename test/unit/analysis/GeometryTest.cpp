//===- GeometryTest.cpp - geometry of token representations ---------------===//
//
// Hand-computed examples, constructions whose answer is known (collapsed
// classes, a rotated simplex ETF, tokens in a subspace with chosen
// eigenvalues), and random data checked against references written here
// from the definitions: C x C covariances and a Jacobi eigenvalue routine,
// sharing no code with the library.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Geometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace lap::analysis;

namespace {

using Matrix = std::vector<double>; // Row-major, square unless said.

/// The error message of `f`, or "" if it did not throw std::runtime_error.
std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

/// Cyclic Jacobi rotations on the symmetric n x n matrix `a`: returns the
/// eigenvalues, and the eigenvectors as the columns of `vectors`.
std::vector<double> jacobiEigen(Matrix a, int n, Matrix &vectors) {
  vectors.assign(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    vectors[i * n + i] = 1;
  double norm = 0;
  for (double v : a)
    norm += v * v;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q)
        off += a[p * n + q] * a[p * n + q];
    if (off <= 1e-32 * norm)
      break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        double apq = a[p * n + q];
        if (apq == 0)
          continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        double t = (theta >= 0 ? 1.0 : -1.0) /
                   (std::fabs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        auto rotateColumns = [&](Matrix &m) {
          for (int k = 0; k < n; ++k) {
            double kp = m[k * n + p], kq = m[k * n + q];
            m[k * n + p] = c * kp - s * kq;
            m[k * n + q] = s * kp + c * kq;
          }
        };
        rotateColumns(a);
        for (int k = 0; k < n; ++k) {
          double pk = a[p * n + k], qk = a[q * n + k];
          a[p * n + k] = c * pk - s * qk;
          a[q * n + k] = s * pk + c * qk;
        }
        rotateColumns(vectors);
      }
  }
  std::vector<double> values(n);
  for (int i = 0; i < n; ++i)
    values[i] = a[i * n + i];
  return values;
}

std::vector<double> gaussian(size_t n, std::mt19937_64 &rng, double scale = 1) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double &x : v)
    x = normal(rng);
  return v;
}

/// `columns` orthonormal columns of length `rows` (Gram-Schmidt, twice for
/// accuracy), as a row-major [rows, columns] matrix. With `centred` every
/// column is also orthogonal to the all-ones vector.
Matrix orthonormalColumns(int rows, int columns, std::mt19937_64 &rng,
                          bool centred = false) {
  Matrix q = gaussian(size_t(rows) * columns, rng);
  for (int j = 0; j < columns; ++j)
    for (int pass = 0; pass < 2; ++pass) {
      if (centred) {
        double mean = 0;
        for (int i = 0; i < rows; ++i)
          mean += q[i * columns + j];
        for (int i = 0; i < rows; ++i)
          q[i * columns + j] -= mean / rows;
      }
      for (int l = 0; l < j; ++l) {
        double dot = 0;
        for (int i = 0; i < rows; ++i)
          dot += q[i * columns + j] * q[i * columns + l];
        for (int i = 0; i < rows; ++i)
          q[i * columns + j] -= dot * q[i * columns + l];
      }
      double norm = 0;
      for (int i = 0; i < rows; ++i)
        norm += q[i * columns + j] * q[i * columns + j];
      for (int i = 0; i < rows; ++i)
        q[i * columns + j] /= std::sqrt(norm);
    }
  return q;
}

/// Neural collapse straight from the definitions, with C x C covariances
/// and the pseudo-inverse from Jacobi.
NeuralCollapse referenceCollapse(const std::vector<double> &h, int N, int C,
                                 const std::vector<int32_t> &labels, int K,
                                 const std::vector<float> &W) {
  Matrix mu(K * C, 0.0);
  std::vector<int> count(K, 0);
  for (int i = 0; i < N; ++i) {
    ++count[labels[i]];
    for (int c = 0; c < C; ++c)
      mu[labels[i] * C + c] += h[i * C + c];
  }
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c)
      mu[k * C + c] /= count[k];
  std::vector<double> globalMean(C, 0.0);
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c)
      globalMean[c] += mu[k * C + c] / K;
  Matrix M(K * C);
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c)
      M[k * C + c] = mu[k * C + c] - globalMean[c];

  Matrix within(C * C, 0.0), between(C * C, 0.0);
  for (int i = 0; i < N; ++i)
    for (int a = 0; a < C; ++a)
      for (int b = 0; b < C; ++b)
        within[a * C + b] += (h[i * C + a] - mu[labels[i] * C + a]) *
                             (h[i * C + b] - mu[labels[i] * C + b]) / N;
  for (int k = 0; k < K; ++k)
    for (int a = 0; a < C; ++a)
      for (int b = 0; b < C; ++b)
        between[a * C + b] += M[k * C + a] * M[k * C + b] / K;
  Matrix vectors;
  std::vector<double> values = jacobiEigen(between, C, vectors);
  double largest = *std::max_element(values.begin(), values.end());
  Matrix pinv(C * C, 0.0);
  for (int r = 0; r < C; ++r)
    if (values[r] > 1e-10 * largest)
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b)
          pinv[a * C + b] +=
              vectors[a * C + r] * vectors[b * C + r] / values[r];
  double trace = 0;
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b)
      trace += within[a * C + b] * pinv[b * C + a];

  NeuralCollapse out{trace / K, 0, NAN, std::vector<double>(K)};
  Matrix gram(K * K, 0.0);
  double gramNorm = 0, normM = 0;
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < K; ++l) {
      for (int c = 0; c < C; ++c)
        gram[k * K + l] += M[k * C + c] * M[l * C + c];
      gramNorm += gram[k * K + l] * gram[k * K + l];
    }
  gramNorm = std::sqrt(gramNorm);
  for (int k = 0; k < K; ++k) {
    out.classMeanNorms[k] = std::sqrt(gram[k * K + k]);
    normM += gram[k * K + k];
  }
  normM = std::sqrt(normM);
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < K; ++l) {
      double target = ((k == l) - 1.0 / K) / std::sqrt(K - 1.0);
      out.etfDistance += std::pow(gram[k * K + l] / gramNorm - target, 2);
    }
  out.etfDistance = std::sqrt(out.etfDistance);
  if (!W.empty()) {
    double normW = 0, alignment = 0;
    for (float w : W)
      normW += double(w) * w;
    normW = std::sqrt(normW);
    for (int i = 0; i < K * C; ++i)
      alignment += std::pow(W[i] / normW - M[i] / normM, 2);
    out.classifierAlignment = std::sqrt(alignment);
  }
  return out;
}

/// Descending eigenvalues of each sequence's C x C token covariance,
/// normalised to sum 1, by Jacobi.
std::vector<std::vector<double>> referenceSpectra(const std::vector<float> &x,
                                                  int N, int T, int C) {
  std::vector<std::vector<double>> spectra;
  for (int n = 0; n < N; ++n) {
    std::vector<double> mean(C, 0.0);
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c)
        mean[c] += x[(n * T + t) * C + c] / double(T);
    Matrix cov(C * C, 0.0);
    for (int t = 0; t < T; ++t)
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b)
          cov[a * C + b] += (x[(n * T + t) * C + a] - mean[a]) *
                            (x[(n * T + t) * C + b] - mean[b]);
    Matrix vectors;
    std::vector<double> values = jacobiEigen(cov, C, vectors);
    std::sort(values.rbegin(), values.rend());
    double sum = 0;
    for (double v : values)
      sum += v;
    for (double &v : values)
      v /= sum;
    spectra.push_back(values);
  }
  return spectra;
}

/// Tokens [T, C] of a sequence whose centred covariance X^T X has exactly the
/// eigenvalues `lambda` (on random orthonormal directions) plus an offset.
std::vector<float> sequenceWithSpectrum(const std::vector<double> &lambda,
                                        int T, int C, std::mt19937_64 &rng) {
  int r = int(lambda.size());
  Matrix a = orthonormalColumns(T, r, rng, /*centred=*/true);
  Matrix q = orthonormalColumns(C, r, rng);
  std::vector<double> offset = gaussian(C, rng, 3.0);
  std::vector<float> x(T * C);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      double v = offset[c];
      for (int j = 0; j < r; ++j)
        v += a[t * r + j] * std::sqrt(lambda[j]) * q[c * r + j];
      x[t * C + c] = float(v);
    }
  return x;
}

//===----------------------------------------------------------------------===//
// Variance decomposition
//===----------------------------------------------------------------------===//

TEST(VarianceDecomposition, TwoSequencesByHand) {
  // Sequence 0: (0,0), (2,0), mean (1,0); sequence 1: (0,2), (0,4), mean
  // (0,3); g = (1/2, 3/2). Squared distances to g: 5/2, 9/2, 1/2, 13/2, so
  // total = 14/4 = 7/2; to the sequence means: 1 each, within = 1 = 2/7 of
  // it; ||m_n - g||^2 = 5/2 for both, between = 5/7.
  // Tolerance 1e-15: a few roundings of exact small numbers.
  const std::vector<float> x = {0, 0, 2, 0, 0, 2, 0, 4};
  const std::vector<int32_t> separate = {0, 1}, together = {0, 0};

  VarianceDecomposition v =
      varianceDecomposition(x.data(), 2, 2, 2, separate.data(), 2);
  EXPECT_NEAR(v.total, 3.5, 1e-15);
  EXPECT_NEAR(v.withinSequence, 2.0 / 7, 1e-15);
  EXPECT_NEAR(v.betweenSequences, 5.0 / 7, 1e-15);
  // One sequence per class: the class means are the sequence means.
  EXPECT_NEAR(v.betweenClasses, 5.0 / 7, 1e-15);
  EXPECT_NEAR(v.withinClasses, 0.0, 1e-15);

  // Both in class 0 (class 1 empty): the class mean is g.
  v = varianceDecomposition(x.data(), 2, 2, 2, together.data(), 2);
  EXPECT_NEAR(v.betweenClasses, 0.0, 1e-15);
  EXPECT_NEAR(v.withinClasses, 5.0 / 7, 1e-15);

  // No labels (a language model's windows): the same sequence terms, no
  // class terms.
  v = varianceDecomposition(x.data(), 2, 2, 2, nullptr, 0);
  EXPECT_NEAR(v.total, 3.5, 1e-15);
  EXPECT_NEAR(v.withinSequence, 2.0 / 7, 1e-15);
  EXPECT_NEAR(v.betweenSequences, 5.0 / 7, 1e-15);
  EXPECT_TRUE(std::isnan(v.betweenClasses));
  EXPECT_TRUE(std::isnan(v.withinClasses));
}

TEST(VarianceDecomposition, ClassesByHand) {
  // One token per sequence, C = 1: values 0, 2 (class 0) and 4, 10 (class
  // 1). g = 4, total = (16 + 4 + 0 + 36) / 4 = 14, all of it between
  // sequences. Class means 1 and 7: between classes (9 * 4) / 4 = 9 = 9/14,
  // within classes (1 + 1 + 9 + 9) / 4 = 5 = 5/14. Tolerance 1e-15.
  const std::vector<float> x = {0, 2, 4, 10};
  const std::vector<int32_t> labels = {0, 0, 1, 1};
  VarianceDecomposition v =
      varianceDecomposition(x.data(), 4, 1, 1, labels.data(), 2);
  EXPECT_NEAR(v.total, 14.0, 1e-15);
  EXPECT_NEAR(v.withinSequence, 0.0, 1e-15);
  EXPECT_NEAR(v.betweenSequences, 1.0, 1e-15);
  EXPECT_NEAR(v.betweenClasses, 9.0 / 14, 1e-15);
  EXPECT_NEAR(v.withinClasses, 5.0 / 14, 1e-15);
}

TEST(VarianceDecomposition, IdentitiesOnRandomData) {
  const int N = 7, T = 5, C = 6, K = 3;
  std::mt19937_64 rng(11);
  std::vector<double> values = gaussian(N * T * C, rng);
  std::vector<float> x(values.begin(), values.end());
  for (int n = 0; n < N; ++n) // Offsets per sequence so no term is tiny.
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c)
        x[(n * T + t) * C + c] += float(n % K) + 0.5f * float(n);
  std::vector<int32_t> labels(N);
  for (int n = 0; n < N; ++n)
    labels[n] = n % K;

  VarianceDecomposition v =
      varianceDecomposition(x.data(), N, T, C, labels.data(), K);
  // The total against the mean of all tokens taken directly (relative
  // 1e-12); the ANOVA identities hold to rounding (1e-12).
  std::vector<double> g(C, 0.0);
  for (int i = 0; i < N * T; ++i)
    for (int c = 0; c < C; ++c)
      g[c] += x[i * C + c] / double(N * T);
  double total = 0;
  for (int i = 0; i < N * T; ++i)
    for (int c = 0; c < C; ++c)
      total += std::pow(x[i * C + c] - g[c], 2) / (N * T);
  EXPECT_NEAR(v.total, total, 1e-12 * total);
  EXPECT_NEAR(v.withinSequence + v.betweenSequences, 1.0, 1e-12);
  EXPECT_NEAR(v.betweenClasses + v.withinClasses, v.betweenSequences, 1e-12);
  EXPECT_GT(v.withinSequence, 0.1);
  EXPECT_GT(v.betweenClasses, 0.1);
  EXPECT_GT(v.withinClasses, 0.01);
}

TEST(VarianceDecomposition, ConstantTokensGiveNaNFractions) {
  const std::vector<float> x(2 * 3 * 2, 1.5f);
  const std::vector<int32_t> labels = {0, 1};
  VarianceDecomposition v =
      varianceDecomposition(x.data(), 2, 3, 2, labels.data(), 2);
  EXPECT_EQ(v.total, 0.0);
  EXPECT_TRUE(std::isnan(v.withinSequence));
  EXPECT_TRUE(std::isnan(v.betweenClasses));
}

//===----------------------------------------------------------------------===//
// Neural collapse
//===----------------------------------------------------------------------===//

TEST(NeuralCollapse, CollapsedClassesHaveZeroNC1) {
  // Every sequence of class k has tokens mu_k + d and mu_k - d (small
  // integers, so every mean is exact): sequence means equal class means.
  const int N = 6, T = 2, C = 3, K = 3;
  const float classMeans[K][C] = {{1, 2, 0}, {-3, 0, 4}, {5, -1, -2}};
  std::vector<float> x(N * T * C);
  std::vector<int32_t> labels(N);
  for (int n = 0; n < N; ++n) {
    labels[n] = n % K;
    for (int c = 0; c < C; ++c) {
      float d = float((n + 1) * (c + 2) % 5);
      x[(n * T + 0) * C + c] = classMeans[labels[n]][c] + d;
      x[(n * T + 1) * C + c] = classMeans[labels[n]][c] - d;
    }
  }
  std::vector<double> h = sequenceMeans(x.data(), N, T, C);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      ASSERT_EQ(h[n * C + c], classMeans[labels[n]][c]);
  NeuralCollapse nc = neuralCollapse(h.data(), N, C, labels.data(), K, nullptr);
  EXPECT_EQ(nc.nc1, 0.0);
  EXPECT_TRUE(std::isnan(nc.classifierAlignment));
  // mu_G = (1, 1/3, 2/3); ||mu_0 - mu_G||^2 = 0 + 25/9 + 4/9 = 29/9.
  EXPECT_NEAR(nc.classMeanNorms[0], std::sqrt(29.0 / 9), 1e-15);
}

TEST(NeuralCollapse, RotatedSimplexETF) {
  std::mt19937_64 rng(5);
  for (auto [K, C] : {std::pair{3, 5}, std::pair{4, 4}, std::pair{4, 7}}) {
    // Vertices e_k - 1/K (norm sqrt((K-1)/K)), scaled, embedded in C
    // dimensions by a random orthogonal matrix and shifted. Three samples
    // per class, mu_k and mu_k +- delta, so each class mean is mu_k.
    Matrix Q = orthonormalColumns(C, C, rng);
    std::vector<double> shift = gaussian(C, rng, 2.0);
    const double scale = 3.7;
    Matrix vertices(K * C, 0.0);
    for (int k = 0; k < K; ++k)
      for (int c = 0; c < C; ++c)
        for (int j = 0; j < K; ++j)
          vertices[k * C + c] += scale * ((k == j) - 1.0 / K) * Q[c * C + j];
    const int N = 3 * K;
    std::vector<double> h(N * C);
    std::vector<int32_t> labels(N);
    for (int k = 0; k < K; ++k) {
      std::vector<double> delta = gaussian(C, rng, 0.3);
      for (int s = 0; s < 3; ++s) {
        labels[3 * k + s] = k;
        for (int c = 0; c < C; ++c)
          h[(3 * k + s) * C + c] =
              shift[c] + vertices[k * C + c] + (s - 1) * delta[c];
      }
    }
    // W = the centred means (times 2), rounded to float.
    std::vector<float> W(K * C);
    for (int i = 0; i < K * C; ++i)
      W[i] = float(2 * vertices[i]);

    NeuralCollapse nc =
        neuralCollapse(h.data(), N, C, labels.data(), K, W.data());
    // Tolerance 1e-10: the class means carry rounding of order 1e-16.
    EXPECT_NEAR(nc.etfDistance, 0.0, 1e-10) << "K=" << K << " C=" << C;
    // Tolerance 1e-6: W is float, relative rounding 6e-8 per entry.
    EXPECT_NEAR(nc.classifierAlignment, 0.0, 1e-6);
    ASSERT_EQ(nc.classMeanNorms.size(), size_t(K));
    for (double norm : nc.classMeanNorms)
      EXPECT_NEAR(norm, scale * std::sqrt((K - 1.0) / K), 1e-12);
    // Within-class spread of the +-delta samples, against the reference
    // (relative 1e-8).
    NeuralCollapse ref = referenceCollapse(h, N, C, labels, K, W);
    EXPECT_GT(nc.nc1, 0.0);
    EXPECT_NEAR(nc.nc1, ref.nc1, 1e-8 * ref.nc1);
  }
}

TEST(NeuralCollapse, ScaledAndPerturbedAgainstReference) {
  // Class means of unequal norms (not an ETF) and a classifier that only
  // roughly follows them: every measure against the reference. Tolerances:
  // etfDistance and alignment 1e-10 absolute, NC1 and norms 1e-8 relative.
  std::mt19937_64 rng(17);
  const int K = 4, C = 6, N = 4 * 9;
  Matrix Q = orthonormalColumns(C, C, rng);
  const double scales[K] = {1.0, 2.0, 0.5, 1.5};
  std::vector<double> h(N * C);
  std::vector<int32_t> labels(N);
  std::vector<double> noise = gaussian(N * C, rng, 0.4);
  for (int i = 0; i < N; ++i) {
    int k = labels[i] = i % K;
    for (int c = 0; c < C; ++c)
      h[i * C + c] = scales[k] * Q[c * C + k] + noise[i * C + c];
  }
  std::vector<double> perturbation = gaussian(K * C, rng, 0.2);
  std::vector<float> W(K * C);
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c)
      W[k * C + c] = float(scales[k] * Q[c * C + k] + perturbation[k * C + c]);

  NeuralCollapse nc =
      neuralCollapse(h.data(), N, C, labels.data(), K, W.data());
  NeuralCollapse ref = referenceCollapse(h, N, C, labels, K, W);
  EXPECT_NEAR(nc.nc1, ref.nc1, 1e-8 * ref.nc1);
  EXPECT_NEAR(nc.etfDistance, ref.etfDistance, 1e-10);
  EXPECT_NEAR(nc.classifierAlignment, ref.classifierAlignment, 1e-10);
  for (int k = 0; k < K; ++k)
    EXPECT_NEAR(nc.classMeanNorms[k], ref.classMeanNorms[k],
                1e-8 * ref.classMeanNorms[k]);
  EXPECT_GT(nc.etfDistance, 0.05);
  EXPECT_GT(nc.classifierAlignment, 0.05);
}

TEST(NeuralCollapse, NC1OnRandomDataAgainstReference) {
  // Unbalanced classes, C > K and C < K - 1 (where Sigma_B has rank C and
  // the pseudo-inverse inverts it on all of R^C). Relative 1e-8.
  std::mt19937_64 rng(23);
  for (auto [K, C, N] :
       {std::tuple{4, 6, 41}, std::tuple{5, 3, 30}, std::tuple{2, 8, 9}}) {
    std::vector<double> h = gaussian(N * C, rng);
    std::vector<double> offsets = gaussian(K * C, rng, 1.5);
    std::vector<int32_t> labels(N);
    for (int i = 0; i < N; ++i) {
      labels[i] = i < K ? i : (i * i) % K;
      for (int c = 0; c < C; ++c)
        h[i * C + c] += offsets[labels[i] * C + c];
    }
    NeuralCollapse nc =
        neuralCollapse(h.data(), N, C, labels.data(), K, nullptr);
    NeuralCollapse ref = referenceCollapse(h, N, C, labels, K, {});
    EXPECT_NEAR(nc.nc1, ref.nc1, 1e-8 * ref.nc1) << "K=" << K << " C=" << C;
    EXPECT_NEAR(nc.etfDistance, ref.etfDistance, 1e-10);
  }
}

TEST(NeuralCollapse, CoincidingClassMeansGiveNaN) {
  // Both classes have mean (1, 1): nothing separates them.
  const std::vector<double> h = {0, 0, 2, 2, 1, 0, 1, 2};
  const std::vector<int32_t> labels = {0, 0, 1, 1};
  NeuralCollapse nc = neuralCollapse(h.data(), 4, 2, labels.data(), 2, nullptr);
  EXPECT_TRUE(std::isnan(nc.nc1));
  EXPECT_TRUE(std::isnan(nc.etfDistance));
  EXPECT_EQ(nc.classMeanNorms, (std::vector<double>{0, 0}));
}

//===----------------------------------------------------------------------===//
// Spectral decay
//===----------------------------------------------------------------------===//

TEST(SpectralDecay, TokensInASubspaceWithChosenEigenvalues) {
  // Sequence 0: eigenvalues 52, 30, 17.5, 0.5 (of 100): partial sums .52,
  // .82, .995, 1. Sequence 1: 85, 14.5, 0.5: .85, .995, 1. Sequence 2: all
  // tokens equal. Components for 99%: 3, 2, 0; for 90%: 3, 2, 0; for 80%:
  // 2, 1, 0; for 50%: 1, 1, 0. No threshold is within 1e-3 of a partial
  // sum, far above the float rounding of the tokens.
  const std::vector<std::vector<double>> lambdas = {{52, 30, 17.5, 0.5},
                                                    {85, 14.5, 0.5}};
  std::mt19937_64 rng(3);
  // T < C (the Gram path) and T >= C (the covariance path).
  for (auto [T, C] : {std::pair{6, 10}, std::pair{12, 5}}) {
    std::vector<float> x;
    for (const auto &lambda : lambdas) {
      std::vector<float> sequence = sequenceWithSpectrum(lambda, T, C, rng);
      x.insert(x.end(), sequence.begin(), sequence.end());
    }
    x.insert(x.end(), size_t(T) * C, 0.25f);
    const int N = 3;

    SpectralDecay decay = spectralDecay(x.data(), N, T, C);
    EXPECT_DOUBLE_EQ(decay.meanComponents99, 5.0 / 3);
    EXPECT_DOUBLE_EQ(spectralDecay(x.data(), N, T, C, 0.9).meanComponents99,
                     5.0 / 3);
    EXPECT_DOUBLE_EQ(spectralDecay(x.data(), N, T, C, 0.8).meanComponents99,
                     1.0);
    EXPECT_DOUBLE_EQ(spectralDecay(x.data(), N, T, C, 0.5).meanComponents99,
                     2.0 / 3);

    // Normalised spectra averaged with the zero one; tolerance 1e-6 for
    // tokens rounded to float.
    const std::vector<double> expected = {(0.52 + 0.85) / 3, (0.30 + 0.145) / 3,
                                          (0.175 + 0.005) / 3, 0.005 / 3, 0};
    ASSERT_EQ(decay.meanSpectrum.size(), size_t(std::min(T, C)));
    for (size_t i = 0; i < decay.meanSpectrum.size(); ++i)
      EXPECT_NEAR(decay.meanSpectrum[i], i < expected.size() ? expected[i] : 0,
                  1e-6)
          << "T=" << T << " C=" << C << " i=" << i;
  }
}

TEST(SpectralDecay, GramAndCovariancePathsAgree) {
  // The same tokens with C = 4 (covariance path, T = 6 >= C) and padded with
  // five zero features to C = 9 (Gram path, T < C): zero features add only
  // zero eigenvalues. Both against the Jacobi reference; tolerance 1e-12.
  const int N = 5, T = 6, C = 4, padded = 9;
  std::mt19937_64 rng(29);
  std::vector<double> values = gaussian(N * T * C, rng);
  std::vector<float> x(values.begin(), values.end());
  for (int i = 0; i < N * T; ++i) // Unequal variances per feature.
    for (int c = 0; c < C; ++c)
      x[i * C + c] *= float(1 + 2 * c);
  std::vector<float> wide(N * T * padded, 0.0f);
  for (int i = 0; i < N * T; ++i)
    std::copy(&x[i * C], &x[i * C] + C, &wide[i * padded]);

  SpectralDecay narrow = spectralDecay(x.data(), N, T, C);
  SpectralDecay gram = spectralDecay(wide.data(), N, T, padded);
  ASSERT_EQ(narrow.meanSpectrum.size(), size_t(C));
  ASSERT_EQ(gram.meanSpectrum.size(), size_t(T));
  EXPECT_EQ(narrow.meanComponents99, gram.meanComponents99);
  for (int i = 0; i < T; ++i)
    EXPECT_NEAR(gram.meanSpectrum[i], i < C ? narrow.meanSpectrum[i] : 0.0,
                1e-12);

  std::vector<std::vector<double>> spectra = referenceSpectra(x, N, T, C);
  double components = 0;
  for (const auto &spectrum : spectra) {
    double partial = 0;
    int needed = 0;
    while (partial < 0.99)
      partial += spectrum[needed++];
    components += needed;
  }
  EXPECT_DOUBLE_EQ(narrow.meanComponents99, components / N);
  for (int i = 0; i < C; ++i) {
    double mean = 0;
    for (const auto &spectrum : spectra)
      mean += spectrum[i] / N;
    EXPECT_NEAR(narrow.meanSpectrum[i], mean, 1e-12);
  }
}

//===----------------------------------------------------------------------===//
// Linguistic collapse
//===----------------------------------------------------------------------===//

TEST(TokenCollapse, KeepsTheMostFrequentTargets) {
  // Two sequences of four tokens, C = 2. Targets by position:
  //   5, 3, 5, -1 | 3, 7, 5, 9
  // Counts: 5 x3, 3 x2, 7 x1, 9 x1; -1 is an ignored position.
  const std::vector<int32_t> next = {5, 3, 5, -1, 3, 7, 5, 9};
  const std::vector<float> x = {1,   0,   // target 5
                                0,   0,   // target 3
                                3,   0,   // target 5
                                100, -50, // ignored
                                0,   2,   // target 3
                                5,   5,   // target 7
                                2,   3,   // target 5
                                -7,  9};  // target 9

  // Top 2: target 5 (label 0) at positions 0, 2, 6, mean (2, 1); target 3
  // (label 1) at 1, 4, mean (0, 1). mu_G = (1, 1), M = [(1, 0), (-1, 0)]:
  // both norms 1, and K = 2 means are always an ETF. Sigma_B = diag(1, 0);
  // within-class x-deviations -1, 1, 0, 0, 0 give Sigma_W[0][0] = 2/5, so
  // NC1 = (2/5) / 2 = 1/5. Tolerance 1e-14 (through an eigendecomposition).
  NeuralCollapse top2 = tokenCollapse(x.data(), 2, 4, 2, next.data(), 2);
  EXPECT_NEAR(top2.nc1, 0.2, 1e-14);
  EXPECT_NEAR(top2.etfDistance, 0.0, 1e-14);
  EXPECT_TRUE(std::isnan(top2.classifierAlignment));
  ASSERT_EQ(top2.classMeanNorms.size(), 2u);
  EXPECT_NEAR(top2.classMeanNorms[0], 1.0, 1e-14);
  EXPECT_NEAR(top2.classMeanNorms[1], 1.0, 1e-14);

  // Top 3: 7 and 9 tie at one each; the smaller id, 7, becomes label 2.
  // The same as neuralCollapse on the kept samples, labelled by hand.
  const std::vector<double> kept = {1, 0, 0, 0, 3, 0, 0, 2, 5, 5, 2, 3};
  const std::vector<int32_t> labels = {0, 1, 0, 1, 2, 0};
  NeuralCollapse top3 = tokenCollapse(x.data(), 2, 4, 2, next.data(), 3);
  NeuralCollapse byHand =
      neuralCollapse(kept.data(), 6, 2, labels.data(), 3, nullptr);
  EXPECT_DOUBLE_EQ(top3.nc1, byHand.nc1);
  EXPECT_DOUBLE_EQ(top3.etfDistance, byHand.etfDistance);
  ASSERT_EQ(top3.classMeanNorms.size(), 3u);
  for (int k = 0; k < 3; ++k)
    EXPECT_DOUBLE_EQ(top3.classMeanNorms[k], byHand.classMeanNorms[k]);
  // Class 2 is the single token (5, 5); mu_G = ((2+0+5)/3, (1+1+5)/3).
  EXPECT_NEAR(top3.classMeanNorms[2], std::hypot(5 - 7.0 / 3, 5 - 7.0 / 3),
              1e-14);

  // More classes asked for than there are targets: all four are kept.
  EXPECT_EQ(
      tokenCollapse(x.data(), 2, 4, 2, next.data(), 10).classMeanNorms.size(),
      4u);
}

//===----------------------------------------------------------------------===//
// Refusals
//===----------------------------------------------------------------------===//

TEST(GeometryErrors, BadInputIsRefusedWithAMessage) {
  const std::vector<float> x(2 * 2 * 2, 1.0f);
  const std::vector<double> h = {0, 0, 1, 1};
  const std::vector<int32_t> labels = {0, 1}, outOfRange = {0, 2},
                             negative = {-1, 0};
  auto expectError = [](const std::function<void()> &f,
                        const std::string &needle) {
    std::string message = errorOf(f);
    EXPECT_NE(message.find(needle), std::string::npos)
        << "expected '" << needle << "' in '" << message << "'";
  };

  expectError(
      [&] { varianceDecomposition(x.data(), 2, 2, 2, labels.data(), 1); },
      "varianceDecomposition: K is 1, need at least 2 classes");
  expectError(
      [&] { varianceDecomposition(x.data(), 2, 2, 2, outOfRange.data(), 2); },
      "varianceDecomposition: label 2 of sample 1 is outside [0, 2)");
  expectError(
      [&] { varianceDecomposition(x.data(), 0, 2, 2, labels.data(), 2); },
      "varianceDecomposition: N is 0, must be positive");
  expectError(
      [&] { varianceDecomposition(nullptr, 2, 2, 2, labels.data(), 2); },
      "varianceDecomposition: x is null");

  expectError(
      [&] { neuralCollapse(h.data(), 2, 2, labels.data(), 1, nullptr); },
      "neuralCollapse: K is 1");
  expectError(
      [&] { neuralCollapse(h.data(), 2, 2, negative.data(), 2, nullptr); },
      "neuralCollapse: label -1 of sample 0 is outside [0, 2)");
  expectError(
      [&] { neuralCollapse(h.data(), 0, 2, labels.data(), 2, nullptr); },
      "neuralCollapse: N is 0");
  expectError(
      [&] { neuralCollapse(h.data(), 2, 2, labels.data(), 3, nullptr); },
      "neuralCollapse: class 2 has no samples");
  expectError([&] { neuralCollapse(h.data(), 2, 2, nullptr, 2, nullptr); },
              "neuralCollapse: labels is null");

  expectError([&] { sequenceMeans(x.data(), 0, 2, 2); },
              "sequenceMeans: N is 0");
  expectError([&] { spectralDecay(x.data(), 0, 2, 2); },
              "spectralDecay: N is 0");
  expectError([&] { spectralDecay(x.data(), 2, 2, 2, 0.0); },
              "spectralDecay: fraction is 0");
  expectError([&] { spectralDecay(x.data(), 2, 2, 2, 1.5); },
              "must lie in (0, 1]");

  const std::vector<int32_t> oneTarget = {4, 4, -1, 4};
  expectError([&] { tokenCollapse(x.data(), 2, 2, 2, oneTarget.data(), 1); },
              "tokenCollapse: topClasses is 1, need at least 2 classes");
  expectError([&] { tokenCollapse(x.data(), 2, 2, 2, oneTarget.data(), 5); },
              "tokenCollapse: 1 distinct targets, need at least 2 classes");
  expectError([&] { tokenCollapse(x.data(), 0, 2, 2, oneTarget.data(), 5); },
              "tokenCollapse: N is 0");
}

TEST(GeometryErrors, NonFiniteInputIsRefused) {
  const std::vector<double> h = {0, NAN, 1, 1};
  const std::vector<float> x = {0, 1, INFINITY, 1}, W = {1, 0, NAN, 1};
  const std::vector<double> finite = {0, 0, 1, 1};
  const std::vector<int32_t> labels = {0, 1}, next = {1, 2};
  EXPECT_EQ(errorOf([&] {
              neuralCollapse(h.data(), 2, 2, labels.data(), 2, nullptr);
            }),
            "neuralCollapse: h[1] is not finite");
  EXPECT_EQ(errorOf([&] {
              neuralCollapse(finite.data(), 2, 2, labels.data(), 2, W.data());
            }),
            "neuralCollapse: W[2] is not finite");
  EXPECT_EQ(errorOf([&] { spectralDecay(x.data(), 1, 2, 2); }),
            "spectralDecay: x[2] is not finite");
  EXPECT_EQ(errorOf([&] {
              varianceDecomposition(x.data(), 2, 1, 2, labels.data(), 2);
            }),
            "varianceDecomposition: x[2] is not finite");
  EXPECT_EQ(errorOf([&] { tokenCollapse(x.data(), 1, 2, 2, next.data(), 2); }),
            "tokenCollapse: x[2] is not finite");
}

} // namespace
