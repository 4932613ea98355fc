//===- ModelOnDevice.cpp - A library's calls from host data ---------------===//

#include "runtime/model/ModelOnDevice.h"

#include "runtime/model/RandomBatch.h"
#include "runtime/model/TokenIds.h"

#include <stdexcept>
#include <string>

using namespace lap;

namespace {

/// Every id of `ids` [rows, seq] in [lowest, vocab), or the error a CPU
/// library gives, naming `library`.
void checkIds(const std::string &library, const std::string &name,
              const int32_t *ids, int64_t rows, int64_t seq, int32_t lowest,
              int64_t vocab) {
  std::string why =
      model::idOutsideVocabulary(name, ids, rows, seq, lowest, vocab);
  if (!why.empty())
    throw std::runtime_error(library + ": " + why);
}

/// Bytes of manifest batch tensor `t` (4-byte elements) at the batch's size.
size_t bytesOf(const nlohmann::json &t, const lap_batch &batch) {
  return size_t(elementsAt(t["shape"].get<std::vector<int64_t>>(), batch.batch,
                           batch.seq)) *
         4;
}

} // namespace

ModelOnDevice::ModelOnDevice(const LoadedModel &model,
                             const DeviceMemory &memory, void *workspace)
    : lib(model), mem(memory), workspace(workspace) {}

void ModelOnDevice::fail() const {
  throw std::runtime_error(lib.path() + ": " + lib.lastError());
}

void *ModelOnDevice::buffer(std::unique_ptr<DeviceMemory::Buffer> &slot,
                            size_t bytes) {
  if (!slot || slot->bytes < bytes)
    slot = std::make_unique<DeviceMemory::Buffer>(mem, bytes);
  return slot->data;
}

const lap_batch *ModelOnDevice::place(const lap_batch &host) {
  if (mem.onHost())
    return &host;
  const nlohmann::json &layout = lib.manifest()["batch"];
  if (host.count != int32_t(layout.size()))
    throw std::runtime_error(
        lib.path() + ": a batch of " + std::to_string(host.count) +
        " tensors; the library reads " + std::to_string(layout.size()));
  // An image model's seq picks its image size by the token count (0: the
  // compiled size); the manifest's batch shapes describe the compiled one.
  if (const nlohmann::json &images = lib.manifest()["images"];
      images.is_object() && host.seq != 0 && host.seq != images["tokens"][0])
    throw std::runtime_error(lib.path() +
                             ": batches of another image size are not "
                             "copied to the GPU yet");
  batchTensors.resize(layout.size());
  pointers.resize(layout.size());
  const int64_t vocab = lib.manifest()["limits"]["vocab"];
  for (size_t i = 0; i < layout.size(); ++i) {
    size_t bytes = bytesOf(layout[i], host);
    if (layout[i]["dtype"] == "int32") // targets may be -1: ignored
      checkIds(lib.path(), layout[i]["name"],
               static_cast<const int32_t *>(host.tensors[i]), host.batch,
               host.seq, layout[i]["name"] == "targets" ? -1 : 0, vocab);
    pointers[i] = buffer(batchTensors[i], bytes);
    mem.upload(const_cast<void *>(pointers[i]), host.tensors[i], bytes);
  }
  view = host;
  view.tensors = pointers.data();
  return &view;
}

float ModelOnDevice::forward(const float *params, const lap_batch &batch,
                             float *hostLogits) {
  const lap_batch *placed = place(batch);
  if (mem.onHost()) {
    float value = 0;
    if (lib.forward(params, placed, workspace, &value, hostLogits) != LAP_OK)
      fail();
    return value;
  }
  size_t logitBytes = bytesOf(lib.manifest()["outputs"][1], batch);
  auto *deviceLoss = static_cast<float *>(buffer(loss, 4));
  auto *deviceLogits = static_cast<float *>(buffer(logits, logitBytes));
  if (lib.forward(params, placed, workspace, deviceLoss, deviceLogits) !=
      LAP_OK)
    fail();
  float value = 0;
  mem.download(&value, deviceLoss, 4);
  mem.download(hostLogits, deviceLogits, logitBytes);
  return value;
}

float ModelOnDevice::trainStep(const float *params, float *grads,
                               const lap_batch &batch, uint64_t seed) {
  const lap_batch *placed = place(batch);
  float value = 0;
  float *out = mem.onHost() ? &value : static_cast<float *>(buffer(loss, 4));
  if (lib.trainStep(params, grads, placed, seed, workspace, out) != LAP_OK)
    fail();
  if (!mem.onHost())
    mem.download(&value, out, 4);
  return value;
}

void ModelOnDevice::decode(const float *params, const int32_t *hostTokens,
                           int64_t batch, int64_t count, int64_t first,
                           float *cache, float *hostLogits) {
  if (mem.onHost()) {
    if (lib.decode(params, hostTokens, batch, count, first, cache, workspace,
                   hostLogits) != LAP_OK)
      fail();
    return;
  }
  const int64_t vocab = lib.manifest()["limits"]["vocab"];
  checkIds(lib.path(), "tokens", hostTokens, batch, count, 0, vocab);
  size_t tokenBytes = size_t(batch * count) * 4;
  size_t logitBytes = tokenBytes * size_t(vocab);
  auto *deviceTokens = static_cast<int32_t *>(buffer(tokens, tokenBytes));
  auto *deviceLogits = static_cast<float *>(buffer(logits, logitBytes));
  mem.upload(deviceTokens, hostTokens, tokenBytes);
  if (lib.decode(params, deviceTokens, batch, count, first, cache, workspace,
                 deviceLogits) != LAP_OK)
    fail();
  mem.download(hostLogits, deviceLogits, logitBytes);
}
