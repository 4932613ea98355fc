//===- ModelCalls.cpp - A library's calls from host data ---------------===//

#include "runtime/model/ModelCalls.h"

#include "runtime/abi/TokenIds.h"
#include "runtime/model/RandomBatch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

using namespace lap;

namespace {

/// The int32 batch tensor `name` as a CPU library would accept it, or its
/// error, naming `library`.
void checkIndices(const std::string &library, const std::string &name,
                  const int32_t *data, int64_t rows, int64_t seq,
                  int64_t vocab) {
  std::string why = model::indexProblem(name, data, rows, seq, vocab);
  if (!why.empty())
    throw std::runtime_error(library + ": " + why);
}

/// Bytes of manifest tensor `t` (4-byte elements) at the batch's size;
/// `side` > 0: an image tensor [B, C, H, W] of side × side pixels (the
/// manifest gives the compiled size's).
size_t bytesOf(const nlohmann::json &t, const lap_batch &batch,
               int64_t side = 0) {
  auto shape = t["shape"].get<std::vector<int64_t>>();
  if (side > 0 && shape.size() == 4)
    shape[2] = shape[3] = side;
  return size_t(elementsAt(shape, batch.batch, batch.seq)) * 4;
}

} // namespace

ModelCalls::ModelCalls(const LoadedModel &model, device::Device &device,
                       void *workspace)
    : lib(model), dev(device), workspace(workspace) {
  // The calls from this thread queue where the device's own work does.
  if (lib.setStream(dev.stream()) != LAP_OK)
    fail();
}

void ModelCalls::fail() const {
  throw std::runtime_error(lib.path() + ": " + lib.lastError());
}

void *ModelCalls::buffer(device::Buffer &slot, size_t bytes) {
  if (!slot.data() || slot.bytes() < bytes)
    slot = device::Buffer(dev, bytes);
  return slot.data();
}

const lap_batch *ModelCalls::place(const lap_batch &host) {
  if (dev.onHost())
    return &host;
  const nlohmann::json &layout = lib.manifest()["batch"];
  if (host.count != int32_t(layout.size()))
    throw std::runtime_error(
        lib.path() + ": a batch of " + std::to_string(host.count) +
        " tensors; the library reads " + std::to_string(layout.size()));
  // An image model's seq picks its image size by the token count (0: the
  // compiled size); the manifest's batch shapes describe the compiled one.
  int64_t side = 0;
  if (const nlohmann::json &images = lib.manifest()["images"];
      images.is_object() && host.seq != 0) {
    const nlohmann::json &tokens = images["tokens"];
    auto size = std::find(tokens.begin(), tokens.end(), host.seq);
    if (size == tokens.end())
      throw std::runtime_error(
          lib.path() + ": no image size of " + std::to_string(host.seq) +
          " tokens (the library's: " + tokens.dump() + ")");
    side = images["sizes"][size_t(size - tokens.begin())];
  }
  batchTensors.resize(layout.size());
  pointers.resize(layout.size());
  const int64_t vocab = lib.manifest()["limits"]["vocab"];
  for (size_t i = 0; i < layout.size(); ++i) {
    size_t bytes = bytesOf(layout[i], host, side);
    if (layout[i]["dtype"] == "int32")
      checkIndices(lib.path(), layout[i]["name"],
                   static_cast<const int32_t *>(host.tensors[i]), host.batch,
                   host.seq, vocab);
    pointers[i] = buffer(batchTensors[i], bytes);
    dev.uploadBytes(const_cast<void *>(pointers[i]), host.tensors[i], bytes);
  }
  view = host;
  view.tensors = pointers.data();
  return &view;
}

float ModelCalls::forward(const float *params, const lap_batch &batch,
                          float *hostLogits) {
  size_t logitBytes = bytesOf(lib.manifest()["outputs"][1], batch);
  const lap_batch *placed = place(batch);
  float value = 0;
  float *outLoss =
      dev.onHost() ? &value : static_cast<float *>(buffer(loss, 4));
  float *outLogits = output(hostLogits, logitBytes);
  if (lib.forward(params, placed, workspace, outLoss, outLogits) != LAP_OK)
    fail();
  bringBack(&value, outLoss, 4);
  bringBack(hostLogits, outLogits, logitBytes);
  return value;
}

float ModelCalls::trainStep(const float *params, float *grads,
                            const lap_batch &batch, uint64_t seed) {
  const lap_batch *placed = place(batch);
  float value = 0;
  float *out = dev.onHost() ? &value : static_cast<float *>(buffer(loss, 4));
  // The seed, too, is where the library reads.
  uint64_t *seedThere = &seed;
  if (!dev.onHost()) {
    seedThere = static_cast<uint64_t *>(buffer(seedSlot, sizeof seed));
    dev.uploadBytes(seedThere, &seed, sizeof seed);
  }
  if (lib.trainStep(params, grads, placed, seedThere, workspace, out) != LAP_OK)
    fail();
  bringBack(&value, out, 4);
  return value;
}

float *ModelCalls::output(float *host, size_t bytes) {
  return dev.onHost() ? host : static_cast<float *>(buffer(logits, bytes));
}

void ModelCalls::bringBack(float *host, const float *out, size_t bytes) {
  if (!dev.onHost())
    dev.downloadBytes(host, out, bytes);
}

void ModelCalls::features(const float *params, const lap_batch &batch,
                          float *hostFeatures) {
  const nlohmann::json &f = lib.manifest()["features"];
  int64_t seq = batch.seq ? batch.seq : lib.maxSeq();
  size_t bytes = size_t(f["layers"].get<int64_t>() * batch.batch * seq *
                        f["width"].get<int64_t>()) *
                 4;
  const lap_batch *placed = place(batch);
  float *out = output(hostFeatures, bytes);
  if (lib.features(params, placed, workspace, out) != LAP_OK)
    fail();
  bringBack(hostFeatures, out, bytes);
}

void ModelCalls::embed(const float *params, const lap_batch &batch,
                       float *hostEmbedding) {
  int64_t width = lib.manifest()["features"]["width"];
  size_t bytes = size_t(batch.batch * width) * 4;
  const lap_batch *placed = place(batch);
  float *out = output(hostEmbedding, bytes);
  if (lib.embed(params, placed, workspace, out) != LAP_OK)
    fail();
  bringBack(hostEmbedding, out, bytes);
}

void ModelCalls::decode(const float *params, const int32_t *hostTokens,
                        int64_t batch, int64_t count, int64_t first,
                        float *cache, float *hostLogits) {
  if (dev.onHost()) {
    if (lib.decode(params, hostTokens, batch, count, first, cache, workspace,
                   hostLogits) != LAP_OK)
      fail();
    return;
  }
  const int64_t vocab = lib.manifest()["limits"]["vocab"];
  checkIndices(lib.path(), "tokens", hostTokens, batch, count, vocab);
  size_t tokenBytes = size_t(batch * count) * 4;
  size_t logitBytes = tokenBytes * size_t(vocab);
  auto *deviceTokens = static_cast<int32_t *>(buffer(tokens, tokenBytes));
  auto *deviceLogits = static_cast<float *>(buffer(logits, logitBytes));
  dev.uploadBytes(deviceTokens, hostTokens, tokenBytes);
  if (lib.decode(params, deviceTokens, batch, count, first, cache, workspace,
                 deviceLogits) != LAP_OK)
    fail();
  dev.downloadBytes(hostLogits, deviceLogits, logitBytes);
}
