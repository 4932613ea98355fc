//===- Launcher.h - What the kernels' plans launch through ------*- CUDA -*-===//
//
// Kernel families written in DeviceCode.h's CUDA launch their kernels
// through plans over a Launcher (Attention.h, DecodeAttention.h, Norms.h,
// ColumnSums.h, GeluEpilogues.h, Losses.h, Embedding.h, Rope.h, Tokens.h,
// Dropout.h); the plans call theirs `device`. A Launcher provides
//  - launch(kernel, grid, block, sharedBytes, what, args...), the grid and
//    block as dim3 or as counts (a row of blocks of threads): false if the
//    launch failed (recorded);
//  - bytes(slot, n): n bytes of scratch of the slot (ScratchSlots.h, whose
//    deviceScratch<T> counts in elements), or null after recording why;
//    chunkFloats(): how many floats a chunked kernel's chunk holds;
//  - zero(p, bytes) and copy(to, from, bytes) of device memory;
//  - gemm(...), gemmToBf16(...): Gemm.h's GEMMs, without epilogues;
//  - sortPairs(...): a stable radix sort of (key, value) pairs;
//  - hopper(): whether Hopper's kernels (wgmma, WarpGroupMma.h) run here;
//  - fail(why): records the call's failure.
// Launcher is the GPU's: all on the calling thread's stream, with
// cuBLASLt's GEMMs, CUB's sort, Context.h's scratch and failures. For .cu
// files only (it launches kernels). Built for the emulator
// (LAP_CUDA_EMULATOR: test/unit/cuda/emulator compiles those families' .cu
// files as host C++), it is the emulator's Launcher instead, so that the
// entry points themselves run on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_LAUNCHER_H
#define LAP_RUNTIME_KERNELS_CUDA_LAUNCHER_H

#ifdef LAP_CUDA_EMULATOR

#include "test/unit/cuda/emulator/Emulator.h"

namespace lap::cuda {
using Launcher = lap::test::emulator::Launcher;
} // namespace lap::cuda

#else

#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Gemm.h"

#include <climits>
#include <cstdint>
#include <string>

namespace lap::cuda {

/// The GPU's Launcher.
struct Launcher {
  /// Launches kernel on a grid of blocks with `bytes` of dynamic shared
  /// memory (opted in above the default 48 KiB) on the calling thread's
  /// stream; nothing for an empty grid. False when the launch failed
  /// (recorded).
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t bytes,
              const char *what, Args... args) const {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
      return true;
    if (bytes > 48 * 1024 &&
        !check(cudaFuncSetAttribute(kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(bytes)),
               what))
      return false;
    kernel<<<grid, block, bytes, stream()>>>(args...);
    return checkLaunch(what);
  }
  /// The same on a row of `blocks` blocks (beyond 2^31 - 1: a recorded
  /// failure).
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), int64_t blocks, int threads,
              size_t bytes, const char *what, Args... args) const {
    if (blocks > INT_MAX) {
      fail(std::string(what) + ": too many blocks");
      return false;
    }
    return launch(kernel, dim3(unsigned(blocks)), dim3(unsigned(threads)),
                  bytes, what, args...);
  }
  void *bytes(int slot, size_t n) const { return scratch(slot, n); }
  /// The floats a chunk of a chunked kernel holds (the lm_head's logits):
  /// 256 MiB, so that a 50,000-word vocabulary's chunks are 1,300 rows,
  /// GEMMs the tensor cores fill, and dW is summed over few of them.
  int64_t chunkFloats() const { return int64_t(1) << 26; }
  void zero(void *p, size_t n) const {
    if (n > 0)
      check(cudaMemsetAsync(p, 0, n, stream()), "cudaMemsetAsync");
  }
  void copy(void *to, const void *from, size_t n) const {
    if (n > 0)
      check(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToDevice, stream()),
            "cudaMemcpyAsync");
  }
  void gemm(lap_matmul precision, char transa, char transb, int64_t M,
            int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
            int64_t ldb, float beta, float *C, int64_t ldc) const {
    lap::cuda::gemm(precision, transa, transb, M, N, K, A, lda, B, ldb, beta, C,
                    ldc);
  }
  void gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
            const lap_bf16 *A, int64_t lda, const lap_bf16 *B, int64_t ldb,
            float beta, float *C, int64_t ldc) const {
    lap::cuda::gemm(transa, transb, M, N, K, A, lda, B, ldb, beta, C, ldc);
  }
  void gemmToBf16(char transa, char transb, int64_t M, int64_t N, int64_t K,
                  const lap_bf16 *A, int64_t lda, const lap_bf16 *B,
                  int64_t ldb, lap_bf16 *C) const {
    lap::cuda::gemmToBf16(transa, transb, M, N, K, A, lda, B, ldb, C);
  }
  /// keysOut, valuesOut [n] = the pairs (keysIn[i], valuesIn[i]) sorted
  /// stably by the keys' low `bits` bits (CUB's radix sort; its temporary
  /// storage in scratch slot kSortStorage). False if it failed (recorded).
  bool sortPairs(const uint32_t *keysIn, uint32_t *keysOut,
                 const uint32_t *valuesIn, uint32_t *valuesOut, int64_t n,
                 int bits) const;
  /// Whether attention takes Hopper's kernels here (Context.h's
  /// hopperKernels).
  bool hopper() const;
  void fail(const std::string &why) const { lap::cuda::fail(why); }
};

} // namespace lap::cuda

#endif

#endif // LAP_RUNTIME_KERNELS_CUDA_LAUNCHER_H
