//===- Geometry.cpp - Geometry of token representations ---------*- C++ -*-===//

#include "runtime/analysis/Geometry.h"
#include "runtime/analysis/InputChecks.h"

#include <lapacke.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

using namespace lap::analysis;

namespace {

using namespace checks;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void checkLabels(const char *function, const int32_t *labels, int64_t n,
                 int64_t K) {
  requireData(function, "labels", labels);
  if (K < 2)
    fail(function, "K is " + std::to_string(K) + ", need at least 2 classes");
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= K)
      fail(function, "label " + std::to_string(labels[i]) + " of sample " +
                         std::to_string(i) + " is outside [0, " +
                         std::to_string(K) + ")");
}

/// Eigenvalues, ascending, of the symmetric n x n row-major matrix `a`. With
/// `vectors`, `a` is overwritten by the eigenvectors: eigenvector r is
/// column r, a[i * n + r].
std::vector<double> symmetricEigen(const char *function, std::vector<double> &a,
                                   int64_t n, bool vectors) {
  if (n > INT_MAX)
    fail(function, "a " + std::to_string(n) + " x " + std::to_string(n) +
                       " eigenproblem is too large for LAPACK");
  std::vector<double> values(n);
  lapack_int info =
      LAPACKE_dsyevd(LAPACK_ROW_MAJOR, vectors ? 'V' : 'N', 'U', lapack_int(n),
                     a.data(), lapack_int(n), values.data());
  if (info != 0)
    fail(function, "eigendecomposition failed (LAPACK info " +
                       std::to_string(info) + "); are the inputs finite?");
  return values;
}

/// The squared Euclidean distance between a [C] and b [C].
template <typename A, typename B>
double squaredDistance(const A *a, const B *b, int64_t C) {
  double sum = 0;
  for (int64_t c = 0; c < C; ++c) {
    double d = double(a[c]) - double(b[c]);
    sum += d * d;
  }
  return sum;
}

/// Neural collapse of N samples whose features are rows of `features`
/// [*, C]: sample i is row rows[i], or row i when `rows` is null. Indexing
/// rows in place lets tokenCollapse measure the kept tokens of x without
/// copying them.
template <typename Real>
NeuralCollapse collapseOf(const char *function, const Real *features,
                          const int64_t *rows, int64_t N, int64_t C,
                          const int32_t *labels, int64_t K, const float *W) {
  auto row = [&](int64_t i) { return features + (rows ? rows[i] : i) * C; };

  std::vector<int64_t> counts(K, 0);
  std::vector<double> mu(K * C, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    const Real *h = row(i);
    double *m = &mu[labels[i] * C];
    ++counts[labels[i]];
    for (int64_t c = 0; c < C; ++c)
      m[c] += h[c];
  }
  for (int64_t k = 0; k < K; ++k) {
    if (counts[k] == 0)
      fail(function, "class " + std::to_string(k) + " has no samples");
    for (int64_t c = 0; c < C; ++c)
      mu[k * C + c] /= double(counts[k]);
  }

  // M, the class means centred on their mean (the global mean of a balanced
  // set; the definition weighs classes equally whatever their size).
  std::vector<double> M = mu;
  for (int64_t c = 0; c < C; ++c) {
    double global = 0;
    for (int64_t k = 0; k < K; ++k)
      global += mu[k * C + c];
    global /= double(K);
    for (int64_t k = 0; k < K; ++k)
      M[k * C + c] -= global;
  }

  NeuralCollapse result{kNaN, kNaN, kNaN, std::vector<double>(K)};
  std::vector<double> gram(K * K);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t l = 0; l <= k; ++l) {
      double dot = 0;
      for (int64_t c = 0; c < C; ++c)
        dot += M[k * C + c] * M[l * C + c];
      gram[k * K + l] = gram[l * K + k] = dot;
    }
  double gramNorm = 0, traceGram = 0;
  for (int64_t k = 0; k < K; ++k) {
    result.classMeanNorms[k] = std::sqrt(gram[k * K + k]);
    traceGram += gram[k * K + k];
  }
  for (double g : gram)
    gramNorm += g * g;
  gramNorm = std::sqrt(gramNorm);
  if (gramNorm == 0)
    return result;

  double etf = 0;
  double etfScale = 1 / std::sqrt(double(K - 1));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t l = 0; l < K; ++l) {
      double target = ((k == l ? 1.0 : 0.0) - 1.0 / double(K)) * etfScale;
      double d = gram[k * K + l] / gramNorm - target;
      etf += d * d;
    }
  result.etfDistance = std::sqrt(etf);

  // NC1 without any C x C matrix: with M M^T = sum_r g_r u_r u_r^T, Sigma_B
  // = M^T M / K has eigenvectors v_r = M^T u_r / sqrt(g_r) and eigenvalues
  // g_r / K, so trace(Sigma_W Sigma_B^+) / K = sum_r E[(v_r . d)^2] / g_r
  // over the within-class deviations d = h - mu_k.
  std::vector<double> eigenvalues =
      symmetricEigen(function, gram, K, /*vectors=*/true);
  // `gram` now holds the eigenvectors: u_r[k] = gram[k * K + r].
  double largest = eigenvalues[K - 1];
  std::vector<double> directions, kept;
  for (int64_t r = 0; r < K; ++r) {
    if (eigenvalues[r] <= kPseudoInverseTolerance * largest)
      continue;
    kept.push_back(eigenvalues[r]);
    double scale = 1 / std::sqrt(eigenvalues[r]);
    for (int64_t c = 0; c < C; ++c) {
      double v = 0;
      for (int64_t k = 0; k < K; ++k)
        v += gram[k * K + r] * M[k * C + c];
      directions.push_back(v * scale);
    }
  }
  double nc1 = 0;
  for (int64_t i = 0; i < N; ++i) {
    const Real *h = row(i);
    const double *m = &mu[labels[i] * C];
    for (size_t r = 0; r < kept.size(); ++r) {
      const double *v = &directions[r * C];
      double projection = 0;
      for (int64_t c = 0; c < C; ++c)
        projection += v[c] * (double(h[c]) - m[c]);
      nc1 += projection * projection / kept[r];
    }
  }
  result.nc1 = nc1 / double(N);

  if (W) {
    double normW = 0;
    for (int64_t i = 0; i < K * C; ++i)
      normW += double(W[i]) * double(W[i]);
    normW = std::sqrt(normW);
    if (normW > 0) {
      double normM = std::sqrt(traceGram), alignment = 0;
      for (int64_t i = 0; i < K * C; ++i) {
        double d = double(W[i]) / normW - M[i] / normM;
        alignment += d * d;
      }
      result.classifierAlignment = std::sqrt(alignment);
    }
  }
  return result;
}

} // namespace

std::vector<double> lap::analysis::sequenceMeans(const float *x, int64_t N,
                                                 int64_t T, int64_t C) {
  const char *function = "sequenceMeans";
  requireData(function, "x", x);
  requirePositive(function, "N", N);
  requirePositive(function, "T", T);
  requirePositive(function, "C", C);
  requireFinite(function, "x", x, N * T * C);
  std::vector<double> means(N * C, 0.0);
  for (int64_t n = 0; n < N; ++n) {
    double *m = &means[n * C];
    for (int64_t t = 0; t < T; ++t) {
      const float *token = x + (n * T + t) * C;
      for (int64_t c = 0; c < C; ++c)
        m[c] += token[c];
    }
    for (int64_t c = 0; c < C; ++c)
      m[c] /= double(T);
  }
  return means;
}

VarianceDecomposition
lap::analysis::varianceDecomposition(const float *x, int64_t N, int64_t T,
                                     int64_t C, const int32_t *labels,
                                     int64_t K) {
  const char *function = "varianceDecomposition";
  requireData(function, "x", x);
  requirePositive(function, "N", N);
  requirePositive(function, "T", T);
  requirePositive(function, "C", C);
  if (labels)
    checkLabels(function, labels, N, K);
  else
    K = 1; // one class of all sequences; its terms are not reported
  requireFinite(function, "x", x, N * T * C);

  std::vector<double> means = sequenceMeans(x, N, T, C);
  // Every sequence has T tokens, so the mean of all tokens is the mean of
  // the sequence means.
  std::vector<double> global(C, 0.0);
  std::vector<double> classMeans(K * C, 0.0);
  std::vector<int64_t> counts(K, 0);
  auto label = [&](int64_t n) { return labels ? labels[n] : 0; };
  for (int64_t n = 0; n < N; ++n) {
    ++counts[label(n)];
    for (int64_t c = 0; c < C; ++c) {
      global[c] += means[n * C + c];
      classMeans[label(n) * C + c] += means[n * C + c];
    }
  }
  for (int64_t c = 0; c < C; ++c)
    global[c] /= double(N);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C && counts[k] > 0; ++c)
      classMeans[k * C + c] /= double(counts[k]);

  // Each term is summed on its own rather than derived from the others, so
  // the ANOVA identities check the arithmetic instead of holding by fiat.
  double total = 0, withinSequence = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t) {
      const float *token = x + (n * T + t) * C;
      total += squaredDistance(token, global.data(), C);
      withinSequence += squaredDistance(token, &means[n * C], C);
    }
  double betweenSequences = 0, betweenClasses = 0, withinClasses = 0;
  for (int64_t n = 0; n < N; ++n) {
    const double *classMean = &classMeans[label(n) * C];
    betweenSequences += squaredDistance(&means[n * C], global.data(), C);
    betweenClasses += squaredDistance(classMean, global.data(), C);
    withinClasses += squaredDistance(&means[n * C], classMean, C);
  }
  total /= double(N * T);
  double tokenShare = total > 0 ? 1 / (total * double(N * T)) : kNaN;
  double sequenceShare = total > 0 ? 1 / (total * double(N)) : kNaN;
  if (!labels)
    return {total, withinSequence * tokenShare,
            betweenSequences * sequenceShare, kNaN, kNaN};
  return {total, withinSequence * tokenShare, betweenSequences * sequenceShare,
          betweenClasses * sequenceShare, withinClasses * sequenceShare};
}

NeuralCollapse lap::analysis::neuralCollapse(const double *h, int64_t N,
                                             int64_t C, const int32_t *labels,
                                             int64_t K, const float *W) {
  const char *function = "neuralCollapse";
  requireData(function, "h", h);
  requirePositive(function, "N", N);
  requirePositive(function, "C", C);
  checkLabels(function, labels, N, K);
  requireFinite(function, "h", h, N * C);
  if (W)
    requireFinite(function, "W", W, K * C);
  return collapseOf(function, h, nullptr, N, C, labels, K, W);
}

SpectralDecay lap::analysis::spectralDecay(const float *x, int64_t N, int64_t T,
                                           int64_t C, double fraction) {
  const char *function = "spectralDecay";
  requireData(function, "x", x);
  requirePositive(function, "N", N);
  requirePositive(function, "T", T);
  requirePositive(function, "C", C);
  if (!(fraction > 0 && fraction <= 1))
    fail(function,
         "fraction is " + std::to_string(fraction) + ", must lie in (0, 1]");
  requireFinite(function, "x", x, N * T * C);

  // X^T X [C, C] and X X^T [T, T] share their non-zero eigenvalues; take the
  // smaller. The 1/T of a covariance is left out: both outputs are ratios.
  const bool gram = T < C;
  const int64_t size = gram ? T : C;
  std::vector<double> means = sequenceMeans(x, N, T, C);
  std::vector<double> centred(T * C), matrix(size * size);
  SpectralDecay result{0.0, std::vector<double>(size, 0.0)};
  double components = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        centred[t * C + c] = double(x[(n * T + t) * C + c]) - means[n * C + c];

    std::fill(matrix.begin(), matrix.end(), 0.0);
    if (gram) {
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < C; ++c)
            dot += centred[i * C + c] * centred[j * C + c];
          matrix[i * T + j] = matrix[j * T + i] = dot;
        }
    } else {
      for (int64_t t = 0; t < T; ++t) {
        const double *token = &centred[t * C];
        for (int64_t a = 0; a < C; ++a)
          for (int64_t b = a; b < C; ++b)
            matrix[a * C + b] += token[a] * token[b];
      }
      for (int64_t a = 0; a < C; ++a)
        for (int64_t b = a + 1; b < C; ++b)
          matrix[b * C + a] = matrix[a * C + b];
    }

    std::vector<double> spectrum =
        symmetricEigen(function, matrix, size, /*vectors=*/false);
    std::reverse(spectrum.begin(), spectrum.end());
    // A positive semi-definite matrix: negative eigenvalues are rounding.
    double trace = 0;
    for (double &value : spectrum) {
      value = std::max(value, 0.0);
      trace += value;
    }
    if (trace == 0) // All tokens equal: no direction to count.
      continue;
    // Summed in the same order as the trace, so the last partial sum equals
    // it and the count never exceeds the spectrum.
    double partial = 0;
    int64_t needed = 0;
    while (partial < fraction * trace)
      partial += spectrum[needed++];
    components += double(needed);
    for (int64_t i = 0; i < size; ++i)
      result.meanSpectrum[i] += spectrum[i] / trace;
  }
  result.meanComponents99 = components / double(N);
  for (double &value : result.meanSpectrum)
    value /= double(N);
  return result;
}

NeuralCollapse lap::analysis::tokenCollapse(const float *x, int64_t N,
                                            int64_t T, int64_t C,
                                            const int32_t *nextTokens,
                                            int64_t topClasses) {
  const char *function = "tokenCollapse";
  requireData(function, "x", x);
  requireData(function, "nextTokens", nextTokens);
  requirePositive(function, "N", N);
  requirePositive(function, "T", T);
  requirePositive(function, "C", C);
  if (topClasses < 2)
    fail(function, "topClasses is " + std::to_string(topClasses) +
                       ", need at least 2 classes");
  requireFinite(function, "x", x, N * T * C);

  std::vector<int32_t> targets;
  for (int64_t i = 0; i < N * T; ++i)
    if (nextTokens[i] >= 0)
      targets.push_back(nextTokens[i]);
  std::sort(targets.begin(), targets.end());
  // (count, id) of every distinct target, most frequent first, ties to the
  // smaller id.
  std::vector<std::pair<int64_t, int32_t>> frequency;
  for (size_t i = 0; i < targets.size();) {
    size_t j = i;
    while (j < targets.size() && targets[j] == targets[i])
      ++j;
    frequency.emplace_back(int64_t(j - i), targets[i]);
    i = j;
  }
  std::sort(frequency.begin(), frequency.end(), [](auto &a, auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  const int64_t K = std::min<int64_t>(topClasses, frequency.size());
  if (K < 2)
    fail(function, std::to_string(frequency.size()) +
                       " distinct targets, need at least 2 classes");

  std::unordered_map<int32_t, int32_t> rank;
  for (int64_t k = 0; k < K; ++k)
    rank.emplace(frequency[k].second, int32_t(k));
  std::vector<int64_t> rows;
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < N * T; ++i) {
    auto found = rank.find(nextTokens[i]);
    if (found == rank.end())
      continue;
    rows.push_back(i);
    labels.push_back(found->second);
  }
  return collapseOf(function, x, rows.data(), int64_t(rows.size()), C,
                    labels.data(), K, nullptr);
}
