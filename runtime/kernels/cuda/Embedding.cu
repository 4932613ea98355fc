//===- Embedding.cu - The lookups' and positions' entry points --*- CUDA -*-===//
//
// lap_cuda_embedding_*, add_positions_*, interpolate_positions_* and
// document_starts: Embedding.h's plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Embedding.h"
#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"

using lap::cuda::Launcher;
namespace embedding = lap::cuda::embedding;

extern "C" void lap_cuda_embedding_forward(float *y, const float *table,
                                           const int32_t *idx, int64_t n,
                                           int64_t vocab, int64_t c) {
  embedding::embeddingForward(Launcher(), y, table, idx, n, vocab, c);
}

extern "C" void lap_cuda_embedding_backward(float *dtable, const float *dy,
                                            const int32_t *idx, int64_t n,
                                            int64_t vocab, int64_t c) {
  embedding::embeddingBackward(Launcher(), dtable, dy, idx, n, vocab, c);
}

extern "C" void lap_cuda_embedding_forward_bf16(lap_bf16 *y,
                                                const lap_bf16 *table,
                                                const int32_t *idx, int64_t n,
                                                int64_t vocab, int64_t c) {
  embedding::embeddingForward(Launcher(), y, table, idx, n, vocab, c);
}

extern "C" void lap_cuda_embedding_backward_bf16(lap_bf16 *dtable,
                                                 const lap_bf16 *dy,
                                                 const int32_t *idx, int64_t n,
                                                 int64_t vocab, int64_t c) {
  embedding::embeddingBackward(Launcher(), dtable, dy, idx, n, vocab, c);
}

extern "C" void lap_cuda_document_starts(int32_t *starts, const int32_t *tokens,
                                         int64_t B, int64_t T, int64_t bos) {
  embedding::documentStarts(Launcher(), starts, tokens, B, T, bos);
}

extern "C" void lap_cuda_pad_targets(int32_t *out, const int32_t *targets,
                                     const int32_t *lengths, int64_t B,
                                     int64_t T) {
  embedding::padTargets(Launcher(), out, targets, lengths, B, T);
}

extern "C" void lap_cuda_add_positions_forward(float *y, const float *x,
                                               const float *table, int64_t B,
                                               int64_t T, int64_t c,
                                               int64_t offset, int64_t first) {
  embedding::addPositionsForward(Launcher(), y, x, table, B, T, c, offset,
                                 first);
}

extern "C" void lap_cuda_add_positions_backward(float *dtable, const float *dy,
                                                int64_t B, int64_t T, int64_t c,
                                                int64_t offset, int64_t P) {
  embedding::addPositionsBackward(Launcher(), dtable, dy, B, T, c, offset, P);
}

extern "C" void
lap_cuda_add_positions_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                    const lap_bf16 *table, int64_t B, int64_t T,
                                    int64_t c, int64_t offset, int64_t first) {
  embedding::addPositionsForward(Launcher(), y, x, table, B, T, c, offset,
                                 first);
}

extern "C" void lap_cuda_add_positions_backward_bf16(lap_bf16 *dtable,
                                                     const lap_bf16 *dy,
                                                     int64_t B, int64_t T,
                                                     int64_t c, int64_t offset,
                                                     int64_t P) {
  embedding::addPositionsBackward(Launcher(), dtable, dy, B, T, c, offset, P);
}

extern "C" void lap_cuda_interpolate_positions_forward(float *y, const float *x,
                                                       int64_t keep,
                                                       int64_t from, int64_t to,
                                                       int64_t c) {
  embedding::interpolatePositionsForward(Launcher(), y, x, keep, from, to, c);
}

extern "C" void lap_cuda_interpolate_positions_backward(float *dx,
                                                        const float *dy,
                                                        int64_t keep,
                                                        int64_t from,
                                                        int64_t to, int64_t c) {
  embedding::interpolatePositionsBackward(Launcher(), dx, dy, keep, from, to,
                                          c);
}
