//===- Gemm.h - The kernels' one GEMM entry -----------------------*- C++ -*-===//
//
// Row-major C [M, N] = op(A) op(B) + beta C through oneDNN's dnnl_sgemm, on
// the shared libgomp pool (Linear.cpp). The kernels have no error channel
// and a failed GEMM would silently train on garbage, so failure aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_GEMM_H
#define LAP_RUNTIME_KERNELS_CPU_GEMM_H

#include <cstdint>

namespace lap::cpu {

/// op(X) is X for 'N', X^T for 'T'. K = 0 sets C to beta C.
void gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
          float *C, int64_t ldc);

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_GEMM_H
