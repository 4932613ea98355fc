/*===- lap/model.h - The C ABI of a compiled model (model.so) -----*- C -*-===//
 *
 * A model.so built by `lapc SPEC -o model.so` exports the functions below.
 * lapc-run (or any host) dlopens it, checks lap_model_abi_version() against
 * LAP_MODEL_ABI_VERSION, reads the manifest and allocates:
 *   - params: one float buffer of manifest "parameters.elements" floats;
 *     parameter i lives at its manifest "offset" (in floats);
 *   - grads: one float buffer of "parameters.trainable.elements" floats,
 *     laid out as params from "parameters.trainable.offset" on: the
 *     trainable parameters (every one, or under train.lora the adapters)
 *     are the table's last tensors, and frozen ones get no gradient;
 *   - workspace: manifest "memory.workspace_bytes", 64-byte aligned: every
 *     intermediate of forward and backward lives there at an offset fixed by
 *     the compiler's memory plan.
 * Batch tensors are passed in manifest "batch" order as plain pointers, with
 * the batch size and sequence length given at run time up to the compiled
 * maxima (manifest "limits").
 *
 * Every fallible call returns a lap_status; on error, lap_model_last_error()
 * describes it. Functions are thread-compatible: concurrent calls need
 * distinct workspaces and output buffers.
 *
 * The device is the library's (manifest "target.device"):
 *   - "cpu": every pointer is host memory; kernels run on the process's GNU
 *     OpenMP thread pool (OMP_NUM_THREADS) and a call returns when its
 *     results are written.
 *   - "cuda": every pointer (params, grads, workspace, batch tensors,
 *     outputs, the decode cache, the step's seed) is device memory of the
 *     current CUDA device; a call enqueues its work on the thread's stream
 *     (lap_model_set_stream) and returns without waiting, so results are
 *     ready once the stream has run it, and a host may capture a call in a
 *     CUDA graph (after one call outside the capture: the first loads the
 *     kernels and allocates scratch). Token ids are not checked on the host:
 *     the kernels give zero rows for ids outside the vocabulary and ignore
 *     such targets. A failure of the enqueued work is reported by a later
 *     call, or seen by the host when it synchronises.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LAP_MODEL_H
#define LAP_MODEL_H

#include "status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to the functions, structs or manifest keys below. */
#define LAP_MODEL_ABI_VERSION 9u

/* lap_status (lap/status.h): LAP_INVALID_ARGUMENT for a null pointer, a
 * batch or sequence out of range. */

/* One batch: `count` pointers in manifest "batch" order (gpt: tokens and
 * targets, int32 [batch, seq]; vit: images float [batch, C, H, W] and targets
 * float [batch, classes]; dino: images and teacher float [batch, prototypes]).
 * Image models run the image sizes of manifest "images": seq picks one by
 * its token count ("images.tokens"; 0 is the compiled size, the first), and
 * H = W is that size. */
typedef struct lap_batch {
  int64_t batch;
  int64_t seq;
  int32_t count;
  const void *const *tensors;
} lap_batch;

/* LAP_MODEL_ABI_VERSION of the library. */
uint32_t lap_model_abi_version(void);

/* The manifest: a NUL-terminated JSON document owned by the library (the
 * resolved spec, parameter table with offsets and init, batch tensors,
 * limits, memory plan, target: the CPU the generated code was compiled for
 * and the CPU features it and the kernels need). */
const char *lap_model_manifest(void);

/* NULL when the manifest is the one the library's code was compiled with
 * (its XXH3 checksum, compiled into the code, matches); otherwise why not.
 * A library whose manifest was edited or damaged refuses every call. */
const char *lap_model_manifest_error(void);

/* A description of the last error on this thread; never null. */
const char *lap_model_last_error(void);

/* CPU libraries: the instruction set the library's kernels run with on
 * this CPU ("avx2", "avx512"): the best one compiled in that the CPU has,
 * or the one the environment variable LAP_CPU_ISA names. "none" when
 * LAP_CPU_ISA names one that is unknown or that this CPU lacks: every call
 * that computes then fails, saying so. Those compiled in that this CPU
 * runs, best first and separated by spaces, come from
 * lap_model_kernel_isas(). CUDA libraries: the GPU architecture compiled
 * for ("sm_90"), and those of the visible GPUs that run it ("" when none
 * does: every call that computes then fails, saying so). */
const char *lap_model_kernel_isa(void);
const char *lap_model_kernel_isas(void);

/* CUDA libraries: the cudaStream_t this thread's later calls enqueue on
 * (null: the legacy default stream). CPU libraries run on no stream: only
 * null is accepted. */
lap_status lap_model_set_stream(void *stream);

/* Fills params with the spec's initialisation; the same seed gives the same
 * values on every machine. */
lap_status lap_model_init_params(float *params, uint64_t seed);

/* Evaluation forward (dropout off): writes the mean loss to *out_loss and
 * the logits to out_logits (manifest "logits" shape with the run-time batch
 * and sequence). */
lap_status lap_model_forward(const float *params, const lap_batch *batch,
                             void *workspace, float *out_loss,
                             float *out_logits);

/* Training forward and backward: writes the loss to *out_loss and the
 * gradient of every trainable parameter to grads (overwritten). *seed selects
 * the dropout and drop-path masks of this step; like the other pointers it is
 * device memory of a CUDA library, read when the step runs, so a step
 * captured in a CUDA graph draws the masks of the seed there at each
 * replay. */
lap_status lap_model_train_step(const float *params, float *grads,
                                const lap_batch *batch, const uint64_t *seed,
                                void *workspace, float *out_loss);

/* The residual stream [batch, seq, width] after the embedding and after
 * each block (manifest "features": layers = blocks + 1, width), evaluation
 * mode, for the geometry analyses: out_features holds layers x batch x seq
 * x width floats, layer-major. */
lap_status lap_model_features(const float *params, const lap_batch *batch,
                              void *workspace, float *out_features);

/* Image models: the backbone's features as downstream evaluations read them
 * (k-NN, linear probes): the final norm's output pooled as the model pools
 * (CLS token or mean of the patch tokens), [batch, width] (manifest
 * "features.width"), evaluation mode, images of the compiled size. */
lap_status lap_model_embed(const float *params, const lap_batch *batch,
                           void *workspace, float *out_embedding);

/* Incremental decoding, for language models (manifest "decode" is null for
 * the others): the logits of `count` new tokens of each of `batch` sequences
 * without recomputing what came before them. tokens [batch, count] int32
 * sit at positions first .. first + count - 1, first + count <= manifest
 * "decode.capacity". cache holds batch * "decode.cache_floats_per_sequence"
 * floats: per layer l, the keys then the values [batch, slots_l, kv_heads,
 * head_dim] of the last slots_l earlier positions, position p in slot
 * p mod slots_l, as written by earlier calls with the same batch (first = 0
 * starts new sequences: the cache's content is then ignored). slots_l is
 * "decode.slots"[l]: the capacity, or a sliding window's size (a windowed
 * layer keeps only what it can still see). The call adds the new tokens'
 * keys and values and writes their logits [batch, count, vocab] to
 * out_logits. */
lap_status lap_model_decode(const float *params, const int32_t *tokens,
                            int64_t batch, int64_t count, int64_t first,
                            float *cache, void *workspace, float *out_logits);

#ifdef __cplusplus
}
#endif

#endif /* LAP_MODEL_H */
