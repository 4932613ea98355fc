//===- Gemm.cpp - GEMMs through oneDNN, fp32 and bf16 -----------*- C++ -*-===//
//
// fp32: the BLAS-like dnnl_sgemm. bf16: oneDNN's matmul primitive (bf16
// source and weights; an fp32 destination with a sum post-op for beta, or
// a bf16 one with a bf16 bias for gemmToBf16), created per call (oneDNN
// caches primitives by their description) and used only where it runs on
// bf16 instructions: elsewhere (AVX2, or AVX-512 without BF16, where
// oneDNN emulates bf16 more slowly than it multiplies fp32, or oneDNN kept
// to AVX2 by LAP_CPU_ISA) operand() rounds to fp32 values and the fp32
// GEMM multiplies them.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Gemm.h"

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using lap::cpu::Matrix;

namespace {

void check(dnnl_status_t status, const char *what) {
  if (status == dnnl_success)
    return;
  std::fprintf(stderr, "lap: %s failed (oneDNN status %d)\n", what,
               int(status));
  std::abort();
}

/// oneDNN's CPU engine, made once.
dnnl_engine_t engine() {
  static const dnnl_engine_t e = [] {
    dnnl_engine_t made = nullptr;
    check(dnnl_engine_create(&made, dnnl_cpu, 0), "dnnl_engine_create");
    return made;
  }();
  return e;
}

/// This thread's stream on it (streams are not for sharing between
/// threads).
dnnl_stream_t stream() {
  thread_local const dnnl_stream_t s = [] {
    dnnl_stream_t made = nullptr;
    check(dnnl_stream_create(&made, engine(), dnnl_stream_default_flags),
          "dnnl_stream_create");
    return made;
  }();
  return s;
}

/// A logical [rows, cols] view of a row-major matrix stored as op reads it:
/// itself ('N'), or its transpose ('T': stored [cols, rows]).
dnnl_memory_desc_t viewOf(char op, int64_t rows, int64_t cols, int64_t ld,
                          dnnl_data_type_t type) {
  dnnl_dims_t dims = {rows, cols};
  dnnl_dims_t strides = {op == 'T' ? 1 : ld, op == 'T' ? ld : 1};
  dnnl_memory_desc_t desc;
  check(dnnl_memory_desc_init_by_strides(&desc, 2, dims, type, strides),
        "dnnl_memory_desc_init_by_strides");
  return desc;
}

/// The bf16 matmul C [M, N] = op(A) op(B) (+ bias [N]) + beta C, C of
/// type `out` (fp32, or bf16 rounded from the fp32 sums); null where oneDNN
/// has no implementation of it.
dnnl_primitive_desc_t bf16Matmul(char transa, char transb, int64_t M, int64_t N,
                                 int64_t K, int64_t lda, int64_t ldb,
                                 int64_t ldc, float beta,
                                 dnnl_data_type_t out = dnnl_f32,
                                 bool bias = false) {
  dnnl_memory_desc_t a = viewOf(transa, M, K, lda, dnnl_bf16),
                     b = viewOf(transb, K, N, ldb, dnnl_bf16),
                     c = viewOf('N', M, N, ldc, out),
                     row = viewOf('N', 1, N, N, dnnl_bf16);
  dnnl_matmul_desc_t desc;
  check(dnnl_matmul_desc_init(&desc, &a, &b, bias ? &row : nullptr, &c),
        "dnnl_matmul_desc_init");
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t postOps = nullptr;
  if (beta != 0.0f) {
    check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    check(dnnl_post_ops_create(&postOps), "dnnl_post_ops_create");
    check(dnnl_post_ops_append_sum(postOps, beta), "dnnl_post_ops_append_sum");
    check(dnnl_primitive_attr_set_post_ops(attr, postOps),
          "dnnl_primitive_attr_set_post_ops");
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_primitive_desc_create(&pd, &desc, attr, engine(), nullptr) !=
      dnnl_success)
    pd = nullptr;
  if (postOps)
    dnnl_post_ops_destroy(postOps);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return pd;
}

/// bf16Matmul run: C (of type `out`, leading dimension ldc) = op(A) op(B)
/// (+ bias) + beta C.
void bf16Gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
              Matrix A, Matrix B, float beta, void *C, int64_t ldc,
              dnnl_data_type_t out = dnnl_f32, const lap_bf16 *bias = nullptr) {
  dnnl_primitive_desc_t pd = bf16Matmul(transa, transb, M, N, K, A.ld, B.ld,
                                        ldc, beta, out, bias != nullptr);
  if (!pd) {
    std::fprintf(stderr,
                 "lap: oneDNN has no bf16 matmul for %lld x %lld x %lld\n",
                 (long long)M, (long long)N, (long long)K);
    std::abort();
  }
  dnnl_primitive_t matmul = nullptr;
  check(dnnl_primitive_create(&matmul, pd), "dnnl_primitive_create");
  dnnl_memory_desc_t a = viewOf(transa, M, K, A.ld, dnnl_bf16),
                     b = viewOf(transb, K, N, B.ld, dnnl_bf16),
                     c = viewOf('N', M, N, ldc, out),
                     row = viewOf('N', 1, N, N, dnnl_bf16);
  dnnl_memory_t memory[4] = {};
  const dnnl_engine_t e = engine();
  check(dnnl_memory_create(&memory[0], &a, e, const_cast<void *>(A.data)),
        "dnnl_memory_create");
  check(dnnl_memory_create(&memory[1], &b, e, const_cast<void *>(B.data)),
        "dnnl_memory_create");
  check(dnnl_memory_create(&memory[2], &c, e, C), "dnnl_memory_create");
  int count = 3;
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, memory[0]},
                             {DNNL_ARG_WEIGHTS, memory[1]},
                             {DNNL_ARG_DST, memory[2]}};
  if (bias) {
    check(dnnl_memory_create(&memory[3], &row, e, const_cast<lap_bf16 *>(bias)),
          "dnnl_memory_create");
    args[count++] = {DNNL_ARG_BIAS, memory[3]};
  }
  check(dnnl_primitive_execute(matmul, stream(), count, args),
        "dnnl_primitive_execute");
  check(dnnl_stream_wait(stream()), "dnnl_stream_wait");
  for (dnnl_memory_t m : memory)
    if (m)
      dnnl_memory_destroy(m);
  dnnl_primitive_destroy(matmul);
  dnnl_primitive_desc_destroy(pd);
}

/// to [rows, cols] = from + bias [cols] (nullable) rounded to bf16, both
/// with leading dimension ld: as bf16 (T = uint16_t) or as fp32 values
/// (T = float).
template <typename T>
void roundRows(T *to, const float *from, int64_t rows, int64_t cols, int64_t ld,
               const lap_bf16 *bias = nullptr) {
  lap::cpu::parallelFor(
      rows, lap::cpu::rowGrain(cols), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float *__restrict f = from + i * ld;
          T *__restrict t = to + i * ld;
          for (int64_t j = 0; j < cols; ++j) {
            const float v = bias ? f[j] + lap::bf16::value(bias[j]) : f[j];
            if constexpr (sizeof(T) == 2)
              t[j] = lap::bf16::bits(v);
            else
              t[j] = lap::bf16::round(v);
          }
        }
      });
}

/// This thread's buffer `slot` (0 to 3) of at least `size` Ts, kept
/// between calls (fresh pages would fault on every call): operands use 0
/// to 2, gemmToBf16's fp32 sums 3.
template <typename T> T *buffer(int slot, size_t size) {
  thread_local std::vector<T> buffers[4];
  std::vector<T> &b = buffers[slot];
  if (b.size() < size)
    b.resize(size);
  return b.data();
}

} // namespace

// oneDNN names its bf16 implementations "avx512_core_bf16" and
// "avx512_core_amx_bf16"; without them it emulates bf16 ("gemm:jit") or has
// none.
bool lap::cpu::bf16Instructions() {
  static const bool native = [] {
    dnnl_primitive_desc_t pd = bf16Matmul('N', 'N', 64, 64, 64, 64, 64, 64, 0);
    if (!pd)
      return false;
    const char *name = nullptr;
    check(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name),
          "dnnl_primitive_desc_query");
    bool bf16 = name && std::strstr(name, "_bf16");
    dnnl_primitive_desc_destroy(pd);
    return bf16;
  }();
  return native;
}

Matrix lap::cpu::operand(lap_matmul precision, const float *a, int64_t rows,
                         int64_t cols, int64_t ld, int slot) {
  if (precision != LAP_MATMUL_BF16 || !a || rows <= 0 || cols <= 0)
    return fp32(a, ld);
  const size_t size = size_t((rows - 1) * ld + cols);
  if (bf16Instructions()) {
    uint16_t *rounded = buffer<uint16_t>(slot, size);
    roundRows(rounded, a, rows, cols, ld);
    return {rounded, ld, true};
  }
  float *rounded = buffer<float>(slot, size);
  roundRows(rounded, a, rows, cols, ld);
  return fp32(rounded, ld);
}

void lap::cpu::roundToBf16(lap_bf16 *to, const float *from, int64_t rows,
                           int64_t cols, const lap_bf16 *bias) {
  roundRows(to, from, rows, cols, cols, bias);
}

Matrix lap::cpu::operand(const lap_bf16 *a, int64_t rows, int64_t cols,
                         int64_t ld, int slot) {
  if (bf16Instructions() || !a || rows <= 0 || cols <= 0)
    return {a, ld, true};
  float *widened = buffer<float>(slot, size_t((rows - 1) * ld + cols));
  lap::cpu::parallelFor(
      rows, lap::cpu::rowGrain(cols), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          for (int64_t j = 0; j < cols; ++j)
            widened[i * ld + j] = lap::bf16::value(a[i * ld + j]);
      });
  return fp32(widened, ld);
}

void lap::cpu::gemmToBf16(char transa, char transb, int64_t M, int64_t N,
                          int64_t K, Matrix A, Matrix B, lap_bf16 *C,
                          const lap_bf16 *bias) {
  if (M <= 0 || N <= 0)
    return;
  if (A.bf16 && B.bf16 && K > 0)
    return bf16Gemm(transa, transb, M, N, K, A, B, 0.0f, C, N, dnnl_bf16, bias);
  float *sums = buffer<float>(3, size_t(M * N));
  gemm(transa, transb, M, N, K, A, B, 0.0f, sums, N);
  roundToBf16(C, sums, M, N, bias);
}

void lap::cpu::gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                    Matrix A, Matrix B, float beta, float *C, int64_t ldc) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  if (A.bf16 != B.bf16) {
    std::fprintf(stderr, "lap: a GEMM of an fp32 and a bf16 matrix\n");
    std::abort();
  }
  if (A.bf16)
    return bf16Gemm(transa, transb, M, N, K, A, B, beta, C, ldc);
  check(dnnl_sgemm(transa, transb, M, N, K, 1.0f,
                   static_cast<const float *>(A.data), A.ld,
                   static_cast<const float *>(B.data), B.ld, beta, C, ldc),
        "dnnl_sgemm");
}
