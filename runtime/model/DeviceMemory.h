//===- DeviceMemory.h - Memory where a model library runs -------*- C++ -*-===//
//
// A host gives a library buffers on its device (manifest target.device):
// host memory for a CPU library, GPU memory for a CUDA library. CUDA
// memory goes through the CUDA runtime the library itself loaded (found by
// dlopen with RTLD_NOLOAD), so hosts link no CUDA and run where it is not.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_MODEL_DEVICEMEMORY_H
#define LAP_RUNTIME_MODEL_DEVICEMEMORY_H

#include "runtime/model/LoadedModel.h"

#include <cstddef>
#include <memory>

namespace lap {

class DeviceMemory {
public:
  /// The memory of `model`'s device; throws, naming the library, when its
  /// CUDA runtime cannot be found.
  explicit DeviceMemory(const LoadedModel &model);
  ~DeviceMemory();

  /// A zero-filled buffer there, freed on destruction.
  class Buffer {
  public:
    Buffer(const DeviceMemory &memory, size_t bytes);
    ~Buffer();
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    template <typename T> T *as() const { return static_cast<T *>(data); }
    void *data = nullptr;
    size_t bytes = 0;

  private:
    const DeviceMemory &memory;
  };

  /// Whether the device's memory is the host's (a CPU library).
  bool onHost() const { return !cuda; }

  /// Copies `bytes` from the host to the device.
  void upload(void *to, const void *from, size_t bytes) const;
  /// Copies `bytes` from the device to the host, after the work queued on
  /// the device has run.
  void download(void *to, const void *from, size_t bytes) const;

private:
  struct Cuda;
  std::unique_ptr<Cuda> cuda; ///< null: host memory
};

} // namespace lap

#endif // LAP_RUNTIME_MODEL_DEVICEMEMORY_H
