//===- Rope.h - rotary position embedding -----------------------*- CUDA -*-===//
//
// One block per token: its D/2 angles are computed once, in double as the
// CPU's table is (at p ~ 10^4 a float angle would be off by ~10^-3 rad), and
// rounded to float, so cos/sin agree with the CPU's; the H heads share them.
// Kernels in DeviceCode.h's CUDA, plans over a Launcher (Launcher.h): the
// emulator runs this source too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ROPE_H
#define LAP_RUNTIME_KERNELS_CUDA_ROPE_H

#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/Elements.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lap::cuda::rope {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

/// Threads per block at most.
constexpr int kMaxThreads = 256;

// x, y [B*T, H, D], block = token row; shared [2, D/2]: cos then sin.
// Rotates each head's channel pairs (i, i + D/2) by Sign * angle. y may
// equal x: a pair is read and written by one thread, and pairs are disjoint.
// Element: the tensors' type (fp32 or bf16); the rotation is in fp32.
template <int Sign, typename Element>
__global__ void ropeKernel(Element *y, const Element *x, int64_t T, int H,
                           int D, float base, int64_t first) {
  LAP_DYNAMIC_SHARED(float, table);
  const int half = D / 2;
  const int64_t row = blockIdx.x;
  const double p = double(first + row % T);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    double angle = p * pow(double(base), -2.0 * double(i) / double(D));
    table[i] = float(cos(angle));
    table[half + i] = float(sin(angle));
  }
  __syncthreads();
  const Element *xr = x + row * H * D;
  Element *yr = y + row * H * D;
  for (int e = threadIdx.x; e < H * half; e += blockDim.x) {
    int h = e / half, i = e % half;
    float a = load(xr[h * D + i]), b = load(xr[h * D + i + half]);
    float c = table[i], s = Sign * table[half + i];
    store(yr[h * D + i], a * c - b * s);
    store(yr[h * D + i + half], a * s + b * c);
  }
  if (D % 2) // an odd last channel has no partner
    for (int h = threadIdx.x; h < H; h += blockDim.x)
      yr[h * D + D - 1] = xr[h * D + D - 1];
}

/// y [B*T, H, D] = x rotated by Sign times the angles of positions first,
/// first + 1, ... of each sequence of T tokens: lap_cuda_rope_forward
/// (Sign 1), its backward (-1), and their _bf16 variants.
template <int Sign, typename Launcher, typename Element>
void rotate(const Launcher &device, Element *y, const Element *x, int64_t B,
            int64_t T, int64_t H, int64_t D, float base, int64_t first) {
  if (B * T * H * D == 0)
    return;
  // Enough threads for a token's pairs (or its odd channels when D = 1).
  const int64_t work = H * std::max<int64_t>(D / 2, 1);
  const int threads =
      int(std::min<int64_t>(kMaxThreads, (work + 31) / 32 * 32));
  device.launch(ropeKernel<Sign, Element>, B * T, threads,
                size_t(D / 2) * 2 * sizeof(float),
                Sign > 0 ? "rope_forward" : "rope_backward", y, x, T, int(H),
                int(D), base, first);
}

} // namespace
} // namespace lap::cuda::rope

#endif // LAP_RUNTIME_KERNELS_CUDA_ROPE_H
