//===- Gemm.cpp - GEMMs through oneDNN, fp32 and bf16 -----------*- C++ -*-===//
//
// fp32: the BLAS-like dnnl_sgemm, but where an operand's rows are 4 KiB
// apart (the 1024-wide rows of an MLP, a vocabulary of 8192): those share
// cache sets while sgemm packs them, which costs up to half its speed, so
// gemmPath() sends such GEMMs to oneDNN's fp32 matmul primitive or sgemm
// on padded copies, whichever bench/GemmBench.cpp measured faster on this
// instruction set (and, under AVX2, very wide outputs to sgemm by column
// blocks). bf16: the matmul primitive (bf16 source and weights; an
// fp32 destination with a sum post-op for beta, or a bf16 one with a bf16
// bias for gemmToBf16) used only where it runs on bf16 instructions:
// elsewhere (AVX2, or AVX-512 without BF16, where oneDNN emulates bf16
// more slowly than it multiplies fp32, or oneDNN kept to AVX2 by
// LAP_CPU_ISA) operand() rounds to fp32 values and the fp32 GEMM
// multiplies them. Primitives are created per call: oneDNN caches them by
// their description (a cached creation costs about 1.5 us). In --profile
// builds every GEMM is timed by shape and path (Profile.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Gemm.h"

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/cpu/Isa.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/Profile.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

/// The matmul C [M, N] = op(A) op(B) (+ bias [N]) + beta C of `in`
/// operands (fp32 or bf16) and bias, C of type `out` (fp32, or bf16 rounded
/// from the fp32 sums); null where oneDNN has no implementation of it.
dnnl_primitive_desc_t matmul(dnnl_data_type_t in, char transa, char transb,
                             int64_t M, int64_t N, int64_t K, int64_t lda,
                             int64_t ldb, int64_t ldc, float beta,
                             dnnl_data_type_t out = dnnl_f32,
                             bool bias = false) {
  dnnl_memory_desc_t a = viewOf(transa, M, K, lda, in),
                     b = viewOf(transb, K, N, ldb, in),
                     c = viewOf('N', M, N, ldc, out),
                     row = viewOf('N', 1, N, N, in);
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

/// matmul run on A and B (both fp32 or both bf16): C (of type `out`,
/// leading dimension ldc) = op(A) op(B) (+ bias) + beta C.
void matmulGemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                Matrix A, Matrix B, float beta, void *C, int64_t ldc,
                dnnl_data_type_t out = dnnl_f32,
                const lap_bf16 *bias = nullptr) {
  const dnnl_data_type_t in = A.bf16 ? dnnl_bf16 : dnnl_f32;
  dnnl_primitive_desc_t pd = matmul(in, transa, transb, M, N, K, A.ld, B.ld,
                                    ldc, beta, out, bias != nullptr);
  if (!pd) {
    std::fprintf(
        stderr, "lap: oneDNN has no %s matmul for %lld x %lld x %lld\n",
        A.bf16 ? "bf16" : "fp32", (long long)M, (long long)N, (long long)K);
    std::abort();
  }
  dnnl_primitive_t primitive = nullptr;
  check(dnnl_primitive_create(&primitive, pd), "dnnl_primitive_create");
  dnnl_memory_desc_t a = viewOf(transa, M, K, A.ld, in),
                     b = viewOf(transb, K, N, B.ld, in),
                     c = viewOf('N', M, N, ldc, out),
                     row = viewOf('N', 1, N, N, in);
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
  check(dnnl_primitive_execute(primitive, stream(), count, args),
        "dnnl_primitive_execute");
  check(dnnl_stream_wait(stream()), "dnnl_stream_wait");
  for (dnnl_memory_t m : memory)
    if (m)
      dnnl_memory_destroy(m);
  dnnl_primitive_destroy(primitive);
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

/// This thread's buffer `slot` (0 to 5) of at least `size` Ts, kept
/// between calls (fresh pages would fault on every call): operands use 0
/// to 2, gemmToBf16's fp32 sums 3, padded() A 4 and B 5.
template <typename T> T *buffer(int slot, size_t size) {
  thread_local std::vector<T> buffers[6];
  std::vector<T> &b = buffers[slot];
  if (b.size() < size)
    b.resize(size);
  return b.data();
}

/// oneDNN's name for its implementation of a 64^3 matmul of `in` operands
/// on this CPU, within the instruction set LAP_CPU_ISA allows it ("" where
/// it has none).
std::string matmulImplementation(dnnl_data_type_t in) {
  dnnl_primitive_desc_t pd = matmul(in, 'N', 'N', 64, 64, 64, 64, 64, 64, 0);
  if (!pd)
    return "";
  const char *name = nullptr;
  check(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name),
        "dnnl_primitive_desc_query");
  std::string implementation = name ? name : "";
  dnnl_primitive_desc_destroy(pd);
  return implementation;
}

/// Whether oneDNN's fp32 matmul runs its AVX-512 batch-reduce kernels
/// ("brg:avx512_core"), as opposed to the sgemm's own ("gemm:jit").
bool fp32Brgemm() {
  lap::cpu::useChosenIsa(); // LAP_CPU_ISA limits oneDNN first
  static const bool brgemm =
      matmulImplementation(dnnl_f32).find("brg") != std::string::npos;
  return brgemm;
}

/// GemmPath's names in the profile.
constexpr const char *kPathNames[] = {"sgemm", "padded", "matmul", "blocks"};

/// run(), a GEMM, timed into the profile of a --profile build (Profile.h).
template <typename Run>
void profiled(const char *path, char transa, char transb, int64_t M, int64_t N,
              int64_t K, int64_t lda, int64_t ldb, int64_t ldc, Run run) {
  if (!lap::cpu::profiling())
    return run();
  const auto start = std::chrono::steady_clock::now();
  run();
  lap::cpu::recordGemm(
      path, transa, transb, M, N, K, lda, ldb, ldc,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
}

/// Whether sgemm's packing walks rows of this leading dimension so far
/// apart that they share cache sets: a multiple of 4 KiB.
bool setAliasing(int64_t ld) { return lap::cpu::unaliasedLd(ld) != ld; }

/// dnnl_sgemm on fp32 operands.
void sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K, Matrix A,
           Matrix B, float beta, float *C, int64_t ldc) {
  check(dnnl_sgemm(transa, transb, M, N, K, 1.0f,
                   static_cast<const float *>(A.data), A.ld,
                   static_cast<const float *>(B.data), B.ld, beta, C, ldc),
        "dnnl_sgemm");
}

/// X [rows, cols] (op 'N': [M or K, K or N]; 'T' transposed) copied to
/// this thread's buffer `slot` with rows unaliasedLd() apart.
Matrix padded(const Matrix &x, int64_t rows, int64_t cols, int slot) {
  const int64_t ld = lap::cpu::unaliasedLd(x.ld);
  float *copy = buffer<float>(slot, size_t(rows * ld));
  const float *from = static_cast<const float *>(x.data);
  lap::cpu::parallelFor(rows, lap::cpu::rowGrain(cols),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t i = begin; i < end; ++i)
                            std::memcpy(copy + i * ld, from + i * x.ld,
                                        size_t(cols) * sizeof(float));
                        });
  return lap::cpu::fp32(copy, ld);
}

/// The output columns taken this many at a time by columnBlockSgemm.
constexpr int64_t kColumnBlock = 4096;

/// sgemm by blocks of kColumnBlock columns of C (and of op(B)).
void columnBlockSgemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                      Matrix A, Matrix B, float beta, float *C, int64_t ldc) {
  for (int64_t j0 = 0; j0 < N; j0 += kColumnBlock) {
    // op(B)'s columns are B's rows where B is read transposed.
    const Matrix b = transb == 'T' ? B.from(j0) : B.fromColumn(j0);
    sgemm(transa, transb, M, std::min(kColumnBlock, N - j0), K, A, b, beta,
          C + j0, ldc);
  }
}

/// The products over K taken this many at a time by paddedSgemm, so that
/// its copies stay small (2 MiB of 1024-wide rows).
constexpr int64_t kPaddedK = 512;

/// sgemm over K by blocks of kPaddedK, each aliasing operand's block read
/// from a padded() copy.
void paddedSgemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                 Matrix A, Matrix B, float beta, float *C, int64_t ldc) {
  const bool aRowsK = transa == 'T', bRowsK = transb == 'N';
  for (int64_t k0 = 0; k0 < K; k0 += kPaddedK) {
    const int64_t kb = std::min(kPaddedK, K - k0);
    // Each operand's part from k0 on along K: rows or columns.
    Matrix a = aRowsK ? A.from(k0) : A.fromColumn(k0),
           b = bRowsK ? B.from(k0) : B.fromColumn(k0);
    if (setAliasing(A.ld))
      a = aRowsK ? padded(a, kb, M, 4) : padded(a, M, kb, 4);
    if (setAliasing(B.ld))
      b = bRowsK ? padded(b, kb, N, 5) : padded(b, N, kb, 5);
    sgemm(transa, transb, M, N, kb, a, b, k0 == 0 ? beta : 1.0f, C, ldc);
  }
}

} // namespace

// oneDNN names its bf16 implementations "avx512_core_bf16" and
// "avx512_core_amx_bf16"; without them it emulates bf16 ("gemm:jit") or has
// none.
bool lap::cpu::bf16Instructions() {
  useChosenIsa(); // LAP_CPU_ISA limits oneDNN first
  static const bool native =
      matmulImplementation(dnnl_bf16).find("_bf16") != std::string::npos;
  return native;
}

lap::cpu::GemmPath lap::cpu::gemmPath(char transa, char transb, int64_t N,
                                      int64_t lda, int64_t ldb) {
  // Measured at the benchmark models' shapes (bench/RESULTS.md): sgemm is
  // the fastest but where an operand's rows are 4 KiB apart. An operand
  // read transposed (op 'T') then runs best in oneDNN's AVX-512 matmul,
  // which packs it otherwise; failing that, sgemm's weight-gradient form
  // (TN: both operands walked across rows) reads padded copies.
  const bool aliasingA = setAliasing(lda), aliasingB = setAliasing(ldb);
  if (fp32Brgemm() &&
      ((transa == 'T' && aliasingA) || (transb == 'T' && aliasingB)))
    return GemmPath::Matmul;
  if (transa == 'T' && transb == 'N' && (aliasingA || aliasingB))
    return GemmPath::Padded;
  // oneDNN's AVX2 sgemm halves its speed from 8192 output columns on (the
  // lm_head's logits: 95 against 210 GFLOP/s in blocks of 4096).
  if (!fp32Brgemm() && N > kColumnBlock)
    return GemmPath::ColumnBlocks;
  return GemmPath::Sgemm;
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
  if (!A.bf16 || !B.bf16 || K <= 0) {
    float *sums = buffer<float>(3, size_t(M * N));
    gemm(transa, transb, M, N, K, A, B, 0.0f, sums, N);
    return roundToBf16(C, sums, M, N, bias);
  }
  profiled("bf16", transa, transb, M, N, K, A.ld, B.ld, N, [&] {
    matmulGemm(transa, transb, M, N, K, A, B, 0.0f, C, N, dnnl_bf16, bias);
  });
}

void lap::cpu::gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                    Matrix A, Matrix B, float beta, float *C, int64_t ldc) {
  const GemmPath path =
      A.bf16 ? GemmPath::Matmul : gemmPath(transa, transb, N, A.ld, B.ld);
  profiled(A.bf16 ? "bf16" : kPathNames[int(path)], transa, transb, M, N, K,
           A.ld, B.ld, ldc,
           [&] { gemm(path, transa, transb, M, N, K, A, B, beta, C, ldc); });
}

void lap::cpu::gemm(GemmPath path, char transa, char transb, int64_t M,
                    int64_t N, int64_t K, Matrix A, Matrix B, float beta,
                    float *C, int64_t ldc) {
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
  if (A.bf16 || path == GemmPath::Matmul)
    return matmulGemm(transa, transb, M, N, K, A, B, beta, C, ldc);
  if (path == GemmPath::Padded)
    return paddedSgemm(transa, transb, M, N, K, A, B, beta, C, ldc);
  if (path == GemmPath::ColumnBlocks)
    return columnBlockSgemm(transa, transb, M, N, K, A, B, beta, C, ldc);
  sgemm(transa, transb, M, N, K, A, B, beta, C, ldc);
}
