//===- Profile.h - The GEMMs' part of `lapc --profile` ----------*- C++ -*-===//
//
// A library built with --profile times every op (Profile.cpp); its GEMMs
// are also timed one by one, by shape and path, so that the table says how
// near the peak each GEMM of a step runs where it runs.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_PROFILE_H
#define LAP_RUNTIME_KERNELS_CPU_PROFILE_H

#include <cstdint>

namespace lap::cpu {

/// Whether this library is profiling: it has timed an op.
bool profiling();

/// One GEMM of op(A) op(B), [M, K] by [K, N] into C [M, N], with leading
/// dimensions lda, ldb and ldc, on `path`, took `seconds`.
void recordGemm(const char *path, char transa, char transb, int64_t M,
                int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc,
                double seconds);

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_PROFILE_H
