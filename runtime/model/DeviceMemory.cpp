//===- DeviceMemory.cpp - Memory where a model library runs -----*- C++ -*-===//

#include "runtime/model/DeviceMemory.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

using namespace lap;

/// The CUDA runtime's calls this needs (cudaError_t is an int; 0 success;
/// cudaMemcpyKind 1 host to device, 2 device to host).
struct DeviceMemory::Cuda {
  void *library = nullptr;
  int (*malloc)(void **, size_t) = nullptr;
  int (*free)(void *) = nullptr;
  int (*memset)(void *, int, size_t) = nullptr;
  int (*memcpy)(void *, const void *, size_t, int) = nullptr;
  int (*synchronize)() = nullptr;
  const char *(*errorString)(int) = nullptr;

  void check(int status, const char *what) const {
    if (status != 0)
      throw std::runtime_error(std::string(what) + ": " + errorString(status));
  }
};

namespace {

template <typename F> void bind(void *library, const char *name, F &f) {
  f = reinterpret_cast<F>(dlsym(library, name));
  if (!f)
    throw std::runtime_error(std::string("the CUDA runtime lacks ") + name);
}

} // namespace

DeviceMemory::DeviceMemory(const LoadedModel &model) {
  if (model.device() == "cpu")
    return;
  cuda = std::make_unique<Cuda>();
  // The runtime the library linked, already loaded with it.
  cuda->library = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda->library)
    throw std::runtime_error(model.path() +
                             ": its CUDA runtime (libcudart.so.13) is not "
                             "loaded with it");
  bind(cuda->library, "cudaMalloc", cuda->malloc);
  bind(cuda->library, "cudaFree", cuda->free);
  bind(cuda->library, "cudaMemset", cuda->memset);
  bind(cuda->library, "cudaMemcpy", cuda->memcpy);
  bind(cuda->library, "cudaDeviceSynchronize", cuda->synchronize);
  bind(cuda->library, "cudaGetErrorString", cuda->errorString);
}

DeviceMemory::~DeviceMemory() {
  if (cuda)
    dlclose(cuda->library);
}

DeviceMemory::Buffer::Buffer(const DeviceMemory &memory, size_t bytes)
    : bytes(bytes), memory(memory) {
  size_t rounded = std::max<size_t>((bytes + 63) / 64 * 64, 64);
  if (const Cuda *cuda = memory.cuda.get()) {
    cuda->check(
        cuda->malloc(&data, rounded),
        ("allocating " + std::to_string(bytes) + " bytes on the GPU").c_str());
    cuda->check(cuda->memset(data, 0, rounded), "cudaMemset");
    return;
  }
  data = std::aligned_alloc(64, rounded);
  if (!data)
    throw std::runtime_error("out of memory allocating " +
                             std::to_string(bytes) + " bytes");
  std::memset(data, 0, rounded);
}

DeviceMemory::Buffer::~Buffer() {
  if (memory.cuda)
    memory.cuda->free(data);
  else
    std::free(data);
}

void DeviceMemory::upload(void *to, const void *from, size_t bytes) const {
  if (cuda)
    cuda->check(cuda->memcpy(to, from, bytes, 1), "copying to the GPU");
  else
    std::memcpy(to, from, bytes);
}

void DeviceMemory::download(void *to, const void *from, size_t bytes) const {
  if (cuda) {
    // A failure of queued work surfaces here, with its own message.
    cuda->check(cuda->synchronize(), "running the model on the GPU");
    cuda->check(cuda->memcpy(to, from, bytes, 2), "copying from the GPU");
  } else {
    std::memcpy(to, from, bytes);
  }
}
