//===- DeviceCode.h - CUDA device code that also runs emulated --*- CUDA -*-===//
//
// Kernels that include this header are compiled by nvcc for the GPU and, as
// host C++, run by the emulator (test/unit/cuda/emulator) on any machine.
// Under nvcc it adds nothing. Built for the emulator (LAP_CUDA_EMULATOR) it
// declares the part of the CUDA language such kernels use, which the
// emulator defines: the qualifiers, threadIdx, blockIdx and blockDim,
// __syncthreads and __syncwarp, shuffles of float, double and long long,
// __fmul_rn, the vector types; and LAP_DYNAMIC_SHARED for dynamic shared
// memory. Any other compiler is an error: these definitions must never meet
// the real CUDA headers.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_DEVICECODE_H
#define LAP_RUNTIME_KERNELS_CUDA_DEVICECODE_H

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__

/// Declares `name`, the block's dynamic shared memory as an array of `type`.
#define LAP_DYNAMIC_SHARED(type, name) extern __shared__ type name[]

#elif defined(LAP_CUDA_EMULATOR)

#include <algorithm>

#define __global__
#define __device__
#define __shared__ static // one block runs at a time
#define __launch_bounds__(...)

struct alignas(16) uint4 {
  uint32_t x, y, z, w;
};
inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  return {x, y, z, w};
}
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}

struct dim3 {
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
  unsigned x, y, z;
};
extern thread_local dim3 threadIdx, blockIdx, blockDim;
void __syncthreads();
void __syncwarp();
float __shfl_xor_sync(unsigned mask, float x, int laneMask);
double __shfl_xor_sync(unsigned mask, double x, int laneMask);
long long __shfl_xor_sync(unsigned mask, long long x, int laneMask);
/// A product rounded on its own, never fused into an add: what nvcc's
/// __fmul_rn guarantees, and host C++ does for a call's result.
inline float __fmul_rn(float a, float b) { return a * b; }
using std::max;
using std::min;

namespace lap::cuda {
/// The emulated block's dynamic shared memory.
void *dynamicShared();
} // namespace lap::cuda

#define LAP_DYNAMIC_SHARED(type, name)                                         \
  type *name = static_cast<type *>(lap::cuda::dynamicShared())

#else
#error "DeviceCode.h: build with nvcc, or with LAP_CUDA_EMULATOR"
#endif

#endif // LAP_RUNTIME_KERNELS_CUDA_DEVICECODE_H
