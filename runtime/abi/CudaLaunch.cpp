//===- CudaLaunch.cpp - The generated GPU kernels, loaded and launched -*- C++ -*-===//
//
// lapc embeds the kernels it generates in model.so (lap_gen_cuda_image: a
// fatbin of their cubin and PTX, which the driver compiles for a
// later GPU); the host code launches them by name through lap_cuda_launch
// and finds their constants through lap_cuda_symbol. The fatbin is loaded
// once, as a context-independent CUDA library, at the first call.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Context.h"

#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

extern "C" {
extern const char lap_gen_cuda_image[];
}

namespace {

/// The generated kernels: the loaded library and the handles looked up so
/// far (keyed by the name's address: the host code passes each name as
/// one constant string).
struct Image {
  std::mutex mutex;
  cudaLibrary_t library = nullptr;
  std::map<const char *, cudaKernel_t> kernels;
  std::map<std::pair<int, const char *>, void *> symbols;

  bool load() {
    if (library)
      return true;
    return lap::cuda::check(cudaLibraryLoadData(&library, lap_gen_cuda_image,
                                                nullptr, nullptr, 0, nullptr,
                                                nullptr, 0),
                            "loading the model's GPU kernels");
  }
};

Image &image() {
  static Image i;
  return i;
}

/// Threads per block of a generated loop: whole warps, so that a warp's
/// lanes run one iteration (lanes 32) and agree on its bound.
constexpr int kLoopBlock = 256;
static_assert(kLoopBlock % 32 == 0);
/// The most parameters a generated kernel takes (the values its loop uses).
constexpr int64_t kMaxSlots = 256;

} // namespace

extern "C" {

/// Runs generated kernel `name` on the thread's stream over n work items
/// (iterations, or a thread's several), each on `lanes` threads (1 or 32),
/// or on a block of its own (0); frame holds its `slots` parameters, 8
/// bytes each, the trip count last.
void lap_cuda_launch(const char *name, int64_t n, int64_t lanes, int64_t *frame,
                     int64_t slots) {
  if (n <= 0)
    return;
  if (slots > kMaxSlots) {
    lap::cuda::fail(std::string("kernel ") + name + " takes too many values");
    return;
  }
  cudaKernel_t kernel = nullptr;
  {
    Image &i = image();
    std::lock_guard<std::mutex> lock(i.mutex);
    if (!i.load())
      return;
    auto [at, inserted] = i.kernels.try_emplace(name, nullptr);
    if (inserted &&
        !lap::cuda::check(cudaLibraryGetKernel(&at->second, i.library, name),
                          name)) {
      i.kernels.erase(at);
      return;
    }
    kernel = at->second;
  }
  std::array<void *, kMaxSlots> parameters;
  for (int64_t k = 0; k < slots; ++k)
    parameters[k] = frame + k;
  const int64_t blocks =
      lanes == 0 ? n : (n * lanes + kLoopBlock - 1) / kLoopBlock;
  if (blocks > INT32_MAX) {
    lap::cuda::fail(std::string("kernel ") + name + " needs " +
                    std::to_string(blocks) + " blocks, over CUDA's 2^31 - 1");
    return;
  }
  const dim3 grid(static_cast<unsigned>(blocks)), block(kLoopBlock);
  lap::cuda::check(cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                                    grid, block, parameters.data(), 0,
                                    lap::cuda::stream()),
                   name);
}

/// The device address of the generated code's constant `name` on the
/// current device (null on failure, recorded).
void *lap_cuda_symbol(const char *name) {
  int device = 0;
  if (!lap::cuda::check(cudaGetDevice(&device), "cudaGetDevice"))
    return nullptr;
  Image &i = image();
  std::lock_guard<std::mutex> lock(i.mutex);
  if (!i.load())
    return nullptr;
  auto [at, inserted] = i.symbols.try_emplace({device, name}, nullptr);
  size_t bytes = 0;
  if (inserted &&
      !lap::cuda::check(
          cudaLibraryGetGlobal(&at->second, &bytes, i.library, name), name)) {
    i.symbols.erase(at);
    return nullptr;
  }
  return at->second;
}

} // extern "C"
