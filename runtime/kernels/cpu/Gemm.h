//===- Gemm.h - The kernels' one GEMM entry -----------------------*- C++ -*-===//
//
// Row-major C [M, N] = op(A) op(B) + beta C through oneDNN's dnnl_sgemm, on
// the shared libgomp pool (Linear.cpp). The kernels have no error channel
// and a failed GEMM would silently train on garbage, so failure aborts.
// A GEMM at bf16 precision (lap_matmul) multiplies its operands rounded to
// bf16 (operand()), accumulating in fp32.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_GEMM_H
#define LAP_RUNTIME_KERNELS_CPU_GEMM_H

#include "runtime/kernels/KernelEnums.h"

#include <cstdint>

namespace lap::cpu {

/// op(X) is X for 'N', X^T for 'T'. K = 0 sets C to beta C.
void gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
          float *C, int64_t ldc);

/// a [rows, cols] (leading dimension ld) as a GEMM at `precision` reads it:
/// a itself at fp32; at bf16 a copy rounded to bf16 (runtime/kernels/
/// Bf16.h, same leading dimension) in this thread's buffer `slot` (0 to 3,
/// kept between calls), so that a kernel rounds each operand once for all
/// its GEMMs.
const float *operand(lap_matmul precision, const float *a, int64_t rows,
                     int64_t cols, int64_t ld, int slot);

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_GEMM_H
