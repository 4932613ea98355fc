//===- Rope.cu - rotary position embedding ----------------------*- C++ -*-===//
//
// One block per token: its D/2 angles are computed once, in double as the
// CPU's table is (at p ~ 10^4 a float angle would be off by ~10^-3 rad), and
// rounded to float, so cos/sin agree with the CPU's; the H heads share them.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/Kernels.h"

#include <algorithm>

using lap::cuda::load;
using lap::cuda::store;

namespace {

// x, y [B*T, H, D], block = token row; shared [2, D/2]: cos then sin.
// Rotates each head's channel pairs (i, i + D/2) by Sign * angle. y may
// equal x: a pair is read and written by one thread, and pairs are disjoint.
// Element: the tensors' type (fp32 or bf16); the rotation is in fp32.
template <int Sign, typename Element>
__global__ void ropeKernel(Element *y, const Element *x, int64_t T, int H,
                           int D, float base, int64_t first) {
  extern __shared__ float table[];
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

template <int Sign, typename Element>
void rotate(Element *y, const Element *x, int64_t B, int64_t T, int64_t H,
            int64_t D, float base, int64_t first, const char *name) {
  if (B * T * H * D == 0)
    return;
  // Enough threads for a token's pairs (or its odd channels when D = 1).
  int64_t work = H * std::max<int64_t>(D / 2, 1);
  int threads =
      int(std::min<int64_t>(lap::cuda::kBlock, (work + 31) / 32 * 32));
  size_t shared = size_t(D / 2) * 2 * sizeof(float);
  ropeKernel<Sign><<<unsigned(B * T), threads, shared, lap::cuda::stream()>>>(
      y, x, T, int(H), int(D), base, first);
  lap::cuda::checkLaunch(name);
}

} // namespace

extern "C" void lap_cuda_rope_forward(float *y, const float *x, int64_t B,
                                      int64_t T, int64_t H, int64_t D,
                                      float base, int64_t first) {
  rotate<1>(y, x, B, T, H, D, base, first, "rope_forward");
}

extern "C" void lap_cuda_rope_backward(float *dx, const float *dy, int64_t B,
                                       int64_t T, int64_t H, int64_t D,
                                       float base, int64_t first) {
  rotate<-1>(dx, dy, B, T, H, D, base, first, "rope_backward");
}

extern "C" void lap_cuda_rope_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                           int64_t B, int64_t T, int64_t H,
                                           int64_t D, float base,
                                           int64_t first) {
  rotate<1>(y, x, B, T, H, D, base, first, "rope_forward_bf16");
}

extern "C" void lap_cuda_rope_backward_bf16(lap_bf16 *dx, const lap_bf16 *dy,
                                            int64_t B, int64_t T, int64_t H,
                                            int64_t D, float base,
                                            int64_t first) {
  rotate<-1>(dx, dy, B, T, H, D, base, first, "rope_backward_bf16");
}
