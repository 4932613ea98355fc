//===- Linear.cpp - y = x W^T + b and its gradients -------------*- C++ -*-===//
//
// The GEMMs are oneDNN's, at the call's precision (Gemm.h); the bias add,
// the bias gradient and the tanh GELU fused after a GEMM are simple enough
// to do here, each in one pass over the GEMM's output. A bf16 model's
// kernels (`_bf16`) multiply its bf16 tensors into an fp32 result and round
// that once, in the same pass as the bias (or the GELU, or its slope).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/GeluTanh.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/Rows.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace lap::cpu;

namespace {

/// db [c] = column sums of the rows of an [n, c] tensor, row(i) giving row
/// i (after finishing it, where the caller computes rows as it goes). Rows
/// are cut into a number of chunks that depends only on the shape, and the
/// chunk partials are added in chunk order, so the result is the same
/// whatever the thread count. Without db the rows are only finished.
template <typename Row>
void columnSums(float *db, int64_t n, int64_t c, Row row) {
  if (!db) {
    parallelFor(n, rowGrain(c), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        row(i);
    });
    return;
  }
  int64_t chunks = std::clamp<int64_t>(n * c / (int64_t(1) << 15), 1, 64);
  chunks = std::min(chunks, std::max<int64_t>(n, 1));
  int64_t rowsPerChunk = (n + chunks - 1) / chunks;
  std::vector<float> partial(chunks * c, 0.0f);
  parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      float *__restrict acc = partial.data() + k * c;
      int64_t rowEnd = std::min(n, (k + 1) * rowsPerChunk);
      for (int64_t i = k * rowsPerChunk; i < rowEnd; ++i) {
        const float *__restrict r = row(i);
        for (int64_t j = 0; j < c; ++j)
          acc[j] += r[j];
      }
    }
  });
  std::memcpy(db, partial.data(), c * sizeof(float));
  for (int64_t k = 1; k < chunks; ++k) {
    const float *__restrict acc = partial.data() + k * c;
    for (int64_t j = 0; j < c; ++j)
      db[j] += acc[j];
  }
}

/// db [c] = column sums of dy [n, c]: fp32, or bf16 widened row by row.
template <typename Element>
void columnSums(float *db, const Element *dy, int64_t n, int64_t c) {
  columnSums(db, n, c, [&](int64_t i) {
    thread_local std::vector<float> widened;
    if constexpr (!std::is_same_v<Element, float>)
      widened.resize(size_t(c));
    return fp32Row(dy, i, c, widened.data());
  });
}

/// y [n, out] = x [n, in] W^T + b, x and w as the GEMM reads them.
void linearForward(float *y, Matrix x, Matrix w, const float *b, int64_t n,
                   int64_t in, int64_t out) {
  gemm('N', 'T', n, out, in, x, w, 0.0f, y, out);
  if (!b)
    return;
  parallelFor(n, rowGrain(out), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float *__restrict row = y + i * out;
      const float *__restrict bias = b;
      for (int64_t j = 0; j < out; ++j)
        row[j] += bias[j];
    }
  });
}

/// A bf16 kernel's fp32 result [size] before rounding: this thread's
/// buffer, kept between calls.
float *fp32Result(int64_t size) {
  thread_local std::vector<float> result;
  if (result.size() < size_t(size))
    result.resize(size_t(size));
  return result.data();
}

} // namespace

extern "C" void lap_cpu_linear_forward(float *y, const float *x, const float *w,
                                       const float *b, int64_t n, int64_t in,
                                       int64_t out, lap_matmul precision) {
  linearForward(y, operand(precision, x, n, in, in, 0),
                operand(precision, w, out, in, in, 1), b, n, in, out);
}

extern "C" void lap_cpu_linear_backward(float *dx, float *dw, float *db,
                                        const float *dy, const float *x,
                                        const float *w, int64_t n, int64_t in,
                                        int64_t out, lap_matmul precision) {
  const Matrix dyOp = operand(precision, dy, n, out, out, 0);
  if (dx)
    gemm('N', 'N', n, in, out, dyOp, operand(precision, w, out, in, in, 1),
         0.0f, dx, in);
  if (dw)
    gemm('T', 'N', out, in, n, dyOp, operand(precision, x, n, in, in, 2), 0.0f,
         dw, in);
  if (db)
    columnSums(db, dy, n, out);
}

extern "C" void lap_cpu_linear_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                            const lap_bf16 *w,
                                            const lap_bf16 *b, int64_t n,
                                            int64_t in, int64_t out) {
  gemmToBf16('N', 'T', n, out, in, operand(x, n, in, in, 0),
             operand(w, out, in, in, 1), y, b);
}

extern "C" void lap_cpu_linear_backward_bf16(lap_bf16 *dx, lap_bf16 *dw,
                                             lap_bf16 *db, const lap_bf16 *dy,
                                             const lap_bf16 *x,
                                             const lap_bf16 *w, int64_t n,
                                             int64_t in, int64_t out) {
  const Matrix dyOp = operand(dy, n, out, out, 0);
  if (dx)
    gemmToBf16('N', 'N', n, in, out, dyOp, operand(w, out, in, in, 1), dx);
  if (dw)
    gemmToBf16('T', 'N', out, in, n, dyOp, operand(x, n, in, in, 2), dw);
  if (db) {
    float *sums = fp32Result(out);
    columnSums(sums, dy, n, out);
    roundToBf16(db, sums, 1, out);
  }
}

extern "C" void lap_cpu_linear_heads_forward_bf16(
    lap_bf16 *q, lap_bf16 *k, lap_bf16 *v, const lap_bf16 *x, const lap_bf16 *w,
    const lap_bf16 *b, int64_t n, int64_t in, int64_t hq, int64_t hkv) {
  lap_cpu_linear_forward_bf16(q, x, w, b, n, in, hq);
  lap_cpu_linear_forward_bf16(k, x, w + hq * in, b ? b + hq : nullptr, n, in,
                              hkv);
  lap_cpu_linear_forward_bf16(v, x, w + (hq + hkv) * in,
                              b ? b + hq + hkv : nullptr, n, in, hkv);
}

extern "C" void lap_cpu_linear_heads_backward_bf16(
    lap_bf16 *dx, lap_bf16 *dw, lap_bf16 *db, const lap_bf16 *dq,
    const lap_bf16 *dk, const lap_bf16 *dv, const lap_bf16 *x,
    const lap_bf16 *w, int64_t n, int64_t in, int64_t hq, int64_t hkv) {
  const lap_bf16 *blocks[3] = {dq, dk, dv};
  const int64_t widths[3] = {hq, hkv, hkv}, starts[3] = {0, hq, hq + hkv};
  // dx sums the three blocks' contributions in fp32, in block order, and
  // is rounded once.
  if (dx) {
    float *acc = fp32Result(n * in);
    const Matrix wOp = operand(w, hq + 2 * hkv, in, in, 1);
    for (int i = 0; i < 3; ++i)
      gemm('N', 'N', n, in, widths[i],
           operand(blocks[i], n, widths[i], widths[i], 0), wOp.from(starts[i]),
           i == 0 ? 0.0f : 1.0f, acc, in);
    roundToBf16(dx, acc, n, in);
  }
  for (int i = 0; i < 3; ++i)
    if (dw || db)
      lap_cpu_linear_backward_bf16(nullptr, dw ? dw + starts[i] * in : nullptr,
                                   db ? db + starts[i] : nullptr, blocks[i], x,
                                   w, n, in, widths[i]);
}

extern "C" void lap_cpu_linear_gelu_forward(float *y, float *pre,
                                            const float *x, const float *w,
                                            const float *b, int64_t n,
                                            int64_t in, int64_t out,
                                            lap_matmul precision) {
  // The GEMM writes where the pre-activation stays (y when nothing keeps
  // it); one pass adds the bias and applies the GELU.
  float *z = pre ? pre : y;
  gemm('N', 'T', n, out, in, operand(precision, x, n, in, in, 0),
       operand(precision, w, out, in, in, 1), 0.0f, z, out);
  parallelFor(n, rowGrain(out), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float *zr = z + i * out, *yr = y + i * out;
      for (int64_t j = 0; j < out; ++j) {
        float v = b ? zr[j] + b[j] : zr[j];
        zr[j] = v;
        yr[j] = lap::gelu::value(v, tanhApprox(lap::gelu::tanhArgument(v)));
      }
    }
  });
}

extern "C" void lap_cpu_gelu_linear_backward(float *dpre, float *dbias,
                                             const float *dy, const float *w,
                                             const float *pre, int64_t n,
                                             int64_t in, int64_t out,
                                             lap_matmul precision) {
  // dpre [n, in] = dy [n, out] w [out, in], then times the GELU's slope
  // row by row, each row summed into dbias as it is finished.
  gemm('N', 'N', n, in, out, operand(precision, dy, n, out, out, 0),
       operand(precision, w, out, in, in, 1), 0.0f, dpre, in);
  columnSums(dbias, n, in, [&](int64_t i) {
    float *__restrict d = dpre + i * in;
    const float *__restrict p = pre + i * in;
    for (int64_t j = 0; j < in; ++j)
      d[j] *= lap::gelu::slope(p[j], tanhApprox(lap::gelu::tanhArgument(p[j])));
    return d;
  });
}

extern "C" void lap_cpu_linear_gelu_forward_bf16(lap_bf16 *y, lap_bf16 *pre,
                                                 const lap_bf16 *x,
                                                 const lap_bf16 *w,
                                                 const lap_bf16 *b, int64_t n,
                                                 int64_t in, int64_t out) {
  // z [n, out] = x w^T in fp32; row by row, z + b and its GELU (of z + b
  // before it is rounded, as cuBLASLt's epilogue takes it) in fp32, then
  // each rounded: loops the compiler vectorises.
  float *z = fp32Result(n * out);
  gemm('N', 'T', n, out, in, operand(x, n, in, in, 0),
       operand(w, out, in, in, 1), 0.0f, z, out);
  std::vector<float> bias(b ? size_t(out) : 0);
  for (size_t j = 0; j < bias.size(); ++j)
    bias[j] = lap::bf16::value(b[j]);
  parallelFor(n, rowGrain(out), [&](int64_t begin, int64_t end) {
    std::vector<float> activated(static_cast<size_t>(out));
    for (int64_t i = begin; i < end; ++i) {
      float *__restrict v = z + i * out, *__restrict g = activated.data();
      const float *__restrict add = bias.data();
      if (b)
        for (int64_t j = 0; j < out; ++j)
          v[j] += add[j];
      for (int64_t j = 0; j < out; ++j)
        g[j] =
            lap::gelu::value(v[j], tanhApprox(lap::gelu::tanhArgument(v[j])));
      if (pre)
        storeRow(pre, i, out, v);
      storeRow(y, i, out, g);
    }
  });
}

extern "C" void lap_cpu_gelu_linear_backward_bf16(
    lap_bf16 *dpre, lap_bf16 *dbias, const lap_bf16 *dy, const lap_bf16 *w,
    const lap_bf16 *pre, int64_t n, int64_t in, int64_t out) {
  // d [n, in] = dy w in fp32, times the GELU's slope row by row; each row
  // is rounded into dpre and summed, unrounded, into dbias's fp32 sums
  // (after d in the same buffer).
  float *d = fp32Result(n * in + in), *sums = d + n * in;
  gemm('N', 'N', n, in, out, operand(dy, n, out, out, 0),
       operand(w, out, in, in, 1), 0.0f, d, in);
  columnSums(dbias ? sums : nullptr, n, in, [&](int64_t i) {
    thread_local std::vector<float> widened;
    widened.resize(size_t(in));
    const float *__restrict p = fp32Row(pre, i, in, widened.data());
    float *__restrict r = d + i * in;
    for (int64_t j = 0; j < in; ++j)
      r[j] *= lap::gelu::slope(p[j], tanhApprox(lap::gelu::tanhArgument(p[j])));
    storeRow(dpre, i, in, r);
    return r;
  });
  if (dbias)
    roundToBf16(dbias, sums, 1, in);
}

extern "C" void lap_cpu_linear_heads_forward(float *q, float *k, float *v,
                                             const float *x, const float *w,
                                             const float *b, int64_t n,
                                             int64_t in, int64_t hq,
                                             int64_t hkv,
                                             lap_matmul precision) {
  const Matrix xOp = operand(precision, x, n, in, in, 0),
               wOp = operand(precision, w, hq + 2 * hkv, in, in, 1);
  linearForward(q, xOp, wOp, b, n, in, hq);
  linearForward(k, xOp, wOp.from(hq), b ? b + hq : nullptr, n, in, hkv);
  linearForward(v, xOp, wOp.from(hq + hkv), b ? b + hq + hkv : nullptr, n, in,
                hkv);
}

extern "C" void
lap_cpu_linear_heads_backward(float *dx, float *dw, float *db, const float *dq,
                              const float *dk, const float *dv, const float *x,
                              const float *w, int64_t n, int64_t in, int64_t hq,
                              int64_t hkv, lap_matmul precision) {
  const float *blocks[3] = {dq, dk, dv};
  const int64_t widths[3] = {hq, hkv, hkv}, starts[3] = {0, hq, hq + hkv};
  const Matrix xOp = dw ? operand(precision, x, n, in, in, 0) : Matrix{},
               wOp = dx ? operand(precision, w, hq + 2 * hkv, in, in, 1)
                        : Matrix{};
  for (int i = 0; i < 3; ++i) {
    const Matrix block =
        dx || dw ? operand(precision, blocks[i], n, widths[i], widths[i], 2)
                 : Matrix{};
    // dx sums the three blocks' contributions in block order.
    if (dx)
      gemm('N', 'N', n, in, widths[i], block, wOp.from(starts[i]),
           i == 0 ? 0.0f : 1.0f, dx, in);
    if (dw)
      gemm('T', 'N', widths[i], in, n, block, xOp, 0.0f, dw + starts[i] * in,
           in);
    if (db)
      columnSums(db + starts[i], blocks[i], n, widths[i]);
  }
}
