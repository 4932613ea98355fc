//===- Geometry.h - Geometry of token representations -----------*- C++ -*-===//
//
// The measurements of Zhang & Papyan's Laplacian-heads paper on the token
// representations of a layer: how much variance stays within a sequence
// (image) versus between sequences and classes, neural collapse of the
// sequence means (Papyan, Han & Donoho 2020), and the spectral decay of the
// tokens within each sequence.
//
// Inputs are plain row-major buffers: x [N, T, C] holds N sequences of T
// tokens of width C, labels [N] the class of each sequence in [0, K), W
// [K, C] the classifier rows. Everything is computed in double precision.
// Bad input (an empty or null buffer, a value that is not finite, K < 2, a
// label out of range, a class without samples) is a std::runtime_error
// naming the function and the problem.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ANALYSIS_GEOMETRY_H
#define LAP_RUNTIME_ANALYSIS_GEOMETRY_H

#include <cstdint>
#include <vector>

namespace lap::analysis {

/// An ANOVA of the tokens. With g the mean of all N*T tokens, m_n the mean
/// of sequence n and mu_k the mean of the sequence means of class k:
///   total            = mean over tokens    ||x - g||^2
/// is absolute; the rest are fractions of it:
///   withinSequence   = mean over tokens    ||x - m_n||^2
///   betweenSequences = mean over sequences ||m_n - g||^2
///   betweenClasses   = mean over sequences ||mu_k(n) - g||^2
///   withinClasses    = mean over sequences ||m_n - mu_k(n)||^2
/// so withinSequence + betweenSequences = 1 and betweenClasses +
/// withinClasses = betweenSequences. When total is 0 the fractions are NaN.
struct VarianceDecomposition {
  double total, withinSequence, betweenSequences, betweenClasses, withinClasses;
};

/// Classes without sequences are allowed here (they contribute nothing).
/// Without labels (null; K is then ignored) the sequences have no classes:
/// betweenClasses and withinClasses are NaN.
VarianceDecomposition varianceDecomposition(const float *x, int64_t N,
                                            int64_t T, int64_t C,
                                            const int32_t *labels, int64_t K);

/// Neural collapse of features h_n with class means mu_k, mu_G the mean of
/// the class means and M [K, C] the centred class means mu_k - mu_G:
///   nc1 = trace(Sigma_W Sigma_B^+) / K, Sigma_W the within-class covariance
///         (mean over samples), Sigma_B the between-class covariance (mean
///         over classes); the pseudo-inverse treats eigenvalues of Sigma_B
///         at or below kPseudoInverseTolerance times the largest as zero;
///   etfDistance = || M M^T / ||M M^T||_F - (I - 11^T/K) / sqrt(K - 1) ||_F,
///         0 when the class means form a simplex ETF;
///   classifierAlignment = || W / ||W||_F - M / ||M||_F ||_F (NaN without W
///         or when W is zero);
///   classMeanNorms[k] = ||mu_k - mu_G||.
/// When all class means coincide (M = 0) nc1, etfDistance and
/// classifierAlignment are NaN.
struct NeuralCollapse {
  double nc1, etfDistance, classifierAlignment;
  std::vector<double> classMeanNorms;
};

constexpr double kPseudoInverseTolerance = 1e-10;

/// Features h [N, C] with labels [N] in [0, K); every class needs a sample.
/// W [K, C] may be null.
NeuralCollapse neuralCollapse(const double *h, int64_t N, int64_t C,
                              const int32_t *labels, int64_t K, const float *W);

/// The mean token of each sequence of x [N, T, C], as [N, C].
std::vector<double> sequenceMeans(const float *x, int64_t N, int64_t T,
                                  int64_t C);

/// Per sequence, the eigenvalues of the covariance of its T tokens (centred
/// on the sequence mean), from the T x T Gram matrix when T < C (the same
/// non-zero spectrum).
///   meanComponents99: the mean over sequences of the smallest number of
///     leading eigenvalues whose sum reaches `fraction` of the trace (0 for a
///     sequence whose tokens are all equal);
///   meanSpectrum: the mean over sequences of the eigenvalues in descending
///     order, each sequence's normalised to sum 1 (all zeros for a sequence
///     whose tokens are all equal), of length min(T, C).
/// `fraction` must lie in (0, 1].
struct SpectralDecay {
  double meanComponents99;
  std::vector<double> meanSpectrum;
};

SpectralDecay spectralDecay(const float *x, int64_t N, int64_t T, int64_t C,
                            double fraction = 0.99);

/// Linguistic collapse of a language model: every token of x [N, T, C] is a
/// sample labelled by its next-token target nextTokens [N, T]. Negative
/// targets mark ignored positions (as in the loss) and are not samples. Only
/// samples whose target is among the `topClasses` most frequent targets
/// (ties to the smaller id) are kept; they are relabelled 0..K-1 by
/// frequency rank, K = min(topClasses, distinct targets) >= 2, and measured
/// by neuralCollapse without a classifier.
NeuralCollapse tokenCollapse(const float *x, int64_t N, int64_t T, int64_t C,
                             const int32_t *nextTokens, int64_t topClasses);

} // namespace lap::analysis

#endif // LAP_RUNTIME_ANALYSIS_GEOMETRY_H
