//===- AttentionEntry.cpp - lap/attention.h over a kernel library -*- C++ -*-===//
//
// Built twice, as the model entry points are: with the CPU kernels
// (libLapAttention.so) and, with LAP_ATTENTION_CUDA, the CUDA kernels
// (libLapAttentionCUDA.so). Checks every argument the kernels would
// otherwise trust, so that bad input is an error status, never an
// out-of-bounds access or an abort.
//
//===----------------------------------------------------------------------===//

#include "lap/attention.h"
#include "runtime/abi/Backend.h"
#include "runtime/abi/LastError.h"
#include "runtime/abi/TokenIds.h"

#include <string>
#include <vector>

#ifdef LAP_ATTENTION_CUDA
#include "runtime/kernels/cuda/Kernels.h"
#define LAP_ATTENTION_KERNEL(name) lap_cuda_##name
/// The oldest GPUs the kernel library's code runs on (it carries
/// compute_80 PTX), which CudaBackend.cpp compares the visible ones with.
extern "C" const char lap_gen_cuda_arch[] = "sm_80";
#else
#include "runtime/kernels/cpu/Kernels.h"
#define LAP_ATTENTION_KERNEL(name) lap_cpu_##name
#endif

namespace backend = lap::model::backend;

using lap::model::fail;
using lap::model::finish;
using lap::model::lastError;

namespace {

/// Why `s` and the coefficients cannot be computed with, or "" (reads the
/// betas when the keys are not the queries).
std::string shapeError(const lap_attention_shape *s,
                       const float *coefficients) {
  if (!s)
    return "the shape is null";
  const int64_t sizes[] = {s->batch, s->queries,  s->keys,
                           s->heads, s->kv_heads, s->head_dim};
  const char *names[] = {"batch", "queries",  "keys",
                         "heads", "kv_heads", "head_dim"};
  for (int i = 0; i < 6; ++i)
    if (sizes[i] < 1)
      return std::string(names[i]) + " is " + std::to_string(sizes[i]) +
             "; it must be at least 1";
  if (s->heads % s->kv_heads != 0)
    return std::to_string(s->heads) + " query heads cannot share " +
           std::to_string(s->kv_heads) +
           " key/value heads equally (heads must be a multiple of kv_heads)";
  if (s->causal && s->keys != s->queries)
    return "causal attention needs as many keys as queries (" +
           std::to_string(s->keys) + " keys, " + std::to_string(s->queries) +
           " queries)";
  if (s->window < 0 || (s->window > 0 && !s->causal))
    return "window is " + std::to_string(s->window) +
           "; it must be 0 (none), or positive with causal attention";
  if (!(s->scale == s->scale))
    return "the scale is not a number";
  if (s->keys != s->queries) {
    std::vector<float> host(size_t(2 * s->heads));
    backend::toHost(host.data(), coefficients, host.size() * sizeof(float));
    for (int64_t h = 0; h < s->heads; ++h)
      if (host[size_t(s->heads + h)] != 0.0f)
        return "head " + std::to_string(h) + " has beta " +
               std::to_string(host[size_t(s->heads + h)]) +
               ", which adds the queries' own values: it needs as many " +
               "keys as queries (" + std::to_string(s->keys) + " keys, " +
               std::to_string(s->queries) + " queries)";
  }
  return "";
}

/// Why document starts cannot be computed with, or "": each row
/// nondecreasing, each start at most its query's position.
std::string startsError(const lap_attention_shape *s, const int32_t *starts) {
  if (!starts)
    return "";
  if (!s->causal)
    return "document starts need causal attention";
  std::vector<int32_t> host(size_t(s->batch * s->queries));
  backend::toHost(host.data(), starts, host.size() * sizeof(int32_t));
  for (int64_t b = 0; b < s->batch; ++b)
    for (int64_t t = 0; t < s->queries; ++t) {
      const int32_t start = host[size_t(b * s->queries + t)];
      const int32_t before = t ? host[size_t(b * s->queries + t - 1)] : 0;
      if (start < before || start > t)
        return "document start " + std::to_string(start) + " of query " +
               std::to_string(t) + " of sequence " + std::to_string(b) +
               (start > t ? " lies after it" : " precedes the one before it");
    }
  return "";
}

/// Why key lengths cannot be computed with, or "": each in 0 .. keys.
std::string lengthsError(const lap_attention_shape *s, const int32_t *lengths) {
  if (!lengths)
    return "";
  std::vector<int32_t> host(size_t(s->batch));
  backend::toHost(host.data(), lengths, host.size() * sizeof(int32_t));
  const int64_t b = lap::model::lengthOutside(host.data(), s->batch, s->keys);
  if (b < 0)
    return "";
  return "key length " + std::to_string(host[size_t(b)]) + " of sequence " +
         std::to_string(b) + " is not in 0.." + std::to_string(s->keys);
}

/// Why a call cannot run: a null pointer among `pointers`, a bad shape or
/// kernels that cannot run here; "" when it can, on `stream`.
std::string callError(const lap_attention_shape *s,
                      std::initializer_list<const void *> pointers,
                      const float *coefficients, const int32_t *starts,
                      const int32_t *lengths, void *stream) {
  if (const char *why = backend::kernelError())
    return why;
  for (const void *p : pointers)
    if (!p)
      return "a tensor pointer is null";
  if (backend::setStream(stream) != LAP_OK)
    return "the CPU's attention runs on no stream: pass null";
  std::string why = shapeError(s, coefficients);
  if (why.empty())
    why = startsError(s, starts);
  if (why.empty())
    why = lengthsError(s, lengths);
  if (why.empty()) {
    std::string failure;
    if (backend::finish(failure) != LAP_OK)
      why = failure;
  }
  return why;
}

} // namespace

extern "C" {

uint32_t lap_attention_abi_version(void) { return LAP_ATTENTION_ABI_VERSION; }

const char *lap_attention_device(void) {
#ifdef LAP_ATTENTION_CUDA
  return "cuda";
#else
  return "cpu";
#endif
}

const char *lap_attention_isa(void) {
  return backend::kernelError() ? "none" : backend::kernelIsa();
}

const char *lap_attention_last_error(void) { return lastError.c_str(); }

lap_status lap_attention_forward(const lap_attention_shape *s, float *o,
                                 float *lse, const float *q, const float *k,
                                 const float *v, const float *coefficients,
                                 const int32_t *starts, const int32_t *lengths,
                                 void *stream) {
  std::string why = callError(s, {o, lse, q, k, v, coefficients}, coefficients,
                              starts, lengths, stream);
  if (!why.empty())
    return fail("lap_attention_forward: " + why);
  LAP_ATTENTION_KERNEL(attention_forward)
  (o, lse, q, k, v, coefficients, starts, lengths, s->batch, s->queries,
   s->keys, s->heads, s->kv_heads, s->head_dim, s->scale, s->causal ? 1 : 0,
   s->window);
  return finish();
}

lap_status lap_attention_backward(
    const lap_attention_shape *s, float *dq, float *dk, float *dv,
    float *dcoefficients, const float *dout, const float *q, const float *k,
    const float *v, const float *o, const float *lse, const float *coefficients,
    const int32_t *starts, const int32_t *lengths, void *stream) {
  std::string why =
      callError(s, {dq, dk, dv, dout, q, k, v, o, lse, coefficients},
                coefficients, starts, lengths, stream);
  if (!why.empty())
    return fail("lap_attention_backward: " + why);
  LAP_ATTENTION_KERNEL(attention_backward)
  (dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients, starts,
   lengths, s->batch, s->queries, s->keys, s->heads, s->kv_heads, s->head_dim,
   s->scale, s->causal ? 1 : 0, s->window);
  return finish();
}

} // extern "C"
