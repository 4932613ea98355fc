//===- ModelCalls.h - A library's calls from host data -------*- C++ -*-===//
//
// Data loaders make batches in host memory and readers want losses and
// logits there; a CUDA library reads and writes GPU memory. This puts a
// host batch where the library reads it and brings its results back: for a
// CPU library it passes the host's pointers through, copying nothing.
// Parameters, gradients and the workspace stay in the device's memory.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_MODEL_MODELCALLS_H
#define LAP_RUNTIME_MODEL_MODELCALLS_H

#include "runtime/device/Device.h"
#include "runtime/model/LoadedModel.h"

#include <vector>

namespace lap {

class ModelCalls {
public:
  /// Calls of `model` on `device` (the one it was compiled for) with its
  /// intermediates in `workspace` (the manifest's workspace size there);
  /// they queue on the device's stream. Throws with the library's error.
  ModelCalls(const LoadedModel &model, device::Device &device, void *workspace);

  const LoadedModel &model() const { return lib; }
  device::Device &device() const { return dev; }

  /// Evaluation forward of the host batch `batch`: returns the mean loss and
  /// writes the logits (manifest outputs[1] at the batch's size) to the
  /// host array `logits`. Throws with the library's error.
  float forward(const float *params, const lap_batch &batch, float *logits);
  /// Training step of the host batch `batch`: writes the gradients to
  /// `grads` (device memory) and returns the loss.
  float trainStep(const float *params, float *grads, const lap_batch &batch,
                  uint64_t seed);
  /// The residual streams of the host batch `batch` (lap_model_features)
  /// to the host array `features` [layers, batch, seq, width].
  void features(const float *params, const lap_batch &batch, float *features);
  /// An image model's embedding of the host batch `batch` (lap_model_embed)
  /// to the host array `embedding` [batch, width].
  void embed(const float *params, const lap_batch &batch, float *embedding);
  /// Decoding of the host tokens [batch, count] after `first` cached
  /// positions (the cache in device memory): their logits [batch, count,
  /// vocab] to the host array `logits`.
  void decode(const float *params, const int32_t *tokens, int64_t batch,
              int64_t count, int64_t first, float *cache, float *logits);

  /// The host batch `host` where the library reads it: itself for a CPU
  /// library, else a copy in GPU buffers kept and grown between calls
  /// (valid until the next call), its token ids checked first.
  const lap_batch *place(const lap_batch &host);

private:
  /// A device buffer of at least `bytes` in `slot`, grown as needed.
  void *buffer(device::Buffer &slot, size_t bytes);
  /// Where the library writes an output of `bytes` the host wants in
  /// `host`: there (a CPU library), or a device buffer that bringBack
  /// copies to it.
  float *output(float *host, size_t bytes);
  void bringBack(float *host, const float *out, size_t bytes);
  [[noreturn]] void fail() const;

  const LoadedModel &lib;
  device::Device &dev;
  void *workspace;
  std::vector<device::Buffer> batchTensors;
  std::vector<const void *> pointers;
  lap_batch view{};
  device::Buffer loss, logits, tokens, seedSlot;
};

} // namespace lap

#endif // LAP_RUNTIME_MODEL_MODELCALLS_H
