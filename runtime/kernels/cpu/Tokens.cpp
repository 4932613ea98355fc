//===- Tokens.cpp - image patches, learned tokens, pooling ------*- C++ -*-===//
//
// Mostly data movement: each output row is written by one thread, so sums
// over the batch or over tokens run in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/Rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

using lap::bf16::load;
using lap::bf16::store;
using namespace lap::cpu;

namespace {

/// Rows of fp32 or bf16 elements, moved as they are.
template <typename Element>
void copyRow(Element *dst, const Element *src, int64_t c) {
  std::memcpy(dst, src, size_t(c) * sizeof(Element));
}

template <typename Element> void zeroRow(Element *dst, int64_t c) {
  std::memset(dst, 0, size_t(c) * sizeof(Element));
}

void addRow(float *__restrict acc, const float *__restrict row, int64_t c) {
  for (int64_t j = 0; j < c; ++j)
    acc[j] += row[j];
}

} // namespace

//--- Patches
//---------------------------------------------------------------------

extern "C" void lap_cpu_patchify_forward(float *y, const float *images,
                                         int64_t B, int64_t C, int64_t Hi,
                                         int64_t Wi, int64_t p) {
  int64_t Hp = Hi / p, Wp = Wi / p, width = C * p * p;
  parallelFor(B * Hp * Wp, rowGrain(width), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = r / (Hp * Wp), ph = r / Wp % Hp, pw = r % Wp;
      float *out = y + r * width;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t dy = 0; dy < p; ++dy)
          copyRow(out + (c * p + dy) * p,
                  images + ((b * C + c) * Hi + ph * p + dy) * Wi + pw * p, p);
    }
  });
}

extern "C" void lap_cpu_patchify_backward(float *dimages, const float *dy,
                                          int64_t B, int64_t C, int64_t Hi,
                                          int64_t Wi, int64_t p) {
  int64_t Hp = Hi / p, Wp = Wi / p, width = C * p * p;
  // One image row per step; pixels no patch covers (when p does not divide
  // the image) get zero.
  parallelFor(B * C * Hi, rowGrain(Wi), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = r / (C * Hi), c = r / Hi % C, h = r % Hi;
      int64_t ph = h / p, row = h % p;
      float *out = dimages + r * Wi;
      if (ph >= Hp) {
        zeroRow(out, Wi);
        continue;
      }
      for (int64_t pw = 0; pw < Wp; ++pw)
        copyRow(out + pw * p,
                dy + (b * Hp * Wp + ph * Wp + pw) * width + (c * p + row) * p,
                p);
      zeroRow(out + Wp * p, Wi - Wp * p);
    }
  });
}

//--- Learned tokens
//--------------------------------------------------------------

namespace {

// The token kernels on tensors of Element (fp32, or a bf16 model's bf16):
// copies move elements as they are; sums run in fp32 (Rows.h) and are
// rounded once.

template <typename Element>
void prependTokensForward(Element *y, const Element *x, const Element *tokens,
                          int64_t B, int64_t N, int64_t k, int64_t c) {
  parallelFor(B * (k + N), rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = r / (k + N), t = r % (k + N);
      copyRow(y + r * c, t < k ? tokens + t * c : x + (b * N + t - k) * c, c);
    }
  });
}

template <typename Element>
void prependTokensBackward(Element *dx, Element *dtokens, const Element *dy,
                           int64_t B, int64_t N, int64_t k, int64_t c) {
  if (dx)
    parallelFor(B * N, rowGrain(c), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        copyRow(dx + r * c, dy + (r / N * (k + N) + k + r % N) * c, c);
    });
  if (dtokens)
    parallelFor(k, rowGrain(B * c), [&](int64_t begin, int64_t end) {
      std::vector<float> buffers = rowBuffers<Element>(2, c);
      for (int64_t t = begin; t < end; ++t) {
        float *sum = resultRow(dtokens, t, c, buffers.data());
        zeroRow(sum, c);
        for (int64_t b = 0; b < B; ++b)
          addRow(sum, fp32Row(dy, b * (k + N) + t, c, buffers.data() + c), c);
        storeRow(dtokens, t, c, sum);
      }
    });
}

template <typename Element>
void takeTokenForward(Element *y, const Element *x, int64_t B, int64_t T,
                      int64_t c, int64_t index) {
  parallelFor(B, rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      copyRow(y + b * c, x + (b * T + index) * c, c);
  });
}

template <typename Element>
void takeTokenBackward(Element *dx, const Element *dy, int64_t B, int64_t T,
                       int64_t c, int64_t index) {
  parallelFor(B * T, rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (r % T == index)
        copyRow(dx + r * c, dy + r / T * c, c);
      else
        zeroRow(dx + r * c, c);
    }
  });
}

template <typename Element>
void meanTokensForward(Element *y, const Element *x, int64_t B, int64_t T,
                       int64_t c, int64_t skip) {
  int64_t count = T - skip;
  // Work items are (sample, block of channels), so a small batch still
  // spreads over threads; each output element is summed in token order.
  constexpr int64_t kBlock = 512;
  int64_t blocks = (c + kBlock - 1) / kBlock;
  parallelFor(B * blocks, rowGrain(count * kBlock),
              [&](int64_t begin, int64_t end) {
                std::vector<float> buffers = rowBuffers<Element>(2, kBlock);
                for (int64_t u = begin; u < end; ++u) {
                  int64_t b = u / blocks, j0 = u % blocks * kBlock;
                  int64_t width = std::min(kBlock, c - j0);
                  Element *out = y + b * c + j0;
                  float *sum = resultRow(out, 0, width, buffers.data());
                  zeroRow(sum, width);
                  if (count > 0) {
                    for (int64_t t = skip; t < T; ++t)
                      addRow(sum,
                             fp32Row(x + (b * T + t) * c + j0, 0, width,
                                     buffers.data() + kBlock),
                             width);
                    float inv = 1.0f / float(count);
                    for (int64_t j = 0; j < width; ++j)
                      sum[j] *= inv;
                  }
                  storeRow(out, 0, width, sum);
                }
              });
}

template <typename Element>
void meanTokensBackward(Element *dx, const Element *dy, int64_t B, int64_t T,
                        int64_t c, int64_t skip) {
  int64_t count = T - skip;
  parallelFor(B * T, rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (r % T < skip || count <= 0) {
        zeroRow(dx + r * c, c);
        continue;
      }
      const float s = 1.0f / float(count);
      const Element *__restrict from = dy + r / T * c;
      Element *__restrict to = dx + r * c;
      for (int64_t j = 0; j < c; ++j)
        store(to[j], load(from[j]) * s);
    }
  });
}

} // namespace

extern "C" void lap_cpu_prepend_tokens_forward(float *y, const float *x,
                                               const float *tokens, int64_t B,
                                               int64_t N, int64_t k,
                                               int64_t c) {
  prependTokensForward(y, x, tokens, B, N, k, c);
}

extern "C" void lap_cpu_prepend_tokens_forward_bf16(lap_bf16 *y,
                                                    const lap_bf16 *x,
                                                    const lap_bf16 *tokens,
                                                    int64_t B, int64_t N,
                                                    int64_t k, int64_t c) {
  prependTokensForward(y, x, tokens, B, N, k, c);
}

extern "C" void lap_cpu_prepend_tokens_backward(float *dx, float *dtokens,
                                                const float *dy, int64_t B,
                                                int64_t N, int64_t k,
                                                int64_t c) {
  prependTokensBackward(dx, dtokens, dy, B, N, k, c);
}

extern "C" void lap_cpu_prepend_tokens_backward_bf16(lap_bf16 *dx,
                                                     lap_bf16 *dtokens,
                                                     const lap_bf16 *dy,
                                                     int64_t B, int64_t N,
                                                     int64_t k, int64_t c) {
  prependTokensBackward(dx, dtokens, dy, B, N, k, c);
}

//--- Pooling
//------------------------------------------------------------------------

extern "C" void lap_cpu_take_token_forward(float *y, const float *x, int64_t B,
                                           int64_t T, int64_t c,
                                           int64_t index) {
  takeTokenForward(y, x, B, T, c, index);
}

extern "C" void lap_cpu_take_token_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                                int64_t B, int64_t T, int64_t c,
                                                int64_t index) {
  takeTokenForward(y, x, B, T, c, index);
}

extern "C" void lap_cpu_take_token_backward(float *dx, const float *dy,
                                            int64_t B, int64_t T, int64_t c,
                                            int64_t index) {
  takeTokenBackward(dx, dy, B, T, c, index);
}

extern "C" void lap_cpu_take_token_backward_bf16(lap_bf16 *dx,
                                                 const lap_bf16 *dy, int64_t B,
                                                 int64_t T, int64_t c,
                                                 int64_t index) {
  takeTokenBackward(dx, dy, B, T, c, index);
}

extern "C" void lap_cpu_mean_tokens_forward(float *y, const float *x, int64_t B,
                                            int64_t T, int64_t c,
                                            int64_t skip) {
  meanTokensForward(y, x, B, T, c, skip);
}

extern "C" void lap_cpu_mean_tokens_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                                 int64_t B, int64_t T,
                                                 int64_t c, int64_t skip) {
  meanTokensForward(y, x, B, T, c, skip);
}

extern "C" void lap_cpu_mean_tokens_backward(float *dx, const float *dy,
                                             int64_t B, int64_t T, int64_t c,
                                             int64_t skip) {
  meanTokensBackward(dx, dy, B, T, c, skip);
}

extern "C" void lap_cpu_mean_tokens_backward_bf16(lap_bf16 *dx,
                                                  const lap_bf16 *dy, int64_t B,
                                                  int64_t T, int64_t c,
                                                  int64_t skip) {
  meanTokensBackward(dx, dy, B, T, c, skip);
}
