//===- Orthogonalize.h - Muon's Newton-Schulz step on the host --*- C++ -*-===//
//
// The host device's orthogonalisation (Device::orthogonalize), also called
// directly by the optimizer's tests; the GPU's is cuda::orthogonalize
// (runtime/kernels/cuda/Update.h).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DEVICE_HOST_ORTHOGONALIZE_H
#define LAP_RUNTIME_DEVICE_HOST_ORTHOGONALIZE_H

#include "runtime/kernels/KernelEnums.h"

#include <cstdint>

namespace lap::device {

/// Muon's orthogonalisation (Keller Jordan's zeropower_via_newtonschulz5):
/// X = G / (||G||_F + 1e-7), transposed when rows > cols, then `steps`
/// quintic iterations X ← aX + (bA + cA²)X with A = XXᵀ and (a, b, c) =
/// (3.4445, -4.7750, 2.0315). The result's singular values lie near 1 (in
/// about [0.7, 1.2], not exactly 1: the quintic trades accuracy for speed).
/// fp32 storage and accumulation; the GEMMs' operands rounded to bf16 at
/// `precision` LAP_MATMUL_BF16 (nanochat runs it all in bf16). `out` may
/// equal `g`.
void orthogonalize(const float *g, float *out, int64_t rows, int64_t cols,
                   int64_t steps, lap_matmul precision);

} // namespace lap::device

#endif // LAP_RUNTIME_DEVICE_HOST_ORTHOGONALIZE_H
