//===- Kernels.h - CPU kernels that generated model code calls --*- C++ -*-===//
//
// llm.c-style kernels, one per lap op (`<op>_forward` / `<op>_backward`),
// called by the code lapc generates (compiler/Conversion/LapToCPU). C
// linkage and plain types only: the generated code calls these by symbol.
//
// Conventions:
//  - Tensors are dense, row-major fp32 (indices int32); "rows" n is the
//    product of all leading dimensions, c the last one.
//  - Outputs come first and are overwritten, never accumulated. An output
//    pointer documented as "nullable" may be null: the kernel then skips it.
//  - Kernels parallelise with OpenMP (GNU libgomp, the runtime oneDNN uses),
//    so generated code, kernels and GEMMs share one thread pool.
//  - Dropout masks are a function of (seed, key, element): lap_cpu_keep.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_KERNELS_H
#define LAP_RUNTIME_KERNELS_CPU_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//--- Instruction sets (Isa.cpp) ---------------------------------------------
// Kernels with hand-written SIMD are compiled for several instruction sets
// ("avx2", "avx512" on x86-64) and run the best one this CPU has, chosen
// once, before the first such call; the environment variable LAP_CPU_ISA
// names another. Everything else targets the library's baseline
// (x86-64-v3: AVX2 and FMA).
// Null, or why the kernels cannot run here: LAP_CPU_ISA names an instruction
// set that is unknown, not compiled in or missing on this CPU (a dispatched
// kernel called regardless aborts with this message).
const char *lap_cpu_isa_error(void);
// The instruction set in use ("avx2"), or "none" when lap_cpu_isa_error().
const char *lap_cpu_isa(void);
// Those compiled in that this CPU runs, best first, separated by spaces.
const char *lap_cpu_isas(void);

//--- Attention (Attention.cpp) ----------------------------------------------
// q [B, T, H, D]; k, v [B, S, KV, D]; query head h reads kv head h / (H/KV).
// P = softmax(scale * Q K^T) (causal: key s <= query t, needs S == T);
// O_h = alpha[h] * P V_h + beta[h] * V_h (beta != 0 needs S == T).
// lse [B, H, T]: the row logsumexp of scale * Q K^T, saved for backward.
// Flash form: no T x S matrix is stored. H must be a multiple of KV; alpha
// and beta are not null. A row with no visible key (S = 0) gets O = 0 and
// lse = -inf. Per-thread scratch tiles are kept between calls (fresh pages
// fault on every call otherwise).
void lap_cpu_attention_forward(float *o, float *lse, const float *q,
                               const float *k, const float *v,
                               const float *alpha, const float *beta, int64_t B,
                               int64_t T, int64_t S, int64_t H, int64_t KV,
                               int64_t D, float scale, int32_t causal);
// Gradients from dO, the forward's inputs, output O and lse. P is
// recomputed tile by tile; D_i = rowsum(dO_i * (O_i - beta V_i)).
void lap_cpu_attention_backward(float *dq, float *dk, float *dv,
                                const float *dout, const float *q,
                                const float *k, const float *v, const float *o,
                                const float *lse, const float *alpha,
                                const float *beta, int64_t B, int64_t T,
                                int64_t S, int64_t H, int64_t KV, int64_t D,
                                float scale, int32_t causal);

//--- Attention against a key/value cache (DecodeAttention.cpp) -------------
// Incremental decoding of causal attention. q [B, T, H, D] are the queries of
// T new tokens at positions first .. first + T - 1, k and v [B, T, KV, D]
// their keys and values; kCache and vCache [B, capacity, KV, D] hold the keys
// and values of positions < first. Appends k and v at positions first ..
// first + T - 1, then writes o [B, T, H, D] as lap_cpu_attention_forward
// (causal) would for those rows of the whole sequence. first + T <= capacity.
void lap_cpu_attention_decode(float *o, float *kCache, float *vCache,
                              const float *q, const float *k, const float *v,
                              const float *alpha, const float *beta, int64_t B,
                              int64_t T, int64_t first, int64_t capacity,
                              int64_t H, int64_t KV, int64_t D, float scale);

//--- Linear (Linear.cpp, GEMMs by oneDNN) -------------------------------------
// y [n, out] = x [n, in] W^T + b; w [out, in]; b [out] nullable.
void lap_cpu_linear_forward(float *y, const float *x, const float *w,
                            const float *b, int64_t n, int64_t in, int64_t out);
// dx [n, in] = dy W; dw [out, in] = dy^T x; db [out] = column sums of dy.
// dx, dw, db nullable.
void lap_cpu_linear_backward(float *dx, float *dw, float *db, const float *dy,
                             const float *x, const float *w, int64_t n,
                             int64_t in, int64_t out);

//--- Embeddings and positions (Embedding.cpp) --------------------------------
// y [n, c] = table[idx[i]]; table [vocab, c]. Indices outside [0, vocab)
// give zero rows (the runtime validates batches before the step).
void lap_cpu_embedding_forward(float *y, const float *table, const int32_t *idx,
                               int64_t n, int64_t vocab, int64_t c);
// dtable [vocab, c] = sum of dy rows by index (zero where unused).
void lap_cpu_embedding_backward(float *dtable, const float *dy,
                                const int32_t *idx, int64_t n, int64_t vocab,
                                int64_t c);
// x, y [B, T, c]; table [P, c]; token t sits at position p = first + t
// (first > 0 when decoding after a cached prefix): y[b, t] = x[b, t] +
// table[p - offset] for p >= offset, else x[b, t].
void lap_cpu_add_positions_forward(float *y, const float *x, const float *table,
                                   int64_t B, int64_t T, int64_t c,
                                   int64_t offset, int64_t first);
// dtable [P, c]: dtable[t - offset] = sum over b of dy[b, t]; rows of the
// table beyond T - offset are zero.
void lap_cpu_add_positions_backward(float *dtable, const float *dy, int64_t B,
                                    int64_t T, int64_t c, int64_t offset,
                                    int64_t P);

//--- Norms (Norms.cpp) ---------------------------------------------------------
// Norm gradients (the forward norms are generated code). LayerNorm over c:
// y = (x - mean) / sqrt(var + eps) * w + b (biased var); statistics are
// recomputed from x. dx [n, c]; dw, db [c] nullable; w null means 1.
void lap_cpu_layer_norm_backward(float *dx, float *dw, float *db,
                                 const float *dy, const float *x,
                                 const float *w, int64_t n, int64_t c,
                                 float eps);
// RMSNorm over c: y = x / sqrt(mean(x^2) + eps) * w; w nullable; dx and dw
// nullable.
void lap_cpu_rms_norm_backward(float *dx, float *dw, const float *dy,
                               const float *x, const float *w, int64_t n,
                               int64_t c, float eps);
// y = x / max(||x||_2, eps) per row of c.
void lap_cpu_l2_normalize_forward(float *y, const float *x, int64_t n,
                                  int64_t c, float eps);
void lap_cpu_l2_normalize_backward(float *dx, const float *dy, const float *x,
                                   int64_t n, int64_t c, float eps);
// W [k, d] = g[r] * v[r] / ||v[r]|| per row r; g [k, 1]. dv, dg nullable.
void lap_cpu_weight_norm_forward(float *w, const float *v, const float *g,
                                 int64_t k, int64_t d);
void lap_cpu_weight_norm_backward(float *dv, float *dg, const float *dw,
                                  const float *v, const float *g, int64_t k,
                                  int64_t d);

//--- Rotary positions (Rope.cpp) -------------------------------------------------
// x, y [B, T, H, D]: channels (i, i + D/2) of each head rotated by the angle
// p * base^(-2i/D) at position p = first + t (first > 0 when decoding after a
// cached prefix):
//   y_i = x_i cos - x_{i+D/2} sin,  y_{i+D/2} = x_i sin + x_{i+D/2} cos.
// backward = rotation by the opposite angle (the transpose). y may equal x.
void lap_cpu_rope_forward(float *y, const float *x, int64_t B, int64_t T,
                          int64_t H, int64_t D, float base, int64_t first);
void lap_cpu_rope_backward(float *dx, const float *dy, int64_t B, int64_t T,
                           int64_t H, int64_t D, float base, int64_t first);

// LayerScale: dx = dy * gamma, dgamma [c] = column sums of dy * x; both
// nullable.
void lap_cpu_layer_scale_backward(float *dx, float *dgamma, const float *dy,
                                  const float *x, const float *gamma, int64_t n,
                                  int64_t c);

//--- Image tokens and pooling (Tokens.cpp) -----------------------------------------
// images [B, C, Hi, Wi] -> y [B, (Hi/p)(Wi/p), C p p]: patches in row-major
// order, each flattened channel-major (c, dy, dx), as a stride-p conv reads.
void lap_cpu_patchify_forward(float *y, const float *images, int64_t B,
                              int64_t C, int64_t Hi, int64_t Wi, int64_t p);
void lap_cpu_patchify_backward(float *dimages, const float *dy, int64_t B,
                               int64_t C, int64_t Hi, int64_t Wi, int64_t p);
// x [B, N, c], tokens [k, c] -> y [B, k + N, c].
void lap_cpu_prepend_tokens_forward(float *y, const float *x,
                                    const float *tokens, int64_t B, int64_t N,
                                    int64_t k, int64_t c);
// dy [B, k + N, c] -> dx [B, N, c], dtokens [k, c] = sum over B; both
// nullable.
void lap_cpu_prepend_tokens_backward(float *dx, float *dtokens, const float *dy,
                                     int64_t B, int64_t N, int64_t k,
                                     int64_t c);
// x [B, T, c] -> y [B, c] = x[:, index].
void lap_cpu_take_token_forward(float *y, const float *x, int64_t B, int64_t T,
                                int64_t c, int64_t index);
void lap_cpu_take_token_backward(float *dx, const float *dy, int64_t B,
                                 int64_t T, int64_t c, int64_t index);
// y [B, c] = mean of x[:, skip:T].
void lap_cpu_mean_tokens_forward(float *y, const float *x, int64_t B, int64_t T,
                                 int64_t c, int64_t skip);
void lap_cpu_mean_tokens_backward(float *dx, const float *dy, int64_t B,
                                  int64_t T, int64_t c, int64_t skip);

//--- Losses (Losses.cpp) -------------------------------------------------------------
// Mean cross-entropy over rows whose target is in [0, V) (-1 marks an
// ignored position; 0 when none count):
// logits [n, V], targets [n]. With softcap c > 0 the logits are first
// capped, c tanh(l / c), without storing them. With label smoothing s the
// target distribution is (1 - s) one-hot + s / V. *loss is a scalar.
void lap_cpu_cross_entropy_forward(float *loss, const float *logits,
                                   const int32_t *targets, int64_t n, int64_t V,
                                   float label_smoothing, float softcap);
// dlogits [n, V] = dloss * (softmax(capped) - target) / count, times the
// cap's derivative with softcap; rows with target -1 get zero.
// dloss is a pointer to the incoming scalar gradient.
void lap_cpu_cross_entropy_backward(float *dlogits, const float *dloss,
                                    const float *logits, const int32_t *targets,
                                    int64_t n, int64_t V, float label_smoothing,
                                    float softcap);
// Row losses over logits, targets [n, K] (targets are distributions):
// kind 0 soft_cross_entropy: mean_r -sum_k t log_softmax(l)
// kind 1 bce_with_logits:    mean over n K of BCE(sigmoid(l), t)
// kind 2 dino_loss:          mean_r -sum_k t log_softmax(l / temperature)
void lap_cpu_row_loss_forward(float *loss, const float *logits,
                              const float *targets, int64_t n, int64_t K,
                              int32_t kind, float temperature);
// dlogits, each times *dloss: (sum(t) softmax(l) - t) / n;
// (sigmoid(l) - t) / (n K); (sum(t) softmax(l / T) - t) / (n T). For
// targets that are distributions (sum 1) these are the usual forms.
void lap_cpu_row_loss_backward(float *dlogits, const float *dloss,
                               const float *logits, const float *targets,
                               int64_t n, int64_t K, int32_t kind,
                               float temperature);

//--- Dropout (Dropout.cpp) ---------------------------------------------------------------
// Whether element `index` survives under (seed, key) with drop probability
// rate. With mix = splitmix64's finaliser
//   mix(z): z += 0x9E3779B97F4A7C15; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9;
//           z = (z ^ z >> 27) * 0x94D049BB133111EB; return z ^ z >> 31;
// u = mix(mix(seed ^ (key * 0xD1B54A32D192ED03)) + index) and the element
// survives when (u >> 40) * 2^-24 >= rate. Generated code computes the same.
int32_t lap_cpu_keep(uint64_t seed, int64_t key, int64_t index, float rate);
// y = x * keep / (1 - rate) per element (dropout), n elements; y may be x.
void lap_cpu_dropout(float *y, const float *x, int64_t n, float rate,
                     uint64_t seed, int64_t key);
// y = x * keep_b / (1 - rate) per sample b of B (per_sample elements each;
// the hash's index is b); y may be x.
void lap_cpu_drop_path(float *y, const float *x, int64_t B, int64_t per_sample,
                       float rate, uint64_t seed, int64_t key);

#ifdef __cplusplus
}
#endif

#endif // LAP_RUNTIME_KERNELS_CPU_KERNELS_H
