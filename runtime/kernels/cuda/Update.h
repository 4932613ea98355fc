//===- Update.h - The trainer's own arithmetic on the GPU -------*- C++ -*-===//
//
// Gradient sums, norms, clipping, AdamW and Muon for the trainer's CUDA
// device (runtime/device/cuda): the host's arithmetic (device/Device.h,
// Optimizer.cpp) written with correctly rounded intrinsics, so that nvcc
// contracts nothing into an FMA the host does not have. Elementwise updates
// match the host bit for bit; sums run in another order. Work is queued on
// the calling thread's stream; failures are recorded (Context.h).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_UPDATE_H
#define LAP_RUNTIME_KERNELS_CUDA_UPDATE_H

#include "runtime/kernels/KernelEnums.h"

#include <cstdint>

namespace lap::cuda {

/// Elements [offset, offset + size) of the parameters and gradients, and
/// [state, state + size) of the optimizer state: lap::device::Span's layout
/// (size at most 2^15).
struct UpdateSpan {
  int64_t offset, size, state;
};

/// lap::device::AdamWScalars' layout.
struct AdamWScalars {
  float decay, w1, beta2, w2, eps, stepSize, bc2Sqrt;
};

/// acc [n] = 0 + g × scale (`first`), else acc += g × scale.
void accumulate(float *acc, const float *g, float scale, int64_t n, bool first);

/// out [count] (device) = the fp64 sums of x² over spans [count] (device).
void squaredNorms(const float *x, const UpdateSpan *spans, int64_t count,
                  double *out);

/// x *= coef over the spans [count] (device).
void scale(float *x, const UpdateSpan *spans, int64_t count, float coef);

/// AdamW over the spans [count] (device): params and grads at the spans'
/// offsets, m and v at their state.
void adamw(float *params, const float *grads, float *m, float *v,
           const UpdateSpan *spans, int64_t count, const AdamWScalars &s);

/// buf [n] = lerp(buf, g, weight); u [n] = lerp(g, buf, momentum) with
/// Nesterov, else buf (weight: 1 - momentum as the caller rounds it).
void muonMomentum(float *buf, const float *g, float *u, int64_t n,
                  float momentum, float weight, bool nesterov);

/// x [rows, cols] ← its Newton-Schulz orthogonalisation, in place
/// (Optimizer.h's orthogonalize), its GEMMs at `precision`, in
/// scratch(kNewtonSchulz).
void orthogonalize(float *x, int64_t rows, int64_t cols, int64_t steps,
                   lap_matmul precision);

/// params [n] = params × decay − scale × u.
void applyUpdate(float *params, const float *u, int64_t n, float decay,
                 float scale);

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_UPDATE_H
