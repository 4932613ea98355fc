//===- ColumnTerms.h - What a column sum adds up -----------------*- C++ -*-===//
//
// For Gemm.h's columnSums and ColumnSums.h's plan: plain data, free of
// device code.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_COLUMNTERMS_H
#define LAP_RUNTIME_KERNELS_CUDA_COLUMNTERMS_H

namespace lap::cuda {

/// The terms of a column sum over rows i of [n, c] tensors: a[i, j], times
/// (b[i, j] - shift[i]) * scale[i] where each is given (b [n, c]; shift,
/// scale [n]). a and b are fp32 or a bf16 model's bf16 (summed in fp32).
template <typename Element> struct ColumnTerms {
  const Element *a;
  const Element *b = nullptr;
  const float *shift = nullptr;
  const float *scale = nullptr;
};

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_COLUMNTERMS_H
