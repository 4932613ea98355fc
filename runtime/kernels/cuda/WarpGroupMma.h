//===- WarpGroupMma.h - Hopper's warpgroup tensor-core primitives -*- CUDA -*-===//
//
// What the Hopper attention kernels (AttentionHopper.h) are written in, with
// DeviceCode.h's CUDA and TensorCores.h's: wgmma.mma_async on bf16 (m64nNk16,
// fp32 sums) with its operands in shared memory described by descriptors,
// or A in registers; its fence, commit and wait; the proxy fence that makes
// ordinary stores and cp.async's visible to it. Under nvcc they are the
// hardware's where the code is built for sm_90a and a trap elsewhere (no
// other target has them; Attention.h launches these kernels only on
// compute capability 9.0). Compiled as host C++ they are declared here and
// defined by the emulator (test/unit/cuda/emulator), with the semantics
// below, so that the kernels' own source runs on any machine.
//
// A warpgroup is four consecutive warps (128 threads) whose first warp's
// index is a multiple of 4. It computes D [64][N] (+)= A [64][16] B [16][N]:
//  - D in registers: warp w of the group holds rows 16w .. 16w + 15 as
//    N / 8 of mma.sync's C fragments (TensorCores.h): lane 4g + c's
//    d[j][e] is row 16w + g + 8 (e / 2), column 8j + 2c + e % 2;
//  - A in registers: warp w holds rows 16w .. 16w + 15 as mma.sync's A
//    fragment;
//  - operands in shared memory in the 128-byte swizzle: rows of 64 bf16
//    (128 bytes) whose 16-byte chunk i lies at chunk i ^ (row % 8), in
//    atoms of 8 rows (1024 bytes, 1024-aligned: the swizzle is of the
//    address's bits). A K-major operand (A, or B as B^T: rows along M or
//    N, k along the row) steps 16 k by 32 bytes within a row; its atoms of
//    8 rows lie `strideBytes` apart. An MN-major B (rows along k, N along
//    the row) has its atoms of 8 k rows `strideBytes` apart and its blocks
//    of 64 columns `leadingBytes` apart.
// wgmma is asynchronous: between the fence, the products and the wait for
// their group, the registers it reads or writes are the hardware's.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_WARPGROUPMMA_H
#define LAP_RUNTIME_KERNELS_CUDA_WARPGROUPMMA_H

#include "runtime/kernels/cuda/DeviceCode.h"

#include <cstdint>

namespace lap::cuda::hopper {

/// The byte offset of element (row, col) of a tile of 64-wide rows in the
/// 128-byte swizzle (the tile 1024-aligned).
__device__ inline uint32_t swizzled(int row, int col) {
  return uint32_t(row) * 128 + ((uint32_t(col) / 8 ^ uint32_t(row) % 8) * 16) +
         uint32_t(col) % 8 * 2;
}

#if defined(__CUDACC__)

// Whether this compilation has the sm_90a instructions.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LAP_WGMMA(...) asm volatile(__VA_ARGS__)
#else
#define LAP_WGMMA(...) __trap()
#endif

/// A shared-memory matrix descriptor of the 128-byte swizzle.
struct SharedMatrix {
  uint64_t bits;
};

/// The operand at `start` (shared memory), its 8-row atoms strideBytes
/// apart and (MN-major) its 64-column blocks leadingBytes apart.
__device__ inline SharedMatrix sharedMatrix(const void *start,
                                            uint32_t strideBytes,
                                            uint32_t leadingBytes = 16) {
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(start));
  return {uint64_t((at & 0x3ffff) >> 4) |
          uint64_t((leadingBytes & 0x3ffff) >> 4) << 16 |
          uint64_t((strideBytes & 0x3ffff) >> 4) << 32 | uint64_t(1) << 62};
}

/// `shared` (dynamic shared memory, with 1023 bytes to spare) advanced to
/// its first 1024-aligned byte in the shared window, where a swizzled tile
/// may start.
__device__ inline uint16_t *aligned1024(void *shared) {
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  return reinterpret_cast<uint16_t *>(static_cast<char *>(shared) +
                                      (1024 - at % 1024) % 1024);
}

/// Keeps the compiler from moving other work on these registers across
/// the fence or wait next to the call (wgmma reads and writes them behind
/// its back): after each wait, and before each fence, on the products'
/// accumulators and A registers.
template <int N> __device__ inline void fenceOperands(float (&x)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      asm volatile("" : "+f"(x[j][e])::"memory");
}
template <int N> __device__ inline void fenceOperands(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      asm volatile("" : "+r"(a[j][e])::"memory");
}

/// Orders this thread's earlier register writes before the group's next
/// wgmma (required before the first, and after touching their registers).
__device__ inline void fence() {
  LAP_WGMMA("wgmma.fence.sync.aligned;\n" ::: "memory");
}
/// Closes the group of the wgmmas this warpgroup issued since the last.
__device__ inline void commit() {
  LAP_WGMMA("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
/// Waits until at most Pending of the warpgroup's groups are in flight.
template <int Pending> __device__ inline void wait() {
  LAP_WGMMA("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// Orders the shared-memory writes this thread has made or seen (another
/// thread's, after a barrier) before wgmma's reads of them.
__device__ inline void fenceSharedForMma() {
  LAP_WGMMA("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The accumulator registers of an m64nNk16 wgmma, as its asm names them
// (%0 ...) and binds them (d [N / 8][4]).
#define LAP_WGMMA_D64                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "     \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31"
#define LAP_WGMMA_D128                                                         \
  LAP_WGMMA_D64                                                                \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "                  \
  "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, "     \
  "%57, %58, %59, %60, %61, %62, %63"
#define LAP_WGMMA_ROWS(d, r)                                                   \
  "+f"(d[r][0]), "+f"(d[r][1]), "+f"(d[r][2]), "+f"(d[r][3])
#define LAP_WGMMA_BIND64(d)                                                    \
  LAP_WGMMA_ROWS(d, 0), LAP_WGMMA_ROWS(d, 1), LAP_WGMMA_ROWS(d, 2),            \
      LAP_WGMMA_ROWS(d, 3), LAP_WGMMA_ROWS(d, 4), LAP_WGMMA_ROWS(d, 5),        \
      LAP_WGMMA_ROWS(d, 6), LAP_WGMMA_ROWS(d, 7)
#define LAP_WGMMA_BIND128(d)                                                   \
  LAP_WGMMA_BIND64(d), LAP_WGMMA_ROWS(d, 8), LAP_WGMMA_ROWS(d, 9),             \
      LAP_WGMMA_ROWS(d, 10), LAP_WGMMA_ROWS(d, 11), LAP_WGMMA_ROWS(d, 12),     \
      LAP_WGMMA_ROWS(d, 13), LAP_WGMMA_ROWS(d, 14), LAP_WGMMA_ROWS(d, 15)

/// d (+)= A B [16][N] (N = 64 or 128), both from shared memory, K-major;
/// d's old value is ignored unless `accumulate`.
__device__ inline void mmaShared(float (&d)[8][4], SharedMatrix a,
                                 SharedMatrix b, bool accumulate) {
  LAP_WGMMA("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{" LAP_WGMMA_D64 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : LAP_WGMMA_BIND64(d)
            : "l"(a.bits), "l"(b.bits), "r"(int(accumulate)));
}

__device__ inline void mmaShared(float (&d)[16][4], SharedMatrix a,
                                 SharedMatrix b, bool accumulate) {
  LAP_WGMMA("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{" LAP_WGMMA_D128 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
            : LAP_WGMMA_BIND128(d)
            : "l"(a.bits), "l"(b.bits), "r"(int(accumulate)));
}

/// d += A B [16][N] (N = 64 or 128), A in registers, B from shared memory,
/// MN-major.
__device__ inline void mmaRegisters(float (&d)[8][4], const uint32_t (&a)[4],
                                    SharedMatrix b) {
  LAP_WGMMA("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{" LAP_WGMMA_D64 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
            : LAP_WGMMA_BIND64(d)
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b.bits), "r"(1));
}

__device__ inline void mmaRegisters(float (&d)[16][4], const uint32_t (&a)[4],
                                    SharedMatrix b) {
  LAP_WGMMA("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{" LAP_WGMMA_D128 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
            : LAP_WGMMA_BIND128(d)
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b.bits), "r"(1));
}

#undef LAP_WGMMA_BIND128
#undef LAP_WGMMA_BIND64
#undef LAP_WGMMA_ROWS
#undef LAP_WGMMA_D128
#undef LAP_WGMMA_D64
#undef LAP_WGMMA

#else // the emulator's

/// The emulator's descriptor: where the operand starts, its strides.
struct SharedMatrix {
  const char *start;
  uint32_t strideBytes, leadingBytes;
};
inline SharedMatrix sharedMatrix(const void *start, uint32_t strideBytes,
                                 uint32_t leadingBytes = 16) {
  return {static_cast<const char *>(start), strideBytes, leadingBytes};
}
inline uint16_t *aligned1024(void *shared) {
  const auto at = reinterpret_cast<uintptr_t>(shared);
  return reinterpret_cast<uint16_t *>((at + 1023) & ~uintptr_t(1023));
}
template <int N> inline void fenceOperands(float (&)[N][4]) {}
template <int N> inline void fenceOperands(uint32_t (&)[N][4]) {}

// The products are computed when issued; d holds NaN until the thread
// waits for their group, so that reading it early shows.
void fence();
void commit();
void wait(int pending);
template <int Pending> inline void wait() { wait(Pending); }
inline void fenceSharedForMma() {}
void mmaShared(float (&d)[8][4], SharedMatrix a, SharedMatrix b,
               bool accumulate);
void mmaShared(float (&d)[16][4], SharedMatrix a, SharedMatrix b,
               bool accumulate);
void mmaRegisters(float (&d)[8][4], const uint32_t (&a)[4], SharedMatrix b);
void mmaRegisters(float (&d)[16][4], const uint32_t (&a)[4], SharedMatrix b);

#endif

} // namespace lap::cuda::hopper

#endif // LAP_RUNTIME_KERNELS_CUDA_WARPGROUPMMA_H
