//===- GeluEpilogues.h - A tanh GELU and its slope after a GEMM -*- CUDA -*-===//
//
// What cuBLASLt's GELU epilogues compute, as kernels over a GEMM's fp32
// result: after the GEMMs of an fp32 model that no algorithm fuses them
// into (Gemm.cu), and as a bf16 model's fused linear layers where no
// algorithm does (linearGeluBf16, geluLinearGradBf16: the fp32 GEMM into
// scratch, then these, each result rounded once, as the CPU's kernels
// compute them). Plans over a Launcher (Launcher.h), so that the emulator
// runs them too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_GELUEPILOGUES_H
#define LAP_RUNTIME_KERNELS_CUDA_GELUEPILOGUES_H

#include "runtime/kernels/GeluTanh.h"
#include "runtime/kernels/KernelEnums.h"
#include "runtime/kernels/cuda/ColumnSums.h"
#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/ScratchSlots.h"

#include <cstdint>

namespace lap::cuda::epilogues {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

constexpr int kThreads = 256;

/// At [i, j] of [n, c] matrices of leading dimension ld: v = z + bias[j]
/// (bias nullable), pre = v (nullable), y = gelu_tanh(v). y may be z.
template <typename Element>
__global__ void geluRows(Element *y, Element *pre, const float *z,
                         const Element *bias, int64_t n, int64_t c,
                         int64_t ld) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * c)
    return;
  const int64_t at = (e / c) * ld + e % c;
  const float v = bias ? z[at] + load(bias[e % c]) : z[at];
  if (pre)
    store(pre[at], v);
  store(y[at], lap::gelu::value(v, tanhf(lap::gelu::tanhArgument(v))));
}

/// At [i, j] of [n, c] matrices of leading dimension ld: d *= gelu_tanh'
/// (pre), stored in grad as well (grad may be d).
template <typename Element>
__global__ void geluSlopeRows(Element *grad, float *d, const Element *pre,
                              int64_t n, int64_t c, int64_t ld) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * c)
    return;
  const int64_t at = (e / c) * ld + e % c;
  const float x = load(pre[at]);
  const float v =
      d[at] * lap::gelu::slope(x, tanhf(lap::gelu::tanhArgument(x)));
  d[at] = v;
  store(grad[at], v);
}

/// y = gelu_tanh(z + bias), pre = z + bias (geluRows) over [n, c].
template <typename Launcher, typename Element>
void gelu(const Launcher &device, Element *y, Element *pre, const float *z,
          const Element *bias, int64_t n, int64_t c, int64_t ld) {
  if (n * c > 0)
    device.launch(geluRows<Element>, (n * c + kThreads - 1) / kThreads,
                  kThreads, 0, "geluRows", y, pre, z, bias, n, c, ld);
}

/// d *= gelu_tanh'(pre), into grad too (geluSlopeRows) over [n, c].
template <typename Launcher, typename Element>
void geluSlope(const Launcher &device, Element *grad, float *d,
               const Element *pre, int64_t n, int64_t c, int64_t ld) {
  if (n * c > 0)
    device.launch(geluSlopeRows<Element>, (n * c + kThreads - 1) / kThreads,
                  kThreads, 0, "geluSlopeRows", grad, d, pre, n, c, ld);
}

/// Kernels.def's linear_gelu_forward_bf16: z [n, out] = x w^T in fp32
/// scratch (kBf16Result), then y = bf16(gelu_tanh(z + b)) and pre =
/// bf16(z + b).
template <typename Launcher>
void linearGeluBf16(const Launcher &device, lap_bf16 *y, lap_bf16 *pre,
                    const lap_bf16 *x, const lap_bf16 *w, const lap_bf16 *b,
                    int64_t n, int64_t in, int64_t out) {
  float *z = deviceScratch<float>(device, kBf16Result, n * out);
  if (!z)
    return;
  device.gemm('N', 'T', n, out, in, x, in, w, in, 0.0f, z, out);
  gelu(device, y, pre, z, b, n, out, out);
}

/// Kernels.def's gelu_linear_backward_bf16: d [n, in] = dy w in fp32
/// scratch (kBf16Result, with dbias's fp32 sums after it), times
/// gelu_tanh'(pre), rounded into dpre; dbias the column sums of the
/// unrounded d, rounded.
template <typename Launcher>
void geluLinearGradBf16(const Launcher &device, lap_bf16 *dpre, lap_bf16 *dbias,
                        const lap_bf16 *dy, const lap_bf16 *w,
                        const lap_bf16 *pre, int64_t n, int64_t in,
                        int64_t out) {
  float *d = deviceScratch<float>(device, kBf16Result, n * in + in);
  if (!d)
    return;
  device.gemm('N', 'N', n, in, out, dy, out, w, in, 0.0f, d, in);
  geluSlope(device, dpre, d, pre, n, in, in);
  if (!dbias)
    return;
  float *sums = d + n * in;
  columns::columnSums(device, sums, ColumnTerms<float>{d}, n, in);
  columns::roundToBf16(device, dbias, sums, 1, in);
}

} // namespace
} // namespace lap::cuda::epilogues

#endif // LAP_RUNTIME_KERNELS_CUDA_GELUEPILOGUES_H
