//===- Gemm.h - The kernels' one GEMM entry ---------------------*- C++ -*-===//
//
// Row-major C [M, N] = op(A) op(B) + beta C through oneDNN, on the shared
// libgomp pool (Gemm.cpp). A kernel at bf16 precision (lap_matmul) hands
// its GEMMs operands rounded to bf16 (operand()), which they multiply with
// fp32 accumulation: as bf16 through oneDNN's bf16 matmul where this CPU
// has bf16 instructions (AVX512_BF16, AMX) for it, otherwise as fp32
// values with zero low bits through the fp32 GEMM. The product of two bf16
// values is exact in fp32, so both compute the same products. The kernels
// have no error channel and a failed GEMM would silently train on garbage,
// so failure aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_GEMM_H
#define LAP_RUNTIME_KERNELS_CPU_GEMM_H

#include "runtime/kernels/KernelEnums.h"

#include <cstdint>

namespace lap::cpu {

/// A row-major matrix a GEMM reads (leading dimension ld), of fp32 or, for
/// a rounded operand (operand()), of bf16 elements.
struct Matrix {
  const void *data = nullptr;
  int64_t ld = 0;
  bool bf16 = false;

  /// The matrix from its row `first` on.
  Matrix from(int64_t first) const {
    const int64_t offset = first * ld * (bf16 ? 2 : 4);
    return {static_cast<const char *>(data) + offset, ld, bf16};
  }

  /// The matrix from its column `first` on.
  Matrix fromColumn(int64_t first) const {
    const int64_t offset = first * (bf16 ? 2 : 4);
    return {static_cast<const char *>(data) + offset, ld, bf16};
  }
};

/// Whether bf16 GEMMs run on this CPU's bf16 instructions (oneDNN's bf16
/// matmul), as opposed to the fp32 GEMM on rounded values: asked once, at
/// the first GEMM of a bf16 operand, after LAP_CPU_ISA has limited oneDNN.
bool bf16Instructions();

/// An fp32 matrix as it is.
inline Matrix fp32(const float *a, int64_t ld) { return {a, ld, false}; }

/// a [rows, cols] (leading dimension ld) as a GEMM at `precision` reads
/// it: a itself at fp32; at bf16 a copy rounded to bf16 (to nearest, ties
/// to even: runtime/kernels/Bf16.h; same leading dimension) in this
/// thread's buffer `slot` (0 to 2, kept between calls), so that a kernel
/// rounds each operand once for all its GEMMs.
Matrix operand(lap_matmul precision, const float *a, int64_t rows, int64_t cols,
               int64_t ld, int slot);

/// a [rows, cols] of bf16 values (a bf16 model's tensor; leading dimension
/// ld) as a GEMM reads it: a itself where bf16Instructions(), else its
/// fp32 values in this thread's buffer `slot` (as operand()'s).
Matrix operand(const lap_bf16 *a, int64_t rows, int64_t cols, int64_t ld,
               int slot);

/// to [rows, cols] = from [rows, cols] + bias [cols] (nullable), rounded to
/// bf16 (to nearest, ties to even): a bf16 kernel's fp32 result, stored.
void roundToBf16(lap_bf16 *to, const float *from, int64_t rows, int64_t cols,
                 const lap_bf16 *bias = nullptr);

/// How an fp32 GEMM runs: oneDNN's sgemm on the operands as they are, on
/// copies of those whose leading dimension makes sgemm slow (Padded),
/// oneDNN's matmul primitive, or sgemm by blocks of C's columns
/// (ColumnBlocks). bf16 GEMMs always run the primitive.
enum class GemmPath { Sgemm, Padded, Matmul, ColumnBlocks };

/// The fastest path for op(A) op(B) of N columns with these leading
/// dimensions on this CPU, as bench/GemmBench.cpp measures them.
GemmPath gemmPath(char transa, char transb, int64_t N, int64_t lda,
                  int64_t ldb);

/// A leading dimension for a kernel's own [rows, cols] fp32 buffer that
/// GEMMs read at full speed: cols, or 64 bytes more where cols is a
/// multiple of 4 KiB, whose rows share cache sets while sgemm packs them.
inline int64_t unaliasedLd(int64_t cols) {
  return cols % 1024 == 0 ? cols + 16 : cols;
}

/// op(X) is X for 'N', X^T for 'T'; A and B both of fp32 or both of bf16.
/// K = 0 sets C to beta C.
void gemm(char transa, char transb, int64_t M, int64_t N, int64_t K, Matrix A,
          Matrix B, float beta, float *C, int64_t ldc);

/// gemm() on a given path: for benchmarks and tests.
void gemm(GemmPath path, char transa, char transb, int64_t M, int64_t N,
          int64_t K, Matrix A, Matrix B, float beta, float *C, int64_t ldc);

/// C [M, N] (leading dimension N) = op(A) op(B) + bias [N] (nullable),
/// rounded to bf16 (to nearest, ties to even): a bf16 kernel's GEMM result,
/// stored. With bf16 operands (bf16Instructions()) oneDNN's matmul rounds
/// its fp32 sums as it writes them (its conversion flushes fp32 subnormals
/// to zero), with no fp32 copy of C; otherwise the fp32 GEMM's result in
/// this thread's buffer is rounded by roundToBf16.
void gemmToBf16(char transa, char transb, int64_t M, int64_t N, int64_t K,
                Matrix A, Matrix B, lap_bf16 *C,
                const lap_bf16 *bias = nullptr);

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_GEMM_H
