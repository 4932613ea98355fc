//===- Embedding.cpp - table lookups, positions, documents -----*- C++ -*-===//
//
// The backward passes sum rows of dy into table rows. Each table row is
// owned by one thread and summed in position order, so the gradients are
// race-free and identical from run to run.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/Rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

using namespace lap::cpu;

namespace {

void addRow(float *__restrict acc, const float *__restrict row, int64_t c) {
  for (int64_t j = 0; j < c; ++j)
    acc[j] += row[j];
}

/// The four source rows (clamped to the grid) and weights of each output
/// row of a bicubic resampling from `from` to `to` rows: PyTorch's
/// upsample_bicubic2d (A = -0.75, align_corners = False) with the scale
/// factor (to + 0.1) / from that DINO's interpolate_pos_encoding passes.
struct CubicTaps {
  std::vector<int64_t> index; ///< [to, 4]
  std::vector<float> weight;  ///< [to, 4]

  CubicTaps(int64_t from, int64_t to) : index(4 * to), weight(4 * to) {
    const double a = -0.75, scale = double(from) / (double(to) + 0.1);
    auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
    auto far = [&](double x) {
      return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    };
    for (int64_t i = 0; i < to; ++i) {
      double source = (double(i) + 0.5) * scale - 0.5;
      double floor = std::floor(source), t = source - floor;
      double w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
      for (int64_t k = 0; k < 4; ++k) {
        index[4 * i + k] =
            std::clamp<int64_t>(int64_t(floor) - 1 + k, 0, from - 1);
        weight[4 * i + k] = float(w[k]);
      }
    }
  }
};

/// The kernels on tables of Element (fp32 or bf16): rows are copied as
/// they are; the gradient's rows are summed in fp32 and rounded once.
template <typename Element>
void embeddingForward(Element *y, const Element *table, const int32_t *idx,
                      int64_t n, int64_t vocab, int64_t c) {
  parallelFor(n, rowGrain(c), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t v = idx[i];
      if (v >= 0 && v < vocab)
        std::memcpy(y + i * c, table + v * c, c * sizeof(Element));
      else
        std::memset(y + i * c, 0, c * sizeof(Element));
    }
  });
}

template <typename Element>
void embeddingBackward(Element *dtable, const Element *dy, const int32_t *idx,
                       int64_t n, int64_t vocab, int64_t c) {
  // Counting sort of positions by index: positions[start[v], start[v + 1])
  // are those holding v, in increasing order.
  std::vector<int64_t> start(vocab + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] >= 0 && idx[i] < vocab)
      ++start[idx[i] + 1];
  for (int64_t v = 0; v < vocab; ++v)
    start[v + 1] += start[v];
  std::vector<int64_t> positions(start[vocab]);
  {
    std::vector<int64_t> cursor(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i)
      if (idx[i] >= 0 && idx[i] < vocab)
        positions[cursor[idx[i]]++] = i;
  }
  parallelFor(vocab, rowGrain(c), [&](int64_t begin, int64_t end) {
    std::vector<float> rows = rowBuffers<Element>(2, c);
    for (int64_t v = begin; v < end; ++v) {
      int64_t first = start[v], last = start[v + 1];
      if (first == last) {
        std::memset(dtable + v * c, 0, c * sizeof(Element));
        continue;
      }
      float *sum = resultRow(dtable, v, c, rows.data());
      std::memcpy(sum, fp32Row(dy, positions[first], c, rows.data() + c),
                  c * sizeof(float));
      for (int64_t k = first + 1; k < last; ++k)
        addRow(sum, fp32Row(dy, positions[k], c, rows.data() + c), c);
      storeRow(dtable, v, c, sum);
    }
  });
}

template <typename Element>
void addPositionsForward(Element *y, const Element *x, const Element *table,
                         int64_t B, int64_t T, int64_t c, int64_t offset,
                         int64_t first) {
  parallelFor(B * T, rowGrain(c), [&](int64_t begin, int64_t end) {
    std::vector<float> rows = rowBuffers<Element>(3, c);
    for (int64_t r = begin; r < end; ++r) {
      int64_t t = first + r % T;
      if (t < offset) {
        std::memcpy(y + r * c, x + r * c, c * sizeof(Element));
        continue;
      }
      const float *__restrict in = fp32Row(x, r, c, rows.data());
      const float *__restrict pos =
          fp32Row(table, t - offset, c, rows.data() + c);
      float *__restrict out = resultRow(y, r, c, rows.data() + 2 * c);
      for (int64_t j = 0; j < c; ++j)
        out[j] = in[j] + pos[j];
      storeRow(y, r, c, out);
    }
  });
}

template <typename Element>
void addPositionsBackward(Element *dtable, const Element *dy, int64_t B,
                          int64_t T, int64_t c, int64_t offset, int64_t P) {
  parallelFor(P, rowGrain(B * c), [&](int64_t begin, int64_t end) {
    std::vector<float> rows = rowBuffers<Element>(2, c);
    for (int64_t p = begin; p < end; ++p) {
      int64_t t = p + offset;
      if (t >= T || B == 0) {
        std::memset(dtable + p * c, 0, c * sizeof(Element));
        continue;
      }
      float *sum = resultRow(dtable, p, c, rows.data());
      std::memcpy(sum, fp32Row(dy, t, c, rows.data() + c), c * sizeof(float));
      for (int64_t b = 1; b < B; ++b)
        addRow(sum, fp32Row(dy, b * T + t, c, rows.data() + c), c);
      storeRow(dtable, p, c, sum);
    }
  });
}

} // namespace

extern "C" void lap_cpu_embedding_forward(float *y, const float *table,
                                          const int32_t *idx, int64_t n,
                                          int64_t vocab, int64_t c) {
  embeddingForward(y, table, idx, n, vocab, c);
}

extern "C" void lap_cpu_embedding_backward(float *dtable, const float *dy,
                                           const int32_t *idx, int64_t n,
                                           int64_t vocab, int64_t c) {
  embeddingBackward(dtable, dy, idx, n, vocab, c);
}

extern "C" void lap_cpu_embedding_forward_bf16(lap_bf16 *y,
                                               const lap_bf16 *table,
                                               const int32_t *idx, int64_t n,
                                               int64_t vocab, int64_t c) {
  embeddingForward(y, table, idx, n, vocab, c);
}

extern "C" void lap_cpu_embedding_backward_bf16(lap_bf16 *dtable,
                                                const lap_bf16 *dy,
                                                const int32_t *idx, int64_t n,
                                                int64_t vocab, int64_t c) {
  embeddingBackward(dtable, dy, idx, n, vocab, c);
}

extern "C" void lap_cpu_document_starts(int32_t *starts, const int32_t *tokens,
                                        int64_t B, int64_t T, int64_t bos) {
  for (int64_t b = 0; b < B; ++b) {
    int32_t start = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (tokens[b * T + t] == bos)
        start = int32_t(t);
      starts[b * T + t] = start;
    }
  }
}

extern "C" void lap_cpu_pad_targets(int32_t *out, const int32_t *targets,
                                    const int32_t *lengths, int64_t B,
                                    int64_t T) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      out[b * T + t] = t < lengths[b] ? targets[b * T + t] : -1;
}

extern "C" void lap_cpu_add_positions_forward(float *y, const float *x,
                                              const float *table, int64_t B,
                                              int64_t T, int64_t c,
                                              int64_t offset, int64_t first) {
  addPositionsForward(y, x, table, B, T, c, offset, first);
}

extern "C" void lap_cpu_add_positions_backward(float *dtable, const float *dy,
                                               int64_t B, int64_t T, int64_t c,
                                               int64_t offset, int64_t P) {
  addPositionsBackward(dtable, dy, B, T, c, offset, P);
}

extern "C" void
lap_cpu_add_positions_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                   const lap_bf16 *table, int64_t B, int64_t T,
                                   int64_t c, int64_t offset, int64_t first) {
  addPositionsForward(y, x, table, B, T, c, offset, first);
}

extern "C" void lap_cpu_add_positions_backward_bf16(lap_bf16 *dtable,
                                                    const lap_bf16 *dy,
                                                    int64_t B, int64_t T,
                                                    int64_t c, int64_t offset,
                                                    int64_t P) {
  addPositionsBackward(dtable, dy, B, T, c, offset, P);
}

extern "C" void lap_cpu_interpolate_positions_forward(float *y, const float *x,
                                                      int64_t keep,
                                                      int64_t from, int64_t to,
                                                      int64_t c) {
  std::memcpy(y, x, size_t(keep * c) * sizeof(float));
  CubicTaps taps(from, to);
  const float *grid = x + keep * c;
  parallelFor(to * to, rowGrain(16 * c), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t oy = r / to, ox = r % to;
      float *__restrict out = y + (keep + r) * c;
      std::fill(out, out + c, 0.0f);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          float w = taps.weight[4 * oy + i] * taps.weight[4 * ox + j];
          const float *__restrict in =
              grid +
              (taps.index[4 * oy + i] * from + taps.index[4 * ox + j]) * c;
          for (int64_t k = 0; k < c; ++k)
            out[k] += w * in[k];
        }
    }
  });
}

extern "C" void
lap_cpu_interpolate_positions_backward(float *dx, const float *dy, int64_t keep,
                                       int64_t from, int64_t to, int64_t c) {
  std::memcpy(dx, dy, size_t(keep * c) * sizeof(float));
  CubicTaps taps(from, to);
  float *grid = dx + keep * c;
  std::memset(grid, 0, size_t(from * from * c) * sizeof(float));
  // Threads own channel ranges and add the outputs in order: race-free and
  // the same sums for every thread count.
  parallelFor(c, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < to * to; ++r) {
      int64_t oy = r / to, ox = r % to;
      const float *__restrict d = dy + (keep + r) * c;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          float w = taps.weight[4 * oy + i] * taps.weight[4 * ox + j];
          float *__restrict in =
              grid +
              (taps.index[4 * oy + i] * from + taps.index[4 * ox + j]) * c;
          for (int64_t k = begin; k < end; ++k)
            in[k] += w * d[k];
        }
    }
  });
}
