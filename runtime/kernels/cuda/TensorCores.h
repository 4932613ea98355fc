//===- TensorCores.h - Warp-level tensor-core primitives ---------*- CUDA -*-===//
//
// What the tensor-core kernels (AttentionTensorCores.h) are written in, with
// DeviceCode.h's CUDA: mma.sync m16n8k16 on bf16, ldmatrix's transposed
// load, bf16 pairs, 4- and 16-byte moves, asynchronous copies (cp.async). Under
// nvcc these are the hardware's. Compiled as host C++ they are declared here
// and defined by the emulator (test/unit/cuda/emulator), which gives each
// warp-wide operation the semantics the PTX ISA documents: so the kernels' own
// source runs, and is tested, on any machine.
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

#include "runtime/kernels/cuda/DeviceCode.h"

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#else
#include "runtime/kernels/Bf16.h"
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

/// Starts copying 16 bytes from global memory to shared memory (both
/// 16-byte aligned), or zeros when !valid (`from` is then not read), without
/// holding a register: cp.async, completed by waitCopies.
__device__ inline void copyAsync16(uint16_t *to, const uint16_t *from,
                                   bool valid) {
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :
               : "r"(at), "l"(from), "r"(valid ? 16 : 0)
               : "memory");
}

/// Closes the group of the copies this thread started since the last.
__device__ inline void commitCopies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most Pending of this thread's closed groups are still in
/// flight. Other threads' copies are seen after a barrier that follows.
template <int Pending> __device__ inline void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

#else // the emulator's

void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
void loadTransposed(uint32_t (&r)[4], const uint16_t *row);

inline uint32_t packBf16(float lo, float hi) {
  return uint32_t(lap::bf16::bits(lo)) | uint32_t(lap::bf16::bits(hi)) << 16;
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

// The emulator reads the source when a copy starts, writes NaN to its
// destination at once and the data when the thread waits for its group: a
// read before the wait, or of a tile being refilled, sees NaN.
void copyAsync16(uint16_t *to, const uint16_t *from, bool valid);
void commitCopies();
void waitCopies(int pending);
template <int Pending> inline void waitCopies() { waitCopies(Pending); }

#endif

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_TENSORCORES_H
