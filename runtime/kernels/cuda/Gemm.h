//===- Gemm.h - The CUDA kernels' one GEMM entry, and column sums -*- C++ -*-===//
//
// Row-major C [M, N] = op(A) op(B) + beta C, the CPU's lap::cpu::gemm, through
// cuBLASLt with fp32 accumulation, on the calling thread's stream,
// optionally with a bias or GELU epilogue: at fp32 precision in fp32
// (CUBLAS_COMPUTE_32F: no TF32), at bf16 with bf16 products of the rounded
// operands (CUBLAS_COMPUTE_32F_FAST_16BF). And
// the library's deterministic column sums, which bias and norm-weight
// gradients are: fixed row chunks whose partials are added in an order
// fixed by the shape.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_GEMM_H
#define LAP_RUNTIME_KERNELS_CUDA_GEMM_H

#include "runtime/kernels/KernelEnums.h"
#include "runtime/kernels/cuda/ColumnTerms.h"

#include <cstdint>

namespace lap::cuda {

/// What the GEMM does besides C = op(A) op(B) + beta C.
enum class Epilogue {
  kNone,
  /// C[i, j] += bias[j]; bias [N] is read.
  kBias,
  /// bias[i] = sum_k op(A)[i, k], the bias gradient when op(A) is dy^T;
  /// bias [M] is written. Needs transa 'T' and lda == M (A is dy [K, M]).
  kBiasGradA,
  /// C = gelu_tanh(op(A) op(B) + bias) (bias [N] nullable, read); aux [M, N]
  /// (leading dimension ldc, nullable) gets what the GELU was applied to.
  /// Needs beta 0.
  kGelu,
  /// C = op(A) op(B) * gelu_tanh'(aux) (aux [M, N], leading dimension ldc,
  /// read); bias [N] (nullable) gets C's column sums. Needs beta 0.
  kGeluGrad,
};

/// op(X) is X for 'N', X^T for 'T'. K = 0 sets C to beta C (plus the bias;
/// a bias gradient is then 0); M = 0 or N = 0 leaves C alone (a bias
/// gradient is still made). cuBLASLt fuses the epilogue where it has an
/// algorithm for it; otherwise a kernel applies it after the GEMM. Failures
/// are recorded (Context.h).
void gemm(lap_matmul precision, char transa, char transb, int64_t M, int64_t N,
          int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc,
          Epilogue epilogue = Epilogue::kNone, float *bias = nullptr,
          float *aux = nullptr);

/// C [M, N] = op(A) op(B) + beta C of a bf16 model's bf16 tensors
/// (lap_bf16), in fp32: bf16 products accumulated in fp32
/// (CUBLAS_COMPUTE_32F), no epilogue; the caller rounds C (roundToBf16).
/// K = 0 sets C to beta C.
void gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
          const lap_bf16 *A, int64_t lda, const lap_bf16 *B, int64_t ldb,
          float beta, float *C, int64_t ldc);

/// C [M, N] (leading dimension N) = op(A) op(B) + bias [N] (nullable) of a
/// bf16 model's bf16 tensors, rounded to bf16 (to nearest, ties to even):
/// bf16 products summed in fp32, and cuBLASLt writes the bf16 result (with
/// the bias added before the rounding by its BIAS epilogue), with no fp32
/// copy of C. With a bias that no algorithm fuses (or K = 0), the fp32 GEMM
/// writes scratch kBf16Result, which roundToBf16 then rounds: a caller with
/// a bias must not hold that slot.
void gemmToBf16(char transa, char transb, int64_t M, int64_t N, int64_t K,
                const lap_bf16 *A, int64_t lda, const lap_bf16 *B, int64_t ldb,
                lap_bf16 *C, const lap_bf16 *bias = nullptr);

/// gemmToBf16 with `epilogue` (Epilogue's, on bf16 vectors: bias [N] read
/// by kBias and kGelu, bias [M] written by kBiasGradA, bias [N] written by
/// kGeluGrad, each nullable; aux [M, N], leading dimension N, written by
/// kGelu (nullable) and read by kGeluGrad), where cuBLASLt has an
/// algorithm that fuses it as it rounds the fp32 sums to bf16: true once
/// it ran (or failed, recorded: with no algorithm even for the plain GEMM).
/// False, having run nothing, where none fuses it (or K = 0, or C is
/// empty): the caller then computes it from the fp32 GEMM.
bool fusedGemmToBf16(char transa, char transb, int64_t M, int64_t N, int64_t K,
                     const lap_bf16 *A, int64_t lda, const lap_bf16 *B,
                     int64_t ldb, lap_bf16 *C, Epilogue epilogue,
                     lap_bf16 *bias = nullptr, lap_bf16 *aux = nullptr);

/// to [n, c] = from [n, c] + bias [c] (nullable), rounded to bf16 (to
/// nearest, ties to even).
void roundToBf16(lap_bf16 *to, const float *from, int64_t n, int64_t c,
                 const lap_bf16 *bias = nullptr);

/// Floats of device scratch columnSums needs for n rows of c.
int64_t columnSumsScratch(int64_t n, int64_t c);

/// out [c] = the column sums of the terms over n rows (0 when n = 0), in an
/// order fixed by the shape. partials: columnSumsScratch(n, c) floats of
/// device memory for the call, or null for scratch(kReductionPartials).
void columnSums(float *out, const ColumnTerms<float> &terms, int64_t n,
                int64_t c, float *partials = nullptr);
void columnSums(float *out, const ColumnTerms<lap_bf16> &terms, int64_t n,
                int64_t c, float *partials = nullptr);

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_GEMM_H
