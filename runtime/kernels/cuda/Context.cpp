//===- Context.cpp - What every CUDA kernel call runs with ------*- C++ -*-===//

#include "runtime/kernels/cuda/Context.h"

#include <array>

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

} // namespace

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
