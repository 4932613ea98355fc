//===- CudaDevice.cpp - A GPU: its memory, the trainer's arithmetic -----===//
//
// The Device of the GPU a CUDA library runs on, in a plugin that hosts load
// only to run on a GPU (it brings the CUDA runtime and cuBLASLt): the
// kernels of
// runtime/kernels/cuda/Update.h, queued on the legacy default stream, which
// orders them with the library's work. Only the transfers and squaredNorms
// wait for it. The CUDA runtime's current device and the Context's stream
// are the calling thread's: the device is used from the thread that made it.
//
// Span lists travel with every call, so the caller's vectors may change or
// go at any time: a call copies its list into pinned staging and queues
// the copy to a device array its kernel reads. Neither array may change
// while an earlier call's copy or kernel may still use it, so calls take
// turns through a ring of such slots, each with an event recorded after
// its kernel. Reusing a slot waits for that event, so the host waits only
// when the GPU lags more than a ring's worth of span calls behind.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/Device.h"

#include "runtime/comm/Communicator.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Update.h"

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

namespace lap::device {

namespace {

using cuda::UpdateSpan;

/// The legacy default stream (see openCuda in Device.h).
constexpr cudaStream_t kStream = nullptr;

// Span lists are copied to the device as the kernels' UpdateSpan.
static_assert(sizeof(Span) == sizeof(UpdateSpan) &&
                  offsetof(Span, offset) == offsetof(UpdateSpan, offset) &&
                  offsetof(Span, size) == offsetof(UpdateSpan, size) &&
                  offsetof(Span, state) == offsetof(UpdateSpan, state),
              "Span and UpdateSpan differ in layout");

/// Throws "<what>: <reason>" when a CUDA runtime call failed.
void require(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(status));
}

/// Throws the failure the kernels recorded, if any.
void requireNoFailure() {
  if (std::string failure = cuda::takeFailure(); !failure.empty())
    throw std::runtime_error(failure);
}

/// One span list's way to the device (see the file comment).
struct SpanSlot {
  Span *host = nullptr;         ///< pinned staging
  UpdateSpan *device = nullptr; ///< what the kernel reads
  size_t capacity = 0;          ///< spans each holds
  cudaEvent_t done = nullptr;   ///< recorded after the slot's kernel

  SpanSlot() = default;
  SpanSlot(const SpanSlot &) = delete;
  SpanSlot &operator=(const SpanSlot &) = delete;
  ~SpanSlot() {
    if (host)
      cudaFreeHost(host);
    cudaFree(device);
    if (done)
      cudaEventDestroy(done);
  }
};

/// How the device opens its communicator (CudaPlugins.cpp's, which loads
/// the NCCL plugin): the communicator of `ranks` on the calling thread's
/// GPU, or null with the reason in `error`.
using CommunicatorOpener = comm::Communicator *(*)(comm::Communicator *ranks,
                                                   std::string *error);

class CudaDevice final : public Device {
public:
  CudaDevice(int ordinal, CommunicatorOpener openCommunicator)
      : openCommunicator(openCommunicator) {
    require(cudaSetDevice(ordinal), "cudaSetDevice");
    cuda::setStream(kStream);
    for (SpanSlot &s : slots)
      require(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming),
              "cudaEventCreateWithFlags");
  }

  ~CudaDevice() override {
    // Queued copies and kernels may still read the slots.
    cudaStreamSynchronize(kStream);
    cudaFree(norms);
  }

  bool onHost() const override { return false; }

  void *allocateBytes(size_t bytes) override {
    void *p = nullptr;
    require(
        cudaMalloc(&p, bytes),
        ("allocating " + std::to_string(bytes) + " bytes on the GPU").c_str());
    require(cudaMemsetAsync(p, 0, bytes, kStream), "cudaMemsetAsync");
    return p;
  }

  // Called from destructors, so it does not throw: a failure here is an
  // earlier asynchronous one, which the next synchronising call reports.
  void release(void *data) override { cudaFree(data); }

  void uploadBytes(void *to, const void *from, size_t bytes) override {
    require(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, kStream),
            "copying to the GPU");
    // `from` may be reused on return.
    require(cudaStreamSynchronize(kStream), "copying to the GPU");
  }

  void downloadBytes(void *to, const void *from, size_t bytes) override {
    // A failure of queued work (the library's too) surfaces here.
    require(cudaStreamSynchronize(kStream), "running on the GPU");
    require(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost),
            "copying from the GPU");
  }

  void copyBytes(void *to, const void *from, size_t bytes) override {
    require(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, kStream),
            "copying on the GPU");
  }

  void *stream() const override { return kStream; }

  std::unique_ptr<comm::Communicator>
  communicator(comm::Communicator &ranks) override {
    std::string error;
    comm::Communicator *made = openCommunicator(&ranks, &error);
    if (!made)
      throw comm::CommError(error);
    return std::unique_ptr<comm::Communicator>(made);
  }

  void accumulate(float *acc, const float *g, float scale, int64_t n,
                  bool first) override {
    cuda::accumulate(acc, g, scale, n, first);
    requireNoFailure();
  }

  void squaredNorms(const float *x, const std::vector<Span> &spans,
                    double *out) override {
    if (spans.empty())
      return;
    if (normCapacity < spans.size()) {
      // No kernel reads the old array: the last call synchronised.
      require(cudaFree(norms), "cudaFree");
      norms = nullptr;
      normCapacity = 0;
      require(cudaMalloc(&norms, spans.size() * sizeof(double)), "cudaMalloc");
      normCapacity = spans.size();
    }
    withSpans(spans, [&](const UpdateSpan *device, int64_t count) {
      cuda::squaredNorms(x, device, count, norms);
    });
    require(cudaMemcpyAsync(out, norms, spans.size() * sizeof(double),
                            cudaMemcpyDeviceToHost, kStream),
            "cudaMemcpyAsync (squaredNorms)");
    require(cudaStreamSynchronize(kStream),
            "cudaStreamSynchronize (squaredNorms)");
  }

  void scale(float *x, const std::vector<Span> &spans, float coef) override {
    withSpans(spans, [&](const UpdateSpan *device, int64_t count) {
      cuda::scale(x, device, count, coef);
    });
  }

  void adamw(float *params, const float *grads, float *m, float *v,
             const std::vector<Span> &spans, const AdamWScalars &s) override {
    const cuda::AdamWScalars c{s.decay, s.w1,       s.beta2,  s.w2,
                               s.eps,   s.stepSize, s.bc2Sqrt};
    withSpans(spans, [&](const UpdateSpan *device, int64_t count) {
      cuda::adamw(params, grads, m, v, device, count, c);
    });
  }

  void muonMomentum(float *buf, const float *g, float *u, int64_t n,
                    float momentum, float weight, bool nesterov) override {
    cuda::muonMomentum(buf, g, u, n, momentum, weight, nesterov);
    requireNoFailure();
  }

  void orthogonalize(float *x, int64_t rows, int64_t cols, int64_t steps,
                     lap_matmul precision) override {
    cuda::orthogonalize(x, rows, cols, steps, precision);
    requireNoFailure();
  }

  void applyUpdate(float *params, const float *u, int64_t n, float decay,
                   float scale) override {
    cuda::applyUpdate(params, u, n, decay, scale);
    requireNoFailure();
  }

private:
  /// Runs launch(device spans, count) with a device copy of `spans` in
  /// the next slot (see the file comment).
  template <typename Launch>
  void withSpans(const std::vector<Span> &spans, Launch &&launch) {
    if (spans.empty())
      return;
    SpanSlot &s = slots[next];
    next = (next + 1) % slots.size();
    // Both arrays may still be in use by the slot's last kernel.
    require(cudaEventSynchronize(s.done), "cudaEventSynchronize");
    if (s.capacity < spans.size()) {
      if (s.host)
        require(cudaFreeHost(s.host), "cudaFreeHost");
      require(cudaFree(s.device), "cudaFree");
      s.host = nullptr;
      s.device = nullptr;
      s.capacity = 0;
      require(cudaMallocHost(&s.host, spans.size() * sizeof(Span)),
              "cudaMallocHost");
      require(cudaMalloc(&s.device, spans.size() * sizeof(UpdateSpan)),
              "cudaMalloc");
      s.capacity = spans.size();
    }
    const size_t bytes = spans.size() * sizeof(Span);
    std::memcpy(s.host, spans.data(), bytes);
    require(cudaMemcpyAsync(s.device, s.host, bytes, cudaMemcpyHostToDevice,
                            kStream),
            "cudaMemcpyAsync (spans)");
    launch(s.device, int64_t(spans.size()));
    require(cudaEventRecord(s.done, kStream), "cudaEventRecord");
    requireNoFailure();
  }

  CommunicatorOpener openCommunicator;
  std::array<SpanSlot, 8> slots;
  size_t next = 0;
  double *norms = nullptr; ///< squaredNorms' results on the device
  size_t normCapacity = 0;
};

} // namespace

} // namespace lap::device

/// The plugin's one entry point (see CudaPlugins.cpp).
extern "C" __attribute__((visibility("default"))) lap::device::Device *
lap_device_cuda_open(int ordinal,
                     lap::device::CommunicatorOpener openCommunicator) {
  return new lap::device::CudaDevice(ordinal, openCommunicator);
}
