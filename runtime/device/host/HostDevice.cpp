//===- HostDevice.cpp - The host: host memory, arithmetic on the CPU ------===//
//
// Parallel loops run on the shared libgomp pool (lap::cpu::parallelFor).
// Thread-count independence: elementwise work and reductions go by the
// caller's spans (partial sums added in span order), and Newton-Schulz's
// GEMMs by fixed blocks of kRows rows, each one dnnl_sgemm call made from
// inside the parallel region, where oneDNN runs it sequentially; a
// thread-count-dependent split of K inside oneDNN would change the rounding.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/Device.h"
#include "runtime/device/host/Orthogonalize.h"

#include "runtime/comm/Communicator.h"
#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace lap::device {
namespace {

constexpr int64_t kRows = 32; ///< rows per GEMM block in Newton-Schulz

/// Runs f(i) for every i in [0, n), always inside a parallel region when
/// the pool has more than one thread (grain 0), so that oneDNN calls in f run
/// sequentially whatever the pool's size.
template <typename F> void forEach(int64_t n, F &&f) {
  cpu::parallelFor(n, 0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      f(i);
  });
}

/// f(begin, end) on the fixed kSpan pieces of [0, n).
template <typename F> void forPieces(int64_t n, F &&f) {
  forEach((n + kSpan - 1) / kSpan,
          [&](int64_t k) { f(k * kSpan, std::min(n, (k + 1) * kSpan)); });
}

/// Sum of squares of x[0, n) in double, in a fixed order: kLanes
/// interleaved partial sums, so that the additions pipeline and vectorise
/// rather than wait on each other.
double squares(const float *__restrict x, int64_t n) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {}, s = 0;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += double(x[i + l]) * x[i + l];
  for (; i < n; ++i)
    s += double(x[i]) * x[i];
  for (double lane : lanes)
    s += lane;
  return s;
}

/// squares() of x[0, n) by the fixed kSpan pieces, in parallel.
double sumSquares(const float *x, int64_t n) {
  std::vector<double> partial(size_t((n + kSpan - 1) / kSpan));
  forPieces(n, [&](int64_t begin, int64_t end) {
    partial[size_t(begin / kSpan)] = squares(x + begin, end - begin);
  });
  double total = 0;
  for (double s : partial)
    total += s;
  return total;
}

/// torch.lerp's formula: start + w (end - start), from the end for w >= 0.5.
inline float lerp(float start, float end, float w) {
  return w < 0.5f ? start + w * (end - start)
                  : end - (end - start) * (1.0f - w);
}

void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc) {
  dnnl_status_t status =
      dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    std::fprintf(stderr, "lap: dnnl_sgemm failed (status %d)\n", int(status));
    std::abort();
  }
}

/// Calls f(begin, end) on the fixed kRows-row blocks of [0, rows).
template <typename F> void forRowBlocks(int64_t rows, F &&f) {
  forEach((rows + kRows - 1) / kRows, [&](int64_t blk) {
    f(blk * kRows, std::min(rows, (blk + 1) * kRows));
  });
}

class HostDevice final : public Device {
public:
  bool onHost() const override { return true; }

  void *allocateBytes(size_t bytes) override {
    void *data = ::operator new[](bytes, std::align_val_t(64));
    std::memset(data, 0, bytes);
    return data;
  }
  void release(void *data) override {
    ::operator delete[](data, std::align_val_t(64));
  }
  void uploadBytes(void *to, const void *from, size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
  void downloadBytes(void *to, const void *from, size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
  void copyBytes(void *to, const void *from, size_t bytes) override {
    std::memcpy(to, from, bytes);
  }

  void *stream() const override { return nullptr; }

  std::unique_ptr<comm::Communicator>
  communicator(comm::Communicator &) override {
    return nullptr;
  }

  void accumulate(float *acc, const float *g, float scale, int64_t n,
                  bool first) override {
    // Elementwise, so any split gives the same sums: small buffers stay on
    // this thread.
    cpu::parallelFor(n, kSpan, [&](int64_t begin, int64_t end) {
      if (first)
        for (int64_t i = begin; i < end; ++i)
          acc[i] = 0.0f + g[i] * scale;
      else
        for (int64_t i = begin; i < end; ++i)
          acc[i] += g[i] * scale;
    });
  }

  void squaredNorms(const float *x, const std::vector<Span> &spans,
                    double *out) override {
    forEach(int64_t(spans.size()), [&](int64_t k) {
      out[k] = squares(x + spans[size_t(k)].offset, spans[size_t(k)].size);
    });
  }

  void scale(float *x, const std::vector<Span> &spans, float coef) override {
    forEach(int64_t(spans.size()), [&](int64_t k) {
      float *v = x + spans[size_t(k)].offset;
      for (int64_t i = 0; i < spans[size_t(k)].size; ++i)
        v[i] *= coef;
    });
  }

  void adamw(float *params, const float *grads, float *m, float *v,
             const std::vector<Span> &spans, const AdamWScalars &s) override {
    forEach(int64_t(spans.size()), [&](int64_t k) {
      const Span &span = spans[size_t(k)];
      float *p = params + span.offset, *mk = m + span.state,
            *vk = v + span.state;
      const float *g = grads + span.offset;
      for (int64_t i = 0; i < span.size; ++i) {
        float gi = g[i];
        p[i] *= s.decay;
        mk[i] = lerp(mk[i], gi, s.w1);
        vk[i] = vk[i] * s.beta2 + s.w2 * (gi * gi);
        float denom = std::sqrt(vk[i]) / s.bc2Sqrt + s.eps;
        p[i] += -s.stepSize * (mk[i] / denom);
      }
    });
  }

  void muonMomentum(float *buf, const float *g, float *u, int64_t n,
                    float momentum, float weight, bool nesterov) override {
    forPieces(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        buf[i] = lerp(buf[i], g[i], weight);
        u[i] = nesterov ? lerp(g[i], buf[i], momentum) : buf[i];
      }
    });
  }

  void orthogonalize(float *x, int64_t rows, int64_t cols, int64_t steps,
                     lap_matmul precision) override {
    device::orthogonalize(x, x, rows, cols, steps, precision);
  }

  void applyUpdate(float *params, const float *u, int64_t n, float decay,
                   float scale) override {
    forPieces(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        params[i] = params[i] * decay - scale * u[i];
    });
  }
};

} // namespace

Device &host() {
  static HostDevice host;
  return host;
}

void orthogonalize(const float *g, float *out, int64_t rows, int64_t cols,
                   int64_t steps, lap_matmul precision) {
  const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
  bool tall = rows > cols;
  // X is n x m with n <= m, so A = X Xᵀ is the smaller Gram matrix.
  int64_t n = tall ? cols : rows, m = tall ? rows : cols;
  std::vector<float> x(n * m), y(n * m), gram(n * n), poly(n * n);
  // At bf16 the GEMMs read copies rounded to bf16 (the elementwise terms
  // keep the fp32 values).
  const bool bf16 = precision == LAP_MATMUL_BF16;
  std::vector<float> xOp(bf16 ? n * m : 0), gramOp(bf16 ? n * n : 0),
      polyOp(bf16 ? n * n : 0);
  auto operand = [&](const std::vector<float> &v, std::vector<float> &copy,
                     int64_t width) -> const float * {
    if (!bf16)
      return v.data();
    forRowBlocks(int64_t(v.size()) / width, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0 * width; i < i1 * width; ++i)
        copy[i] = lap::bf16::round(v[i]);
    });
    return copy.data();
  };
  float norm = float(std::sqrt(sumSquares(g, rows * cols))) + 1e-7f;
  forRowBlocks(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < m; ++j)
        x[i * m + j] = (tall ? g[j * cols + i] : g[i * m + j]) / norm;
  });
  for (int64_t s = 0; s < steps; ++s) {
    // gram = X Xᵀ
    const float *X = operand(x, xOp, m);
    forRowBlocks(n, [&](int64_t i0, int64_t i1) {
      sgemm('N', 'T', i1 - i0, n, m, 1.0f, &X[i0 * m], m, X, m, 0.0f,
            &gram[i0 * n], n);
    });
    // poly = b A + c A A
    const float *A = operand(gram, gramOp, n);
    forRowBlocks(n, [&](int64_t i0, int64_t i1) {
      std::memcpy(&poly[i0 * n], &gram[i0 * n], (i1 - i0) * n * sizeof(float));
      sgemm('N', 'N', i1 - i0, n, n, c, &A[i0 * n], n, A, n, b, &poly[i0 * n],
            n);
    });
    // Y = a X + poly X
    const float *P = operand(poly, polyOp, n);
    forRowBlocks(n, [&](int64_t i0, int64_t i1) {
      std::memcpy(&y[i0 * m], &x[i0 * m], (i1 - i0) * m * sizeof(float));
      sgemm('N', 'N', i1 - i0, m, n, 1.0f, &P[i0 * n], n, X, m, a, &y[i0 * m],
            m);
    });
    x.swap(y);
  }
  if (!tall) {
    std::memcpy(out, x.data(), n * m * sizeof(float));
    return;
  }
  forRowBlocks(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < cols; ++j)
        out[r * cols + j] = x[j * m + r];
  });
}

} // namespace lap::device
