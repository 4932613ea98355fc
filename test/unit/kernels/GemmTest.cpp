//===- GemmTest.cpp - The fp32 GEMM's paths and the choice between them ---===//
//
// Every path of lap::cpu::gemm (sgemm, sgemm on padded copies, oneDNN's
// matmul) at every transpose, with dense leading dimensions and with rows
// 4 KiB apart (where the paths differ), beta 0 and 1, against a product in
// double: within 1e-5 of the largest sum of |products| (fp32 sums of 64 or
// 1100 products). gemmPath() picks the path the benchmark measured
// fastest on this instruction set: run once per kernel ISA (IsaTestMain).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using lap::cpu::GemmPath;
using namespace lap::test;

struct Case {
  char transa, transb;
  int64_t lda, ldb; // 0: dense
};

constexpr int64_t M = 40, kAliasing = 1024;

/// op(X) [rows, cols] stored as op reads it: its stored row count.
int64_t storedRows(char op, int64_t rows, int64_t cols) {
  return op == 'T' ? cols : rows;
}

/// op(X)[i][j] of X stored with leading dimension ld.
double at(const std::vector<float> &x, char op, int64_t ld, int64_t i,
          int64_t j) {
  return op == 'T' ? x[size_t(j * ld + i)] : x[size_t(i * ld + j)];
}

void expectProduct(GemmPath path, const Case &c, float beta, int64_t K = 64,
                   int64_t N = 24) {
  const int64_t lda = c.lda ? c.lda : (c.transa == 'T' ? M : K),
                ldb = c.ldb ? c.ldb : (c.transb == 'T' ? K : N), ldc = N + 3;
  std::mt19937 rng(7);
  const std::vector<float> A =
      randomVector(rng, size_t(storedRows(c.transa, M, K) * lda));
  const std::vector<float> B =
      randomVector(rng, size_t(storedRows(c.transb, K, N) * ldb));
  const std::vector<float> C0 = randomVector(rng, size_t(M * ldc));
  std::vector<float> C = C0;
  lap::cpu::gemm(path, c.transa, c.transb, M, N, K,
                 lap::cpu::fp32(A.data(), lda), lap::cpu::fp32(B.data(), ldb),
                 beta, C.data(), ldc);
  double scale = 0.0;
  std::vector<double> want(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = beta * double(C0[size_t(i * ldc + j)]),
             magnitude = std::fabs(sum);
      for (int64_t k = 0; k < K; ++k) {
        const double p =
            at(A, c.transa, lda, i, k) * at(B, c.transb, ldb, k, j);
        sum += p;
        magnitude += std::fabs(p);
      }
      want[size_t(i * N + j)] = sum;
      scale = std::max(scale, magnitude);
    }
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j)
      ASSERT_NEAR(C[size_t(i * ldc + j)], want[size_t(i * N + j)], 1e-5 * scale)
          << "C[" << i << "][" << j << "]";
    // The columns past N are not C's: untouched.
    for (int64_t j = N; j < ldc; ++j)
      ASSERT_EQ(C[size_t(i * ldc + j)], C0[size_t(i * ldc + j)]);
  }
}

TEST(Gemm, EveryPathComputesTheProduct) {
  const GemmPath paths[] = {GemmPath::Sgemm, GemmPath::Padded, GemmPath::Matmul,
                            GemmPath::ColumnBlocks};
  const Case cases[] = {{'N', 'N', 0, 0},
                        {'N', 'T', 0, 0},
                        {'T', 'N', 0, 0},
                        {'T', 'T', 0, 0},
                        {'T', 'N', kAliasing, 0},
                        {'T', 'N', 0, kAliasing},
                        {'N', 'T', 0, kAliasing},
                        {'N', 'N', kAliasing, kAliasing},
                        {'T', 'T', kAliasing, kAliasing}};
  for (GemmPath path : paths)
    for (const Case &c : cases)
      for (float beta : {0.0f, 1.0f}) {
        const std::string ops = {c.transa, c.transb};
        SCOPED_TRACE("path " + std::to_string(int(path)) + " " + ops + " lda " +
                     std::to_string(c.lda) + " ldb " + std::to_string(c.ldb) +
                     " beta " + std::to_string(beta));
        expectProduct(path, c, beta);
      }
}

TEST(Gemm, PaddedCopiesTakeKInBlocks) {
  // 1100 products: two blocks of 512 and one of 76, each copied, the
  // later ones summed onto C. Rows of 1100 along K are 2 x 4 KiB apart.
  const Case cases[] = {{'T', 'N', kAliasing, kAliasing},
                        {'N', 'T', 2 * kAliasing, 2 * kAliasing},
                        {'N', 'N', 2 * kAliasing, 0},
                        {'T', 'T', 0, 2 * kAliasing}};
  for (const Case &c : cases)
    for (float beta : {0.0f, 1.0f}) {
      const std::string ops = {c.transa, c.transb};
      SCOPED_TRACE(ops + " beta " + std::to_string(beta));
      expectProduct(GemmPath::Padded, c, beta, 1100);
    }
}

TEST(Gemm, PathsAsMeasured) {
  // Dense operands, and aliasing ones that are not walked across rows
  // (NN), stay on sgemm.
  EXPECT_EQ(lap::cpu::gemmPath('N', 'T', 256, 256, 256), GemmPath::Sgemm);
  EXPECT_EQ(lap::cpu::gemmPath('T', 'N', 256, 256, 1040), GemmPath::Sgemm);
  EXPECT_EQ(lap::cpu::gemmPath('N', 'N', 256, 8192, 1024), GemmPath::Sgemm);
  const bool avx512 = std::string(lap_cpu_isa()) == "avx512";
  // A weight gradient whose operand rows are 4 KiB apart: oneDNN's
  // AVX-512 matmul for a transposed A, padded copies otherwise.
  EXPECT_EQ(lap::cpu::gemmPath('T', 'N', 256, 1024, 256),
            avx512 ? GemmPath::Matmul : GemmPath::Padded);
  EXPECT_EQ(lap::cpu::gemmPath('T', 'N', 256, 256, 1024), GemmPath::Padded);
  // A forward product's weight (op 'T') of rows 4 KiB apart.
  EXPECT_EQ(lap::cpu::gemmPath('N', 'T', 256, 1024, 1024),
            avx512 ? GemmPath::Matmul : GemmPath::Sgemm);
}

TEST(Gemm, ColumnBlocksCoverEveryColumn) {
  // 4096 + 904 columns of C: two blocks, B read either way.
  const std::vector<Case> cases = {{'N', 'T', 0, 0}, {'T', 'N', 0, 0}};
  for (const Case &c : cases)
    for (float beta : {0.0f, 1.0f}) {
      const std::string ops = {c.transa, c.transb};
      SCOPED_TRACE(ops + " beta " + std::to_string(beta));
      expectProduct(GemmPath::ColumnBlocks, c, beta, 64, 5000);
    }
  // Wide outputs take column blocks below AVX-512 only.
  const bool avx512 = std::string(lap_cpu_isa()) == "avx512";
  EXPECT_EQ(lap::cpu::gemmPath('N', 'T', 8192, 256, 256),
            avx512 ? GemmPath::Sgemm : GemmPath::ColumnBlocks);
  EXPECT_EQ(lap::cpu::gemmPath('N', 'T', 4096, 256, 256), GemmPath::Sgemm);
}

TEST(Gemm, UnaliasedLeadingDimensions) {
  EXPECT_EQ(lap::cpu::unaliasedLd(8192), 8208);
  EXPECT_EQ(lap::cpu::unaliasedLd(1024), 1040);
  EXPECT_EQ(lap::cpu::unaliasedLd(768), 768);
  EXPECT_EQ(lap::cpu::unaliasedLd(8000), 8000);
}

} // namespace
