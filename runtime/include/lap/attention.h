/*===- lap/attention.h - lap's fused attention, without a model ---*- C -*-===//
 *
 * The attention kernels of compiled models, callable on their own (the
 * Python package's lap.torch.attention calls them): for every query head h,
 *
 *   P_h = softmax(scale * Q_h K_g^T)        (g = h / (H / KV): grouped queries)
 *   O_h = alpha[h] * P_h V_g + beta[h] * V_g
 *
 * so one call computes softmax heads (alpha 1, beta 0), Laplacian heads
 * (alpha -1, beta 1: (I - P) V) and any fixed or learned alpha P V + beta V,
 * in flash form: no T x S matrix is stored.
 *
 * One interface, two libraries beside lapc-run's bin/:
 *   - lib/libLapAttention.so: host pointers; runs on the CPU's best
 *     instruction set (or the one LAP_CPU_ISA names) on the GNU OpenMP
 *     thread pool; a call returns when its results are written.
 *   - lib/libLapAttentionCUDA.so (where the CUDA toolkit is found): device
 *     pointers of the current CUDA device; a call enqueues its work on
 *     `stream` (null: the legacy default stream) and returns.
 *
 * Tensors are fp32, dense and row-major:
 *   q, o, dq, dout  [batch, queries, heads, head_dim]
 *   k, v, dk, dv    [batch, keys, kv_heads, head_dim]
 *   lse             [batch, heads, queries]  the rows' logsumexp of
 *                                            scale * Q K^T, for backward
 *   coefficients    [2, heads]               alpha, then beta
 * Causal attention lets query t see keys s <= t and needs keys == queries,
 * as does any nonzero beta (V's rows are the queries' own). heads must be a
 * multiple of kv_heads.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LAP_ATTENTION_H
#define LAP_ATTENTION_H

#include "status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to the functions and structs below. */
#define LAP_ATTENTION_ABI_VERSION 3u

typedef struct lap_attention_shape {
  int64_t batch, queries, keys, heads, kv_heads, head_dim;
  float scale; /* usually 1 / sqrt(head_dim) */
  int32_t causal;
  /* causal only: query t sees keys t - window < s <= t (0: every key) */
  int64_t window;
} lap_attention_shape;

/* LAP_ATTENTION_ABI_VERSION of the library. */
uint32_t lap_attention_abi_version(void);

/* "cpu" or "cuda": where the library's pointers live. */
const char *lap_attention_device(void);

/* The instruction set its kernels run with ("avx512", "sm_80"), or "none"
 * when they cannot run here: every call then fails, saying why. */
const char *lap_attention_isa(void);

/* A description of the last error on this thread; never null. */
const char *lap_attention_last_error(void);

/* o and lse from q, k, v and the coefficients. document_starts [batch,
 * queries] (causal only; null: none) confines each query to its document:
 * query t of sequence b sees keys from document_starts[b * queries + t],
 * its document's first token, nondecreasing in t and at most t.
 * key_lengths [batch] (null: none) pads variable-length sequences: sequence
 * b's keys are its first key_lengths[b] (0 .. keys), and no query sees the
 * others. P is normalised over the keys a query sees; a query that sees
 * none gets P V = 0 (o = beta V), lse -inf and no gradient through P. */
lap_status lap_attention_forward(const lap_attention_shape *shape, float *o,
                                 float *lse, const float *q, const float *k,
                                 const float *v, const float *coefficients,
                                 const int32_t *document_starts,
                                 const int32_t *key_lengths, void *stream);

/* dq, dk, dv and (when not null) dcoefficients [2, heads] from dout and
 * the forward's inputs, output and lse. */
lap_status lap_attention_backward(
    const lap_attention_shape *shape, float *dq, float *dk, float *dv,
    float *dcoefficients, const float *dout, const float *q, const float *k,
    const float *v, const float *o, const float *lse, const float *coefficients,
    const int32_t *document_starts, const int32_t *key_lengths, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* LAP_ATTENTION_H */
