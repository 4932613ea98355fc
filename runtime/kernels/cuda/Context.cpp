//===- Context.cpp - What every CUDA kernel call runs with ------*- C++ -*-===//

#include "runtime/kernels/cuda/Context.h"

#include <array>
#include <atomic>

namespace {

struct Scratch {
  void *pointer = nullptr;
  size_t bytes = 0;
};

struct ThreadState {
  cudaStream_t stream = nullptr;
  std::string failure;
  cublasLtHandle_t lt = nullptr;
  std::array<Scratch, lap::cuda::kScratchSlots> scratch{};

  ~ThreadState() {
    for (Scratch &s : scratch)
      if (s.pointer)
        cudaFree(s.pointer);
    if (lt)
      cublasLtDestroy(lt);
  }
};

ThreadState &state() {
  thread_local ThreadState s;
  return s;
}

std::atomic<bool> hopperAllowed{true};

} // namespace

bool lap::cuda::hopperKernels() {
#ifdef LAP_CUDA_SM90A
  int device = 0, major = 0, minor = 0;
  return hopperAllowed.load(std::memory_order_relaxed) &&
         cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                device) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                                device) == cudaSuccess &&
         major == 9 && minor == 0;
#else
  return false;
#endif
}

void lap::cuda::allowHopperKernels(bool allow) {
  hopperAllowed.store(allow, std::memory_order_relaxed);
}

cudaStream_t lap::cuda::stream() { return state().stream; }
void lap::cuda::setStream(cudaStream_t stream) { state().stream = stream; }

void lap::cuda::fail(const std::string &what) {
  if (state().failure.empty())
    state().failure = what;
}

std::string lap::cuda::takeFailure() {
  std::string failure;
  failure.swap(state().failure);
  return failure;
}

bool lap::cuda::check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return true;
  fail(std::string(what) + ": " + cudaGetErrorString(status));
  return false;
}

bool lap::cuda::check(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  fail(std::string(what) + ": cuBLASLt status " + std::to_string(int(status)));
  return false;
}

bool lap::cuda::checkLaunch(const char *kernel) {
  return check(cudaGetLastError(), kernel);
}

cublasLtHandle_t lap::cuda::lt() {
  ThreadState &s = state();
  if (!s.lt && !check(cublasLtCreate(&s.lt), "cublasLtCreate"))
    s.lt = nullptr;
  return s.lt;
}

void *lap::cuda::scratch(int slot, size_t bytes) {
  Scratch &s = state().scratch[slot];
  if (s.bytes >= bytes)
    return s.pointer;
  if (s.pointer) {
    // The old buffer may still be read by queued work.
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    cudaFree(s.pointer);
    s = {};
  }
  if (!check(cudaMalloc(&s.pointer, bytes), "cudaMalloc (kernel scratch)"))
    return nullptr;
  s.bytes = bytes;
  return s.pointer;
}
