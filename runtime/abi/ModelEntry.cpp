//===- ModelEntry.cpp - The C ABI of model.so over generated code -*- C++ -*-===//
//
// Linked into every model.so. Checks each call's arguments against the
// manifest (limits, batch layout, token ranges), so that bad input is an
// error status and never an out-of-bounds access in generated code, then
// calls the functions lapc generated. What depends on the device (the CPU
// or a GPU) is behind runtime/abi/Backend.h. The manifest itself is trusted
// only once it matches the checksum lapc compiled into the code: an edited
// limit would otherwise let a call run past the code's static buffers.
//
//===----------------------------------------------------------------------===//

#include "lap/model.h"
#include "runtime/abi/Backend.h"
#include "runtime/abi/LastError.h"
#include "runtime/abi/ParameterInit.h"
#include "runtime/abi/TokenIds.h"
#include "runtime/platform/Hash.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
extern const char lap_gen_manifest[];
extern const uint64_t lap_gen_manifest_hash;
void lap_gen_forward(const void *params, const void *const *batch,
                     void *const *outputs, void *workspace, int64_t B,
                     int64_t T, const uint64_t *seed, int64_t first);
void lap_gen_train_step(const void *params, const void *const *batch,
                        void *const *outputs, void *workspace, int64_t B,
                        int64_t T, const uint64_t *seed, int64_t first);
void lap_gen_features(const void *params, const void *const *batch,
                      void *const *outputs, void *workspace, int64_t B,
                      int64_t T, const uint64_t *seed, int64_t first);
// Generated for image models only: their pooled features, and the steps at
// the local crop size of a model trained on local crops.
__attribute__((weak)) void lap_gen_embed(const void *params,
                                         const void *const *batch,
                                         void *const *outputs, void *workspace,
                                         int64_t B, int64_t T,
                                         const uint64_t *seed, int64_t first);
__attribute__((weak)) void
lap_gen_forward_local(const void *params, const void *const *batch,
                      void *const *outputs, void *workspace, int64_t B,
                      int64_t T, const uint64_t *seed, int64_t first);
__attribute__((weak)) void
lap_gen_train_step_local(const void *params, const void *const *batch,
                         void *const *outputs, void *workspace, int64_t B,
                         int64_t T, const uint64_t *seed, int64_t first);
// Generated for language models only.
__attribute__((weak)) void lap_gen_decode(const void *params,
                                          const void *const *batch,
                                          void *const *outputs, void *workspace,
                                          int64_t B, int64_t T,
                                          const uint64_t *seed, int64_t first);
}

using lap::model::fail;
using lap::model::finish;
using lap::model::lastError;

namespace {

/// Why the embedded manifest cannot be trusted, or null.
const char *manifestError() {
  static const char *error =
      lap::platform::contentHash64(lap_gen_manifest,
                                   std::strlen(lap_gen_manifest)) ==
              lap_gen_manifest_hash
          ? nullptr
          : "its manifest does not match the checksum compiled into its code "
            "(the file was edited or damaged); recompile it with lapc";
  return error;
}

/// What the entry points need from the manifest, read once; all zero (every
/// call refused) when the manifest cannot be trusted.
struct Model {
  int64_t maxBatch = 0, maxSeq = 0, vocab = 0;
  bool fixedSeq = true; ///< images: the sequence is fixed at compile time
  /// Images: the tokens of each image size, the compiled one first.
  std::vector<int64_t> imageTokens;
  std::vector<std::string> batchNames;
  std::vector<bool> batchIsIndex; ///< int32: tokens, targets or lengths
  std::vector<lap::model::ParameterSpec> parameters;
  int64_t parameterElements = 0;
  /// Where the trainable parameters start: their gradients' buffer is laid
  /// out as the parameters from here on.
  int64_t trainableOffset = 0;
  /// Residual streams returned by lap_model_features, and their width.
  int64_t featureLayers = 0, width = 0;
  /// Decoding: the floats of each layer's key (or value) cache per
  /// sequence; empty when the model has no @decode.
  std::vector<int64_t> cacheFloats;

  Model() {
    if (manifestError())
      return;
    auto m = nlohmann::json::parse(lap_gen_manifest);
    maxBatch = m["limits"]["batch"];
    maxSeq = m["limits"]["seq"];
    vocab = m["limits"].value("vocab", int64_t(0));
    for (auto &t : m["batch"]) {
      batchNames.push_back(t["name"]);
      batchIsIndex.push_back(t["dtype"] == "int32");
      if (t["shape"].size() > 1 && t["shape"][1] == -1)
        fixedSeq = false;
    }
    if (auto &i = m["images"]; !i.is_null())
      imageTokens = i["tokens"].get<std::vector<int64_t>>();
    parameterElements = m["parameters"]["elements"];
    trainableOffset = m["parameters"]["trainable"]["offset"];
    featureLayers = m["features"]["layers"];
    width = m["features"]["width"];
    if (auto &d = m["decode"]; !d.is_null())
      for (int64_t slots : d["slots"])
        cacheFloats.push_back(slots * int64_t(d["kv_heads"]) *
                              int64_t(d["head_dim"]));
    for (auto &p : m["parameters"]["tensors"]) {
      lap::model::ParameterSpec spec;
      spec.offset = p["offset"];
      spec.elements = p["elements"];
      spec.trainable = p["trainable"];
      spec.kind = lap::model::parseInitKind(p["init"]["kind"]);
      spec.value = p["init"]["value"];
      if (spec.kind == lap::model::InitKind::Values)
        spec.values = p["init"]["values"].get<std::vector<double>>();
      parameters.push_back(spec);
    }
  }

  std::string tokenList() const {
    std::string text;
    for (int64_t t : imageTokens)
      text += (text.empty() ? "" : ", ") + std::to_string(t);
    return text;
  }

  /// Whether an image batch of `seq` tokens is of the local crop size.
  bool local(int64_t seq) const {
    return fixedSeq && imageTokens.size() > 1 && seq == imageTokens[1];
  }

  /// The int32 batch tensor `name` readable (TokenIds.h), or an error
  /// naming it.
  lap_status checkIndices(const std::string &name, const int32_t *data,
                          int64_t rows, int64_t seq) const {
    std::string why = lap::model::indexProblem(name, data, rows, seq, vocab);
    return why.empty() ? LAP_OK : fail(why);
  }

  lap_status checkBatchSize(int64_t batch) const {
    if (batch < 1 || batch > maxBatch)
      return fail("batch size " + std::to_string(batch) +
                  " is outside the compiled range 1.." +
                  std::to_string(maxBatch) +
                  " (lapc --max-batch sets the maximum)");
    return LAP_OK;
  }

  /// LAP_OK when the manifest is trusted and the kernels can run here (the
  /// CPU: LAP_CPU_ISA; CUDA: a GPU that runs them).
  static lap_status checkKernels() {
    if (const char *error = manifestError())
      return fail(error);
    if (const char *error = lap::model::backend::kernelError())
      return fail(error);
    return LAP_OK;
  }

  lap_status check(const lap_batch *b, int64_t &seq) const {
    if (lap_status s = checkKernels())
      return s;
    if (!b || !b->tensors)
      return fail("the batch is null");
    if (b->count != int32_t(batchNames.size()))
      return fail("the batch has " + std::to_string(b->count) +
                  " tensors; this model takes " +
                  std::to_string(batchNames.size()));
    if (lap_status s = checkBatchSize(b->batch))
      return s;
    seq = fixedSeq ? maxSeq : b->seq;
    if (fixedSeq && b->seq != 0 &&
        std::find(imageTokens.begin(), imageTokens.end(), b->seq) ==
            imageTokens.end())
      return fail("sequence length " + std::to_string(b->seq) +
                  " is not the tokens of an image size of this model (" +
                  tokenList() + "; 0 is the compiled size)");
    if (fixedSeq && b->seq != 0)
      seq = b->seq;
    if (!fixedSeq && (seq < 1 || seq > maxSeq))
      return fail("sequence length " + std::to_string(seq) +
                  " is outside the compiled range 1.." +
                  std::to_string(maxSeq) +
                  " (lapc --max-seq sets the maximum)");
    for (size_t i = 0; i < batchNames.size(); ++i) {
      if (!b->tensors[i])
        return fail("batch tensor '" + batchNames[i] + "' is null");
      if (!batchIsIndex[i] || vocab == 0 ||
          !lap::model::backend::readsBatches())
        continue;
      if (lap_status s = checkIndices(
              batchNames[i], static_cast<const int32_t *>(b->tensors[i]),
              b->batch, seq))
        return s;
    }
    return LAP_OK;
  }
};

const Model &model() {
  static const Model m;
  return m;
}

} // namespace

extern "C" {

uint32_t lap_model_abi_version(void) { return LAP_MODEL_ABI_VERSION; }

const char *lap_model_manifest(void) { return lap_gen_manifest; }

const char *lap_model_manifest_error(void) { return manifestError(); }

const char *lap_model_last_error(void) { return lastError.c_str(); }

const char *lap_model_kernel_isa(void) {
  return lap::model::backend::kernelIsa();
}

const char *lap_model_kernel_isas(void) {
  return lap::model::backend::kernelIsas();
}

lap_status lap_model_set_stream(void *stream) {
  if (lap::model::backend::setStream(stream) != LAP_OK)
    return fail("a CPU library runs on no stream: pass null");
  return LAP_OK;
}

lap_status lap_model_init_params(float *params, uint64_t seed) {
  if (lap_status s = Model::checkKernels())
    return s;
  if (!params)
    return fail("params is null");
  const Model &m = model();
  lap::model::backend::initialise(
      params, m.parameterElements, [&](float *host) {
        for (size_t i = 0; i < m.parameters.size(); ++i)
          lap::model::initParameter(host, m.parameters[i], seed, i);
      });
  return finish();
}

lap_status lap_model_forward(const float *params, const lap_batch *batch,
                             void *workspace, float *out_loss,
                             float *out_logits) {
  int64_t seq = 0;
  if (lap_status s = model().check(batch, seq))
    return s;
  if (!params || !workspace || !out_loss || !out_logits)
    return fail("params, workspace, out_loss and out_logits must not be null");
  void *outputs[] = {out_loss, out_logits};
  (model().local(seq) ? lap_gen_forward_local : lap_gen_forward)(
      params, batch->tensors, outputs, workspace, batch->batch, seq, nullptr,
      0);
  return finish();
}

lap_status lap_model_train_step(const float *params, float *grads,
                                const lap_batch *batch, const uint64_t *seed,
                                void *workspace, float *out_loss) {
  int64_t seq = 0;
  const Model &m = model();
  if (lap_status s = m.check(batch, seq))
    return s;
  if (!params || !grads || !seed || !workspace || !out_loss)
    return fail("params, grads, seed, workspace and out_loss must not be null");
  std::vector<void *> outputs{out_loss};
  for (const auto &p : m.parameters)
    if (p.trainable)
      outputs.push_back(grads + (p.offset - m.trainableOffset));
  (m.local(seq) ? lap_gen_train_step_local
                : lap_gen_train_step)(params, batch->tensors, outputs.data(),
                                      workspace, batch->batch, seq, seed, 0);
  return finish();
}

lap_status lap_model_features(const float *params, const lap_batch *batch,
                              void *workspace, float *out_features) {
  int64_t seq = 0;
  const Model &m = model();
  if (lap_status s = m.check(batch, seq))
    return s;
  if (m.local(seq))
    return fail("features runs images of the compiled size (sequence 0 or " +
                std::to_string(m.imageTokens[0]) + ")");
  if (!params || !workspace || !out_features)
    return fail("params, workspace and out_features must not be null");
  std::vector<void *> outputs;
  for (int64_t l = 0; l < m.featureLayers; ++l)
    outputs.push_back(out_features + l * batch->batch * seq * m.width);
  lap_gen_features(params, batch->tensors, outputs.data(), workspace,
                   batch->batch, seq, nullptr, 0);
  return finish();
}

lap_status lap_model_embed(const float *params, const lap_batch *batch,
                           void *workspace, float *out_embedding) {
  int64_t seq = 0;
  const Model &m = model();
  if (lap_status s = m.check(batch, seq))
    return s;
  if (!lap_gen_embed)
    return fail("this model has no embed function (only image models have)");
  if (m.local(seq))
    return fail("embed runs images of the compiled size (sequence 0 or " +
                std::to_string(m.imageTokens[0]) + ")");
  if (!params || !workspace || !out_embedding)
    return fail("params, workspace and out_embedding must not be null");
  void *outputs[] = {out_embedding};
  lap_gen_embed(params, batch->tensors, outputs, workspace, batch->batch, seq,
                nullptr, 0);
  return finish();
}

lap_status lap_model_decode(const float *params, const int32_t *tokens,
                            int64_t batch, int64_t count, int64_t first,
                            float *cache, void *workspace, float *out_logits) {
  if (lap_status s = Model::checkKernels())
    return s;
  const Model &m = model();
  if (!lap_gen_decode || m.cacheFloats.empty())
    return fail(
        "this model has no decode function (only language models decode)");
  if (!params || !tokens || !cache || !workspace || !out_logits)
    return fail(
        "params, tokens, cache, workspace and out_logits must not be null");
  if (lap_status s = m.checkBatchSize(batch))
    return s;
  if (count < 1 || first < 0 || count > m.maxSeq - first)
    return fail("tokens at positions " + std::to_string(first) + ".." +
                std::to_string(first + count - 1) +
                " do not fit the cache of " + std::to_string(m.maxSeq) +
                " positions (lapc --max-seq sets it)");
  if (lap::model::backend::readsBatches())
    if (lap_status s = m.checkIndices("tokens", tokens, batch, count))
      return s;
  // tokens, then each layer's key and value caches.
  std::vector<const void *> inputs{tokens};
  for (int64_t floats : m.cacheFloats)
    for (int kv = 0; kv < 2; ++kv, cache += batch * floats)
      inputs.push_back(cache);
  void *outputs[] = {out_logits};
  lap_gen_decode(params, inputs.data(), outputs, workspace, batch, count,
                 nullptr, first);
  return finish();
}

} // extern "C"
