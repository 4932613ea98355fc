//===- Device.h - Where a model's memory lives and its trainer runs -*- C++ -*-===//
//
// A device is the memory a model library computes in and the arithmetic
// the trainer does beside it: the host for a CPU library (host/), a GPU for
// a CUDA library (cuda/, a plugin that hosts load only to run on a GPU,
// with the NCCL communicator of ranks on GPUs).
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

/// A device's memory and the trainer's arithmetic on it.
class Device {
public:
  virtual ~Device() = default;

  /// Whether the arrays are host memory (a CPU library's).
  virtual bool onHost() const = 0;

  /// `n` zero-filled floats there; release() frees them.
  virtual float *allocate(int64_t n) = 0;
  virtual void release(float *data) = 0;
  /// Host → device and device → host copies of `n` floats; download
  /// returns after the work queued before it has run.
  virtual void upload(float *to, const float *from, int64_t n) = 0;
  virtual void download(float *to, const float *from, int64_t n) = 0;
  /// `n` floats from one array of the device to another.
  virtual void copy(float *to, const float *from, int64_t n) = 0;

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
/// library's. Throws when this build has no CUDA or there is no such GPU.
std::unique_ptr<Device> openCuda(int ordinal);

/// The NCCL communicator of `ranks` (the bootstrap, which must outlive it)
/// over the memory of this thread's GPU (openCuda made it current),
/// its collectives on the legacy default stream, as the device's work.
/// Throws when this build has no CUDA or NCCL cannot start.
std::unique_ptr<comm::Communicator> cudaCommunicator(comm::Communicator &ranks);

/// A float array on a device, freed with it.
class Array {
public:
  Array() = default;
  Array(Device &device, int64_t n)
      : device(&device), data_(n > 0 ? device.allocate(n) : nullptr), size_(n) {
  }
  ~Array() {
    if (data_)
      device->release(data_);
  }
  Array(Array &&o) noexcept { *this = std::move(o); }
  Array &operator=(Array &&o) noexcept {
    std::swap(device, o.device);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  float *data() const { return data_; }
  int64_t size() const { return size_; }

private:
  Device *device = nullptr;
  float *data_ = nullptr;
  int64_t size_ = 0;
};

} // namespace lap::device

#endif // LAP_RUNTIME_DEVICE_DEVICE_H
