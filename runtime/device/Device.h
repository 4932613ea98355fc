//===- Device.h - Where a model's memory lives and its trainer runs -*- C++ -*-===//
//
// A device is the memory a model library computes in (its parameters,
// batches and workspace), the stream its work queues on, the communicator
// that moves that memory between ranks, and the arithmetic the trainer does
// beside it: the host for a CPU library (host/), a GPU for a CUDA library
// (cuda/, a plugin that hosts load only to run on a GPU, with the NCCL
// communicator of ranks on GPUs in a second one).
//
// Besides the model's train step, a training step sums micro-batch
// gradients, measures their norm, clips them and updates the parameters and
// the optimizer state. That work runs where the parameters live: on the host
// for a CPU library (the shared thread pool), on the GPU for a CUDA library
// (the library's stream, no host synchronisation but squaredNorms'
// result). Every array below is that device's memory.
//
// Elementwise and reduction work comes in spans of at most kSpan elements,
// which the caller fixes: the host adds a span's squares sequentially and
// the spans' sums in order, so the results do not depend on the thread
// count; a GPU gives each span a block.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DEVICE_DEVICE_H
#define LAP_RUNTIME_DEVICE_DEVICE_H

#include "runtime/kernels/KernelEnums.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace lap::comm {
class Communicator;
} // namespace lap::comm

namespace lap::device {

/// The largest span: 2^15 floats.
constexpr int64_t kSpan = int64_t(1) << 15;

/// Elements [offset, offset + size) of the parameters and gradients, and
/// [state, state + size) of the optimizer's state arrays that go with them.
struct Span {
  int64_t offset = 0, size = 0, state = 0;
};

/// torch.optim.AdamW's scalars for one step of one group, as the update
/// uses them: p = p × decay; m = lerp(m, g, w1); v = v × beta2 + w2 × g²;
/// p -= stepSize × m / (sqrt(v) / bc2Sqrt + eps).
struct AdamWScalars {
  float decay, w1, beta2, w2, eps, stepSize, bc2Sqrt;
};

/// A device's memory, streams and communicator, and the trainer's
/// arithmetic on it.
class Device {
public:
  virtual ~Device() = default;

  /// Whether the arrays are host memory (a CPU library's).
  virtual bool onHost() const = 0;

  /// `bytes` (> 0) of zero-filled memory there, 64-byte aligned; release()
  /// frees it.
  virtual void *allocateBytes(size_t bytes) = 0;
  virtual void release(void *data) = 0;
  /// Host → device and device → host copies; download returns after the
  /// work queued before it has run, upload once `from` may be reused.
  virtual void uploadBytes(void *to, const void *from, size_t bytes) = 0;
  virtual void downloadBytes(void *to, const void *from, size_t bytes) = 0;
  /// From one place of the device's memory to another.
  virtual void copyBytes(void *to, const void *from, size_t bytes) = 0;

  /// The copies above, of `n` values of T.
  template <typename T> void upload(T *to, const T *from, int64_t n) {
    uploadBytes(to, from, size_t(n) * sizeof(T));
  }
  template <typename T> void download(T *to, const T *from, int64_t n) {
    downloadBytes(to, from, size_t(n) * sizeof(T));
  }
  template <typename T> void copy(T *to, const T *from, int64_t n) {
    copyBytes(to, from, size_t(n) * sizeof(T));
  }

  /// The stream the device's work queues on, which a model library's calls
  /// must share (lap_model_set_stream): null, the host's and the legacy
  /// default stream of a GPU.
  virtual void *stream() const = 0;

  /// The communicator of `ranks` (the host's, which must outlive it) over
  /// this device's memory, which all ranks open together: NCCL on a GPU;
  /// null on the host, whose memory `ranks` moves itself. Throws when it
  /// cannot start.
  virtual std::unique_ptr<comm::Communicator>
  communicator(comm::Communicator &ranks) = 0;

  /// acc = 0 + g × scale (`first`), else acc += g × scale: the gradient
  /// sums over micro-batches (acc may be g).
  virtual void accumulate(float *acc, const float *g, float scale, int64_t n,
                          bool first) = 0;
  /// out[k] = the fp64 sum of x² over spans[k]'s elements (out is host
  /// memory). Non-finite exactly when the span holds a non-finite value:
  /// 2^15 squares of finite floats cannot overflow a double.
  virtual void squaredNorms(const float *x, const std::vector<Span> &spans,
                            double *out) = 0;
  /// x *= coef over the spans' elements.
  virtual void scale(float *x, const std::vector<Span> &spans, float coef) = 0;
  /// AdamW over the spans (see AdamWScalars); m and v at the spans' state.
  virtual void adamw(float *params, const float *grads, float *m, float *v,
                     const std::vector<Span> &spans, const AdamWScalars &s) = 0;
  /// Muon's momentum over n elements (nanochat): buf = lerp(buf, g,
  /// weight); u = lerp(g, buf, momentum) with Nesterov, else buf. weight is
  /// 1 - momentum rounded from double, as PyTorch's Python scalar is.
  virtual void muonMomentum(float *buf, const float *g, float *u, int64_t n,
                            float momentum, float weight, bool nesterov) = 0;
  /// x [rows, cols] ← its Newton-Schulz orthogonalisation in place (see
  /// Optimizer.h's orthogonalize), its GEMMs at `precision`.
  virtual void orthogonalize(float *x, int64_t rows, int64_t cols,
                             int64_t steps, lap_matmul precision) = 0;
  /// p = p × decay − scale × u over n elements.
  virtual void applyUpdate(float *params, const float *u, int64_t n,
                           float decay, float scale) = 0;
};

/// The host: the CPU libraries' device.
Device &host();

/// GPU `ordinal` (the plugin CudaPlugins.cpp loads), made the calling
/// thread's current device (where a CUDA library's calls from it run), its
/// work queued on the legacy default stream, which orders it with the
/// library's; its communicator is NCCL's (a second plugin, loaded then).
/// Throws when this build has no CUDA or there is no such GPU.
std::unique_ptr<Device> openCuda(int ordinal);

/// `bytes` of a device's memory, zero-filled, freed with it.
class Buffer {
public:
  Buffer() = default;
  /// Rounds `bytes` up to a multiple of 64 (at least 64), so that even an
  /// empty buffer has an address.
  Buffer(Device &device, size_t bytes)
      : device(&device), data_(device.allocateBytes(roundUp(bytes))),
        bytes_(bytes) {}
  ~Buffer() {
    if (data_)
      device->release(data_);
  }
  Buffer(Buffer &&o) noexcept { *this = std::move(o); }
  Buffer &operator=(Buffer &&o) noexcept {
    std::swap(device, o.device);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void *data() const { return data_; }
  template <typename T> T *as() const { return static_cast<T *>(data_); }
  size_t bytes() const { return bytes_; }

private:
  static size_t roundUp(size_t bytes) {
    return bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  }

  Device *device = nullptr;
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

/// `n` floats on a device, freed with it (none for n ≤ 0: data() is null).
class Array {
public:
  Array() = default;
  Array(Device &device, int64_t n)
      : buffer(n > 0 ? Buffer(device, size_t(n) * sizeof(float)) : Buffer()),
        size_(n) {}
  float *data() const { return buffer.as<float>(); }
  int64_t size() const { return size_; }

private:
  Buffer buffer;
  int64_t size_ = 0;
};

} // namespace lap::device

#endif // LAP_RUNTIME_DEVICE_DEVICE_H
