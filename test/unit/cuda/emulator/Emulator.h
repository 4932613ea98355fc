//===- Emulator.h - CUDA blocks as fibers on the CPU -------------*- C++ -*-===//
//
// Runs kernels written in runtime/kernels/cuda/DeviceCode.h's CUDA (and
// TensorCores.h's primitives) on the CPU, from their own source compiled as
// host C++. A block's CUDA threads are fibers on the calling thread, which
// a scheduler resumes in turn, each until it waits at a barrier
// (__syncthreads, or the warp's for a warp-wide operation) or ends; blocks
// run one after another. So the emulation is deterministic. The warp-wide
// operations (mma.sync m16n8k16, ldmatrix .x4 .trans, shuffles) exchange
// the lanes' registers and give each lane what the PTX ISA documents it
// receives; a warpgroup's wgmma (WarpGroupMma.h) gathers its 128 threads'
// registers and reads its shared-memory operands through their
// descriptors and the 128-byte swizzle, and leaves NaN in the accumulators
// until the thread waits for their group; stage barriers (mbarrier) and
// named barriers (WarpSpecialization.h) count arrivals as the hardware
// does, a copy arriving when it lands. An asynchronous copy (cp.async)
// writes NaN at once and its data when its thread waits for its group, so
// that reading a tile too early, or while it is being refilled, shows.
// What the emulator cannot show: the hardware's own rounding of a
// product's sum (it sums in fp32, in k order), its scheduling, and what
// nvcc makes of the source; nor a read of static shared memory no thread
// wrote (__shared__ arrays are static here: zero at first, then what the
// last block left; only dynamic shared memory starts as NaN); nor a
// missing wgmma fence. A barrier that not every thread reaches aborts with
// a message rather than hang; so do a misaligned ldmatrix row, cp.async
// address or wgmma operand, a wgmma operand (the thread's A registers, or
// shared memory) that changes before the wait for its group, and a thread
// that ends with copies or products not waited for.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_CUDA_EMULATOR_EMULATOR_H
#define LAP_TEST_UNIT_CUDA_EMULATOR_EMULATOR_H

#include "runtime/kernels/KernelEnums.h"
#include "runtime/kernels/cuda/DeviceCode.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lap::test::emulator {

/// Runs body() as a grid of blocks of threads, one block after another,
/// each with `sharedBytes` of dynamic shared memory (filled with 0xff
/// bytes, a bf16 NaN, so that reading what no thread wrote shows).
void run(dim3 grid, dim3 block, size_t sharedBytes,
         const std::function<void()> &body);

/// Makes the emulated device one of compute capability 9.0 (Hopper's
/// kernels, WarpGroupMma.h), or not (the default).
void setHopper(bool on);

/// The Launcher of the CUDA kernels' plans (runtime/kernels/cuda/
/// Launcher.h) on the emulator: launches run here, scratch is host memory
/// (all bits set, a NaN, until written), GEMMs are the CPU's (lap::cpu::gemm:
/// cuBLASLt cannot run here) and sorts std::sort's (for CUB's),
/// failures are recorded as Context.h records them (lap::cuda::takeFailure
/// below).
class Launcher {
public:
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), dim3 grid, dim3 block,
              size_t sharedBytes, const char *, Args... args) const {
    run(grid, block, sharedBytes, [&] { kernel(args...); });
    return true;
  }
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), int64_t blocks, int threads,
              size_t sharedBytes, const char *what, Args... args) const {
    return launch(kernel, dim3(unsigned(blocks)), dim3(unsigned(threads)),
                  sharedBytes, what, args...);
  }
  void *bytes(int slot, size_t n) const;
  /// The CPU kernels' chunk, 2^22 floats: small enough that the tests'
  /// shapes span several.
  int64_t chunkFloats() const { return int64_t(1) << 22; }
  void zero(void *p, size_t n) const;
  void copy(void *to, const void *from, size_t n) const;
  void gemm(lap_matmul precision, char transa, char transb, int64_t M,
            int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
            int64_t ldb, float beta, float *C, int64_t ldc) const;
  void gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
            const lap_bf16 *A, int64_t lda, const lap_bf16 *B, int64_t ldb,
            float beta, float *C, int64_t ldc) const;
  void gemmToBf16(char transa, char transb, int64_t M, int64_t N, int64_t K,
                  const lap_bf16 *A, int64_t lda, const lap_bf16 *B,
                  int64_t ldb, lap_bf16 *C) const;
  bool sortPairs(const uint32_t *keysIn, uint32_t *keysOut,
                 const uint32_t *valuesIn, uint32_t *valuesOut, int64_t n,
                 int bits) const;
  /// Whether the plans take Hopper's kernels: as setHopper last said.
  bool hopper() const;
  void fail(const std::string &why) const;

private:
  mutable std::map<int, std::vector<uint4>> scratch;
};

} // namespace lap::test::emulator

namespace lap::cuda {
/// Takes the first failure an emulated call recorded since the last take
/// (empty if none): Context.h's, for code built for the emulator.
std::string takeFailure();
} // namespace lap::cuda

#endif // LAP_TEST_UNIT_CUDA_EMULATOR_EMULATOR_H
