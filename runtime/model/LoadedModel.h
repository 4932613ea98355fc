//===- LoadedModel.h - A model.so, opened and checked -----------*- C++ -*-===//
//
// The host side of the model ABI: dlopens a library lapc built, checks that
// it is one (the entry points exist, the ABI version matches, the manifest
// parses, this CPU has the features its code needs) and exposes its
// manifest. Every failure names the file and says what is wrong with it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_MODEL_LOADEDMODEL_H
#define LAP_RUNTIME_MODEL_LOADEDMODEL_H

#include "lap/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lap {

/// One parameter tensor of the manifest.
struct ParameterInfo {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0, elements = 0;
  std::string init;
  double initValue = 0;
  bool trainable = true; ///< has a gradient (train.lora: the adapters only)
};

class LoadedModel {
public:
  /// Which libraries a program takes: CPU ones only (the CPU benchmarks),
  /// or any (lapc-run, which opens a CUDA library's device itself).
  enum class Devices { CPU, Any };

  /// Opens `path`; throws std::runtime_error with a message naming the file
  /// (also for a library of a device `devices` excludes).
  explicit LoadedModel(const std::string &path, Devices devices = Devices::CPU);
  ~LoadedModel();
  LoadedModel(const LoadedModel &) = delete;
  LoadedModel &operator=(const LoadedModel &) = delete;

  const std::string &path() const { return path_; }
  const nlohmann::json &manifest() const { return manifest_; }
  const std::vector<ParameterInfo> &parameters() const { return parameters_; }
  int64_t parameterElements() const { return parameterElements_; }
  /// The trainable parameters, the table's last ones, start here; the
  /// gradients lap_model_train_step writes are laid out as the parameters
  /// from here to the end.
  int64_t trainableOffset() const { return trainableOffset_; }
  int64_t gradientElements() const {
    return parameterElements_ - trainableOffset_;
  }
  int64_t workspaceBytes() const { return workspaceBytes_; }
  int64_t maxBatch() const { return manifest_["limits"]["batch"]; }
  int64_t maxSeq() const { return manifest_["limits"]["seq"]; }
  /// The device the library's code runs on: "cpu" or "cuda".
  std::string device() const { return manifest_["target"]["device"]; }

  // The ABI's functions; errors come back as status codes (see lap/model.h).
  lap_status setStream(void *stream) const { return setStream_(stream); }
  lap_status initParams(float *params, uint64_t seed) const {
    return init_(params, seed);
  }
  lap_status forward(const float *params, const lap_batch *batch,
                     void *workspace, float *loss, float *logits) const {
    return forward_(params, batch, workspace, loss, logits);
  }
  lap_status trainStep(const float *params, float *grads,
                       const lap_batch *batch, const uint64_t *seed,
                       void *workspace, float *loss) const {
    return trainStep_(params, grads, batch, seed, workspace, loss);
  }
  lap_status features(const float *params, const lap_batch *batch,
                      void *workspace, float *out) const {
    return features_(params, batch, workspace, out);
  }
  lap_status embed(const float *params, const lap_batch *batch, void *workspace,
                   float *out) const {
    return embed_(params, batch, workspace, out);
  }
  lap_status decode(const float *params, const int32_t *tokens, int64_t batch,
                    int64_t count, int64_t first, float *cache, void *workspace,
                    float *logits) const {
    return decode_(params, tokens, batch, count, first, cache, workspace,
                   logits);
  }
  std::string lastError() const { return lastError_(); }
  /// The instruction set the kernels run with here, and those this CPU
  /// could run (lap_model_kernel_isa, lap_model_kernel_isas).
  std::string kernelIsa() const { return kernelIsa_(); }
  std::string kernelIsas() const { return kernelIsas_(); }

private:
  std::string path_;
  void *handle_ = nullptr;
  nlohmann::json manifest_;
  std::vector<ParameterInfo> parameters_;
  int64_t parameterElements_ = 0, trainableOffset_ = 0, workspaceBytes_ = 0;
  decltype(&lap_model_init_params) init_ = nullptr;
  decltype(&lap_model_set_stream) setStream_ = nullptr;
  decltype(&lap_model_forward) forward_ = nullptr;
  decltype(&lap_model_train_step) trainStep_ = nullptr;
  decltype(&lap_model_features) features_ = nullptr;
  decltype(&lap_model_embed) embed_ = nullptr;
  decltype(&lap_model_decode) decode_ = nullptr;
  decltype(&lap_model_last_error) lastError_ = nullptr;
  decltype(&lap_model_kernel_isa) kernelIsa_ = nullptr;
  decltype(&lap_model_kernel_isas) kernelIsas_ = nullptr;
};

/// A buffer aligned for the kernels (64 bytes), zero-filled.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  template <typename T> T *as() { return static_cast<T *>(data); }
  void *data = nullptr;
  size_t bytes = 0;
};

} // namespace lap

#endif // LAP_RUNTIME_MODEL_LOADEDMODEL_H
