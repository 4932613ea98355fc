//===- TensorCores.h - Warp-level tensor-core primitives ---------*- CUDA -*-===//
//
// What the tensor-core kernels (AttentionTensorCores.h) are written in:
// mma.sync m16n8k16 on bf16, ldmatrix's transposed load, bf16 conversions,
// 4- and 16-byte moves, and the CUDA built-ins they use. Under nvcc these
// are the hardware's. Compiled as host C++ they are declared here and
// defined by an emulator (test/unit/cuda/emulator), which runs a block as
// one host thread per CUDA thread and gives each warp-wide operation the
// semantics the PTX ISA documents: so the kernels' own source runs, and is
// tested, on any machine.
//
// Fragments of m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
// lane = 4 g + c (g = lane / 4, c = lane % 4); each 32-bit register holds
// two bf16 of consecutive k, the lower first.
//  - A (16 x 16, rows x k): a0 = A[g][2c..], a1 = A[g + 8][2c..],
//    a2 = A[g][2c + 8..], a3 = A[g + 8][2c + 8..];
//  - B (16 x 8, k x columns): b0 = B[2c..][g], b1 = B[2c + 8..][g];
//  - C (16 x 8, fp32): c0, c1 = C[g][2c], C[g][2c + 1]; c2, c3 the same
//    columns of row g + 8.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_TENSORCORES_H
#define LAP_RUNTIME_KERNELS_CUDA_TENSORCORES_H

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#else
#include "runtime/kernels/Bf16.h"

#include <algorithm>

// The CUDA language as the emulator provides it.
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
struct EmulatedIndex {
  unsigned x;
};
extern thread_local EmulatedIndex threadIdx, blockIdx;
void __syncthreads();
float __shfl_xor_sync(unsigned mask, float x, int laneMask);
using std::min;
#endif

/// Declares `name`, the block's dynamic shared memory as an array of uint4.
/// (Under nvcc the array itself: reached through a function, its accesses
/// cost registers.)
#ifdef __CUDACC__
#define LAP_DYNAMIC_SHARED(name) extern __shared__ uint4 name[]
#else
#define LAP_DYNAMIC_SHARED(name) uint4 *name = lap::cuda::dynamicShared()
#endif

namespace lap::cuda {

#ifdef __CUDACC__

/// c += A B on the tensor cores (fragments as in the header).
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                           uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Four transposed 8 x 8 bf16 matrices from shared memory: lanes 8j ..
/// 8j + 7 give the row addresses of matrix j (16 bytes each); lane 4g + c
/// receives in r[j] its rows 2c and 2c + 1 of column g.
__device__ inline void loadTransposed(uint32_t (&r)[4], const uint16_t *row) {
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
               "{%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}

__device__ inline float bf16Value(uint16_t bits) {
  return __bfloat162float(__ushort_as_bfloat16(bits));
}
/// x rounded to bf16 (to nearest, ties to even).
__device__ inline uint16_t bf16Bits(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

/// Two fp32 as bf16 in one register, lo first.
__device__ inline uint32_t packBf16(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  uint32_t bits;
  memcpy(&bits, &pair, sizeof bits);
  return bits;
}

/// 4 or 16 aligned bytes of bf16 elements.
__device__ inline uint32_t word(const uint16_t *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}
__device__ inline uint4 load16(const uint16_t *p) {
  return *reinterpret_cast<const uint4 *>(p);
}
__device__ inline void store16(uint16_t *p, uint4 x) {
  *reinterpret_cast<uint4 *>(p) = x;
}

#else // the emulator's

void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
void loadTransposed(uint32_t (&r)[4], const uint16_t *row);
uint4 *dynamicShared();

inline float bf16Value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
inline uint16_t bf16Bits(float x) { return lap::bf16::bits(x); }
inline uint32_t packBf16(float lo, float hi) {
  return uint32_t(bf16Bits(lo)) | uint32_t(bf16Bits(hi)) << 16;
}

inline uint32_t word(const uint16_t *p) {
  uint32_t x;
  memcpy(&x, p, sizeof x);
  return x;
}
inline uint4 load16(const uint16_t *p) {
  uint4 x;
  memcpy(&x, p, sizeof x);
  return x;
}
inline void store16(uint16_t *p, uint4 x) { memcpy(p, &x, sizeof x); }

#endif

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_TENSORCORES_H
