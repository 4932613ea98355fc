//===- Rows.h - Rows of fp32 or bf16 tensors as fp32 -------------*- C++ -*-===//
//
// A kernel written once for fp32 rows serves a bf16 model's tensors too:
// it reads each row through fp32Row (the row itself, or its bf16 values
// widened into a buffer), makes its results in resultRow and hands them
// to storeRow (nothing to do at fp32; rounded to bf16, to nearest, ties to
// even, at bf16). The overloads pick the element type at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_ROWS_H
#define LAP_RUNTIME_KERNELS_CPU_ROWS_H

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/KernelEnums.h"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace lap::cpu {

/// Row i of an [n, c] tensor as fp32: the row itself, or a bf16 row's
/// values widened into `buffer` [c].
inline const float *fp32Row(const float *t, int64_t i, int64_t c, float *) {
  return t + i * c;
}
inline const float *fp32Row(const lap_bf16 *t, int64_t i, int64_t c,
                            float *buffer) {
  for (int64_t j = 0; j < c; ++j)
    buffer[j] = lap::bf16::value(t[i * c + j]);
  return buffer;
}

/// Where row i's fp32 result is made: the row itself, or for a bf16 tensor
/// `buffer` [c], which storeRow then rounds into the row.
inline float *resultRow(float *t, int64_t i, int64_t c, float *) {
  return t + i * c;
}
inline float *resultRow(lap_bf16 *, int64_t, int64_t, float *buffer) {
  return buffer;
}
inline void storeRow(float *, int64_t, int64_t, const float *) {}
inline void storeRow(lap_bf16 *t, int64_t i, int64_t c, const float *buffer) {
  for (int64_t j = 0; j < c; ++j)
    t[i * c + j] = lap::bf16::bits(buffer[j]);
}

/// The fp32 column sums a kernel's parameter gradient out [c] (nullable) is
/// made of: out itself, or for bf16 `buffer`'s, rounded by storeRow.
inline float *sumsFor(float *out, float *) { return out; }
inline float *sumsFor(lap_bf16 *out, float *buffer) {
  return out ? buffer : nullptr;
}

/// Row buffers for a range of rows: none at fp32, `rows` rows of c at bf16.
template <typename Element>
std::vector<float> rowBuffers(int64_t rows, int64_t c) {
  return std::vector<float>(std::is_same_v<Element, float> ? 0 : rows * c);
}

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_ROWS_H
