//===- Context.h - What every CUDA kernel call runs with --------*- C++ -*-===//
//
// The state a kernel call needs beyond its arguments: the stream the
// calling thread's model call runs on, the cuBLASLt handle, scratch memory
// of the kernels' own, and the first failure of the call. The model's entry
// points (runtime/model) set the stream before the generated code runs and
// read the failure after it: kernels have no status to return (their
// interface is Kernels.def's, shared with the CPU).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_CONTEXT_H
#define LAP_RUNTIME_KERNELS_CUDA_CONTEXT_H

#include "runtime/kernels/cuda/ScratchSlots.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace lap::cuda {

/// The stream kernels of this thread enqueue on (0: the legacy default).
cudaStream_t stream();
void setStream(cudaStream_t stream);

/// Records `what` as the call's failure unless one is recorded already
/// (the first failure is the informative one).
void fail(const std::string &what);
/// Takes the recorded failure, leaving none; empty when there was none.
std::string takeFailure();

/// Checks a CUDA runtime call: on failure records "<what>: <reason>" and
/// returns false.
bool check(cudaError_t status, const char *what);
/// The same for cuBLASLt.
bool check(cublasStatus_t status, const char *what);
/// After a kernel launch: records a launch failure (bad configuration).
bool checkLaunch(const char *kernel);

/// This thread's cuBLASLt handle, created on first use (null on failure,
/// recorded).
cublasLtHandle_t lt();

/// Device scratch of at least `bytes` for kernel `slot` (ScratchSlots.h:
/// a small integer naming the user, so that two kernels' scratch never
/// alias), kept and
/// grown between calls: allocated outside any captured region once the
/// first call has run. Null on failure (recorded).
void *scratch(int slot, size_t bytes);

/// Whether attention takes Hopper's kernels (AttentionHopper.h): the
/// calling thread's device is of compute capability 9.0, this library has
/// their sm_90a code, and allowHopperKernels(false) has not turned them
/// off. Off, the mma.sync kernels run there too: for the tests and the
/// benchmark, which run both families on one GPU. The switch is this copy
/// of the library's (a program's own; each model.so links its own copy).
bool hopperKernels();
void allowHopperKernels(bool allow);

/// Threads per block of the library's one-dimensional launches, and the
/// number of blocks that covers n of them.
constexpr int kBlock = 256;
inline unsigned blocksFor(long long n, int block = kBlock) {
  return unsigned((n + block - 1) / block);
}

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_CONTEXT_H
