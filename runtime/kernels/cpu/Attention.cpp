//===- Attention.cpp - fused flash attention with per-head kinds -*- C++ -*-===//
//
// Flash-style attention on the CPU: a block of BQ queries meets the keys BK
// at a time, with the softmax kept online, so no T x S matrix is ever stored
// and the working set (a few BQ x BK and B x D tiles) stays in L1/L2.
// Backward recomputes P tile by tile from the saved logsumexp. Every head
// applies its own epilogue O = alpha P V + beta V (docs/architecture.md).
//
// All matrix products go through one register-blocked micro-kernel,
// C (+)= A B, that broadcasts elements of A and streams rows of B, with the
// width of B a compile-time multiple of the vector width L so clang keeps a
// block of C in vector registers. A is read in place; B, streamed once per
// block of C rows, is a contiguous tile (strided rows of q/k/v would
// conflict in L1), zero-padded to the width. Scores are kept in base 2
// (scale * log2 e folded in) so the softmax needs exp2 only.
//
// A bf16 model's tensors (the `_bf16` entry points) are widened into the
// same fp32 tiles as they are read (rows that fp32 reads in place go
// through a tile of their own), so its products and sums are the fp32
// kernel's on the bf16 values; dq is summed in fp32 buffers, and each
// output element is rounded once.
//
// The file is compiled once per instruction set by Highway's foreach_target
// (Targets.h: AVX-512 with 32 vector registers of 16 floats, AVX2 with 16 of
// 8, generic code for other CPUs), and the entry points at the end dispatch
// to the best one the CPU has (Isa.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/kernels/cpu/Attention.cpp"
#include <hwy/foreach_target.h> // must precede highway.h
#include <hwy/highway.h>

#include "runtime/kernels/AttentionMask.h"
#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/cpu/Isa.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace lap::cpu::HWY_NAMESPACE {
namespace {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kAvx512 = true;
#else
constexpr bool kAvx512 = false;
#endif

constexpr int64_t BQ = 80; // queries per block, at most
constexpr int64_t BK = 80; // keys per block, at most
/// Sequences longer than BQ (BK) run in blocks of at most this many, which
/// measure faster on them; up to BQ fit one block (blockSize()).
constexpr int64_t kLongBlock = 64;
static_assert(BQ <= BK, "a [BK, Dp] tile holds a block of queries too");
/// Floats per vector register (elsewhere than AVX-512: two 128-bit
/// vectors, or one AVX2 vector), the unit of padding and blocking.
constexpr int L = kAvx512 ? 16 : 8;
/// Vector registers the micro-kernel keeps blocks of C in, and the widest
/// block of C it computes at once: AVX-512 has 32 registers (a block of up
/// to 128 floats, R rows of N/16 registers), AVX2 16 (6 rows of 16
/// floats, as in BLIS's 6x16 kernel: 12 accumulators, 2 of B, 1 of A).
constexpr int kAccumulators = kAvx512 ? 16 : 12;
constexpr int kWidestBlock = kAvx512 ? 128 : 2 * L;
constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.69314718055994530942f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using lap::bf16::load;
using lap::bf16::store;

/// 2^x with a relative error of about 2e-7, vectorisable (no libm call).
/// Exactly 0 for x < -126, which includes the -inf of masked scores.
inline float exp2Fast(float x) {
  float xc = std::min(std::max(x, -127.0f), 127.0f);
  // Round to nearest through the float mantissa: |xc| < 2^22.
  float n = (xc + 12582912.0f) - 12582912.0f;
  float f = xc - n; // [-0.5, 0.5]
  // Cephes' exp2f polynomial on [-0.5, 0.5].
  float p = 1.535336188319500e-4f;
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float pow2n;
  std::memcpy(&pow2n, &bits, sizeof(float));
  return x < -126.0f ? 0.0f : p * pow2n;
}

/// For a causal tile, the k that can contribute to rows [m, m + rows) of a
/// product: [m + lo, m + rows + hi). Rows and k index queries and keys (or
/// the reverse), and the other terms are exactly zero.
struct Band {
  int64_t lo = -(int64_t(1) << 40), hi = int64_t(1) << 40;
};

/// C[m, 0:N] (+)= sum_k A(m, k) B[k, 0:N] for m < M, k < K (within band),
/// with A(m, k) = A[m * sam + k * sak]. N is a compile-time width (0: the
/// runtime width n, accumulated in C itself), so clang keeps an R x N block
/// of C in registers while k runs. Columns of B up to N must be finite.
template <int N, bool Accumulate>
void gemm(float *__restrict C, int64_t ldc, const float *__restrict A,
          int64_t sam, int64_t sak, const float *__restrict B, int64_t ldb,
          int64_t M, int64_t K, int64_t n = N, Band band = {}) {
  if constexpr (N == 0) {
    for (int64_t m = 0; m < M; ++m) {
      float *__restrict c = C + m * ldc;
      if (!Accumulate)
        std::fill(c, c + n, 0.0f);
      const int64_t kEnd = std::min(K, m + 1 + band.hi);
      for (int64_t k = std::max<int64_t>(0, m + band.lo); k < kEnd; ++k) {
        const float a = A[m * sam + k * sak];
        const float *__restrict b = B + k * ldb;
        for (int64_t j = 0; j < n; ++j)
          c[j] += a * b[j];
      }
    }
  } else if constexpr (N > kWidestBlock) {
    // Column strips that each keep their block of C in registers.
    gemm<kWidestBlock, Accumulate>(C, ldc, A, sam, sak, B, ldb, M, K,
                                   kWidestBlock, band);
    gemm<N - kWidestBlock, Accumulate>(C + kWidestBlock, ldc, A, sam, sak,
                                       B + kWidestBlock, ldb, M, K,
                                       N - kWidestBlock, band);
  } else {
    // R x N accumulators: kAccumulators vector registers.
    constexpr int R = std::clamp(kAccumulators / (N / L), 1, 8);
    int64_t m = 0;
    auto block = [&](auto rows) HWY_ATTR {
      constexpr int RR = decltype(rows)::value;
      float acc[RR][N];
      for (int r = 0; r < RR; ++r)
        for (int j = 0; j < N; ++j)
          acc[r][j] = Accumulate ? C[(m + r) * ldc + j] : 0.0f;
      const int64_t kEnd = std::min(K, m + RR + band.hi);
      for (int64_t k = std::max<int64_t>(0, m + band.lo); k < kEnd; ++k) {
        const float *__restrict b = B + k * ldb;
        for (int r = 0; r < RR; ++r) {
          const float a = A[(m + r) * sam + k * sak];
          for (int j = 0; j < N; ++j)
            acc[r][j] += a * b[j];
        }
      }
      for (int r = 0; r < RR; ++r)
        for (int j = 0; j < N; ++j)
          C[(m + r) * ldc + j] = acc[r][j];
    };
    for (; m + R <= M; m += R)
      block(std::integral_constant<int, R>());
    for (; m < M; ++m)
      block(std::integral_constant<int, 1>());
  }
}

/// gemm with N = w rounded up to a multiple of L (w <= BK): a short last
/// block of queries or keys costs its own width, not a full block's.
template <bool Accumulate, int N = L>
void gemmNarrow(int64_t w, float *C, int64_t ldc, const float *A, int64_t sam,
                int64_t sak, const float *B, int64_t ldb, int64_t M,
                int64_t K) {
  if constexpr (N < BK)
    if (w > N)
      return gemmNarrow<Accumulate, N + L>(w, C, ldc, A, sam, sak, B, ldb, M,
                                           K);
  gemm<N, Accumulate>(C, ldc, A, sam, sak, B, ldb, M, K);
}

/// dst[j, i] = c * src[i, j] for i < rows, j < cols. Compilers turn the
/// plain loop into gathers or scatters as slow as the products the
/// transposed tile feeds, so AVX-512 and AVX2 get in-register L x L
/// transposes. Columns rows .. roundup(rows, L) of dst are zeroed (products
/// over the rounded-up width read them); dst must have room for them.
void transpose(float *__restrict dst, int64_t ldd, const float *__restrict src,
               int64_t lds, int64_t rows, int64_t cols, float c) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const __m512 vc = _mm512_set1_ps(c);
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t ni = std::min<int64_t>(16, rows - i0);
      const int64_t nj = std::min<int64_t>(16, cols - j0);
      const __mmask16 colMask = __mmask16((1u << nj) - 1);
      __m512 r[16], t[16];
      for (int i = 0; i < 16; ++i)
        r[i] = i < ni
                   ? _mm512_mul_ps(vc, _mm512_maskz_loadu_ps(
                                           colMask, src + (i0 + i) * lds + j0))
                   : _mm512_setzero_ps();
      for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
      // r[4g + k], 128-bit lane l: column 4l + k of rows 4g .. 4g + 3.
      for (int g = 0; g < 16; g += 4)
        for (int h = 0; h < 2; ++h) {
          __m512d a = _mm512_castps_pd(t[g + h]);
          __m512d b = _mm512_castps_pd(t[g + h + 2]);
          r[g + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
          r[g + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
      for (int k = 0; k < 4; ++k) {
        __m512 u0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
        __m512 u1 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
        __m512 v0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
        __m512 v1 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
        t[k] = _mm512_shuffle_f32x4(u0, u1, 0x88);      // column k
        t[8 + k] = _mm512_shuffle_f32x4(u0, u1, 0xdd);  // column 8 + k
        t[4 + k] = _mm512_shuffle_f32x4(v0, v1, 0x88);  // column 4 + k
        t[12 + k] = _mm512_shuffle_f32x4(v0, v1, 0xdd); // column 12 + k
      }
      for (int j = 0; j < nj; ++j)
        _mm512_storeu_ps(dst + (j0 + j) * ldd + i0, t[j]);
    }
#elif HWY_TARGET == HWY_AVX2
  const __m256 vc = _mm256_set1_ps(c);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t i0 = 0; i0 < rows; i0 += 8)
    for (int64_t j0 = 0; j0 < cols; j0 += 8) {
      const int64_t ni = std::min<int64_t>(8, rows - i0);
      const int64_t nj = std::min<int64_t>(8, cols - j0);
      const __m256i colMask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(int(nj)), lanes);
      __m256 r[8], t[8];
      for (int i = 0; i < 8; ++i)
        r[i] = i < ni
                   ? _mm256_mul_ps(vc, _mm256_maskload_ps(
                                           src + (i0 + i) * lds + j0, colMask))
                   : _mm256_setzero_ps();
      // t[2p], t[2p + 1], 128-bit lane l: columns 4l + (0, 1), 4l + (2, 3)
      // of rows 2p, 2p + 1, interleaved.
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
      }
      // r[4g + k], lane l: column 4l + k of rows 4g .. 4g + 3.
      for (int g = 0; g < 8; g += 4)
        for (int h = 0; h < 2; ++h) {
          r[g + 2 * h] = _mm256_shuffle_ps(t[g + h], t[g + h + 2], 0x44);
          r[g + 2 * h + 1] = _mm256_shuffle_ps(t[g + h], t[g + h + 2], 0xee);
        }
      for (int k = 0; k < 4; ++k) {
        t[k] = _mm256_permute2f128_ps(r[k], r[4 + k], 0x20);     // column k
        t[4 + k] = _mm256_permute2f128_ps(r[k], r[4 + k], 0x31); // column 4 + k
      }
      for (int j = 0; j < nj; ++j)
        _mm256_storeu_ps(dst + (j0 + j) * ldd + i0, t[j]);
    }
#else
  const int64_t rounded = (rows + L - 1) / L * L;
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rounded; ++i)
      dst[j * ldd + i] = i < rows ? c * src[i * lds + j] : 0.0f;
#endif
}

/// dst[r, 0:D] = src row r (row stride ld) for r < rows, as fp32, zero up
/// to the width N (runtime width when N = 0). With D == N the rows are
/// copied in registers, not by a memcpy call per row.
template <int N, typename E>
void copyRows(float *__restrict dst, int64_t width, const E *__restrict src,
              int64_t ld, int64_t rows, int64_t D) {
  if (N != 0 && D == N) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < N; ++d)
        dst[r * N + d] = load(src[r * ld + d]);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t d = 0; d < D; ++d)
      dst[r * width + d] = load(src[r * ld + d]);
    for (int64_t d = D; d < width; ++d)
      dst[r * width + d] = 0.0f;
  }
}

/// Rows [rows, D] of src (row stride ld) as fp32 rows and their stride: fp32
/// rows are read in place, bf16 ones widened into `tile` (row stride Dp).
template <int N>
std::pair<const float *, int64_t> fp32Rows(float *, int64_t, const float *src,
                                           int64_t ld, int64_t, int64_t) {
  return {src, ld};
}
template <int N>
std::pair<const float *, int64_t> fp32Rows(float *tile, int64_t Dp,
                                           const lap_bf16 *src, int64_t ld,
                                           int64_t rows, int64_t D) {
  copyRows<N>(tile, Dp, src, ld, rows, D);
  return {tile, Dp};
}

/// Asks for rows that are about to be read, which the hardware prefetcher
/// would fetch too late (they are strided, one short run per row).
template <typename E>
void prefetchRows(const E *src, int64_t ld, int64_t rows, int64_t D) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < D; d += 64 / sizeof(E))
      __builtin_prefetch(src + r * ld + d);
}

/// sum of a[i] b[i], i < n, in 16 lanes so that it vectorises.
template <typename E>
float dot(const E *__restrict a, const E *__restrict b, int64_t n) {
  float lanes[L] = {}, sum = 0.0f;
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l)
      lanes[l] += load(a[i + l]) * load(b[i + l]);
  for (; i < n; ++i)
    sum += load(a[i]) * load(b[i]);
  for (int l = 0; l < L; ++l)
    sum += lanes[l];
  return sum;
}

/// A 64-byte aligned buffer of the calling thread, kept across calls: fresh
/// pages would fault on every call (slowly, in a VM). Slot 0 holds a
/// worker's tiles, slot 1 the fp32 dq sums of backward.
float *threadBuffer(int slot, int64_t floats) {
  struct Buffer {
    float *data = nullptr;
    int64_t size = 0;
    ~Buffer() { ::operator delete[](data, std::align_val_t(64)); }
  };
  thread_local Buffer buffers[2];
  Buffer &buf = buffers[slot];
  if (buf.size < floats) {
    ::operator delete[](buf.data, std::align_val_t(64));
    buf.data = nullptr; // stays consistent if new throws
    buf.size = 0;
    buf.data = static_cast<float *>(
        ::operator new[](floats * sizeof(float), std::align_val_t(64)));
    buf.size = floats;
  }
  return buf.data;
}

/// Runs task(i, scratch) for i in [0, n) on the pool, handing tasks out one
/// at a time (their costs differ under a causal mask). Tasks write disjoint
/// outputs, so results do not depend on the schedule. Before task i,
/// prefetch(i + workers) may ask for the inputs of the task this worker
/// most likely runs next.
template <typename F, typename Prefetch>
void runTasks(int64_t n, int64_t scratchFloats, F &&task, Prefetch &&prefetch) {
  const int64_t workers =
      std::min<int64_t>(n, std::max(1, omp_get_max_threads()));
  std::atomic<int64_t> next{0};
  parallelFor(workers, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    float *scratch = threadBuffer(0, scratchFloats);
    for (int64_t w = begin; w < end; ++w)
      for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
        if (i + workers < n)
          prefetch(i + workers);
        task(i, scratch);
      }
  });
}

struct Shape {
  int64_t B, T, S, H, KV, D;
  int64_t Dp;           // D rounded up to a multiple of L
  int64_t qStep, kStep; // queries and keys per block
  float scale;
  bool causal;
  int64_t window; // causal: query t sees keys t - window < s <= t (0: all)
  /// causal: [B, T], query t of sequence b sees keys from starts[b T + t]
  /// (its document's first token) on; or null.
  const int32_t *starts;
  /// [B]: sequence b's keys are its first lengths[b], the rest padding that
  /// no query sees; or null: all S.
  const int32_t *lengths;
  int64_t group() const { return H / KV; }
  bool padded() const { return Dp != D; }
  // Row offsets (in floats) into q/o [B, T, H, D] and k/v [B, S, KV, D].
  int64_t qRow(int64_t b, int64_t t, int64_t h) const {
    return ((b * T + t) * H + h) * D;
  }
  int64_t kRow(int64_t b, int64_t s, int64_t g) const {
    return ((b * S + s) * KV + g) * D;
  }
  /// The first key that query t of sequence b sees: 0, or under a window
  /// or in a document a later one. Nondecreasing in t; a t past the last
  /// query (a padding lane) counts as the last.
  int64_t firstKey(int64_t b, int64_t t) const {
    t = std::min(t, T - 1);
    return attention_mask::firstKey(t, window,
                                    starts ? starts + b * T : nullptr);
  }
  /// The keys of sequence b that are not padding.
  int64_t keys(int64_t b) const {
    return lengths ? std::clamp<int64_t>(lengths[b], 0, S) : S;
  }
  /// One past the last key that a query of [t0, t0 + nq) of sequence b
  /// sees.
  int64_t keyEnd(int64_t b, int64_t t0, int64_t nq) const {
    return std::min(causal ? std::min(S, t0 + nq) : S, keys(b));
  }
  /// Whether some key of [s0, s0 + nk) is masked for some query of
  /// [t0, t0 + nq) of sequence b.
  bool partlyMasked(int64_t b, int64_t t0, int64_t nq, int64_t s0,
                    int64_t nk) const {
    return (causal && s0 + nk - 1 > t0) || firstKey(b, t0 + nq - 1) > s0;
  }
  /// The first key block that a query of [t0, ...) of sequence b sees.
  int64_t firstKeyBlock(int64_t b, int64_t t0) const {
    return firstKey(b, t0) / kStep * kStep;
  }
  /// One past the last query of sequence b that sees a key of [s0, s0 +
  /// nk): queries from the first whose first key is past the block see
  /// none of it.
  int64_t queryEnd(int64_t b, int64_t s0, int64_t nk) const {
    if (window == 0 && !starts)
      return T;
    return attention_mask::queryEnd(s0 + nk - 1, T,
                                    [&](int64_t t) { return firstKey(b, t); });
  }
};

/// The Band of a product over query rows t0 + i and keys s0 + j (k):
/// query i sees keys i + t0 - s0 - window < j <= i + t0 - s0.
Band queryBand(const Shape &s, int64_t t0, int64_t s0) {
  return {s.window > 0 ? t0 - s0 - s.window + 1 : Band().lo, t0 - s0};
}

/// The Band of a product over key rows s0 + j and queries t0 + i (k): key
/// j meets queries j + s0 - t0 <= i < j + s0 - t0 + window.
Band keyBand(const Shape &s, int64_t t0, int64_t s0) {
  return {s0 - t0, s.window > 0 ? s0 - t0 + s.window - 1 : Band().hi};
}

/// Blocks covering n as evenly as multiples of L allow: one block up to
/// `most` (a ViT's 64 patches and class token, n = 65, in one block of 80
/// lanes rather than 48 + 17 rounded to 48 + 32: the same lanes, half the
/// blocks' fixed costs: 6-8% less time forward, 4% backward), else blocks
/// of at most kLongBlock: n = 130 gives 48 + 48 + 34, not 64 + 64 + 2 (a
/// short block runs at a fraction of the speed, and costs nearly a full
/// block's overheads).
int64_t blockSize(int64_t n, int64_t most) {
  if (n > most)
    most = kLongBlock;
  const int64_t blocks = std::max<int64_t>(1, (n + most - 1) / most);
  return std::clamp<int64_t>(((n + blocks - 1) / blocks + L - 1) / L * L, L,
                             most);
}

Shape makeShape(int64_t B, int64_t T, int64_t S, int64_t H, int64_t KV,
                int64_t D, float scale, int32_t causal, int64_t window,
                const int32_t *starts, const int32_t *lengths) {
  Shape s{B, T, S,     H,           KV,     D,      (D + L - 1) / L * L,
          0, 0, scale, causal != 0, window, starts, lengths};
  s.qStep = blockSize(T, BQ);
  s.kStep = blockSize(S, BK);
  return s;
}

/// Calls fn(integral_constant<int, N>) with N the padded head width when
/// it is a multiple of 16 up to 128, else N = 0 (runtime width).
template <int N = 16, typename F> void dispatchWidth(int64_t Dp, F &&fn) {
  if constexpr (N > 128) {
    fn(std::integral_constant<int, 0>());
  } else {
    if (Dp == N)
      return fn(std::integral_constant<int, N>());
    dispatchWidth<N + 16>(Dp, fn);
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//
//
// Scores are computed transposed, St = K Q^T [BK, BQ], from Q^T transposed
// once per query block: K is then read in place, and the softmax statistics
// of the BQ queries are vectors updated key by key (no horizontal
// reductions).

/// Tensors of element type E (fp32, or a bf16 model's bf16); the
/// logsumexp and the coefficients are fp32 either way.
template <typename E> struct ForwardArgs {
  E *o;
  float *lse;
  const E *q, *k, *v;
  const float *alpha, *beta;
};

int64_t forwardScratch(int64_t Dp) {
  return Dp * BQ + BQ * Dp + 2 * BK * Dp + BK * BQ;
}

/// The query block [t0, t0 + nq) of head h in batch b.
template <int N, typename E>
void forwardBlock(const Shape &s, const ForwardArgs<E> &a, int64_t b, int64_t h,
                  int64_t t0, float *ws) {
  const int64_t D = s.D, Dp = N ? N : s.Dp, ldq = s.H * D, ldk = s.KV * D;
  const int64_t g = h / s.group(), nq = std::min(s.qStep, s.T - t0);
  float *__restrict Qt = ws;             // [D, BQ] scale * log2e * Q^T
  float *__restrict Acc = Qt + Dp * BQ;  // [BQ, Dp] unnormalised P V
  float *__restrict Vp = Acc + BQ * Dp;  // [BK, Dp] V
  float *__restrict St = Vp + BK * Dp;   // [BK, BQ] scores, then P^T
  float *__restrict Wide = St + BK * BQ; // [BK, Dp] bf16 Q, then K, widened
  alignas(64) float rowMax[BQ], rowSum[BQ], corr[BQ], mx[BQ];
  const int64_t W = (nq + L - 1) / L * L; // query lanes computed

  const auto [qs, ldqs] =
      fp32Rows<N>(Wide, Dp, a.q + s.qRow(b, t0, h), ldq, nq, D);
  transpose(Qt, BQ, qs, ldqs, nq, D, s.scale * kLog2e);
  std::fill(Acc, Acc + nq * Dp, 0.0f);
  std::fill(rowMax, rowMax + BQ, kNegInf);
  std::fill(rowSum, rowSum + BQ, 0.0f);

  // Causal: key blocks past the last query are fully masked, and under a
  // window or in documents those before the first query's first key; so
  // are the padding's; skip them. Lane i sees keys [lowest[i], highest[i]].
  const int64_t keyEnd = s.keyEnd(b, t0, nq);
  alignas(64) int64_t lowest[BQ], highest[BQ];
  for (int64_t i = 0; i < W; ++i) {
    lowest[i] = s.firstKey(b, t0 + i);
    highest[i] = s.causal ? t0 + i : s.S;
  }
  for (int64_t s0 = s.firstKeyBlock(b, t0); s0 < keyEnd; s0 += s.kStep) {
    const int64_t nk = std::min(s.kStep, keyEnd - s0);
    const E *kRows = a.k + s.kRow(b, s0, g);
    if (s0 + s.kStep < keyEnd) {
      const int64_t next = std::min(s.kStep, keyEnd - s0 - s.kStep);
      prefetchRows(kRows + s.kStep * ldk, ldk, next, D);
      prefetchRows(a.v + s.kRow(b, s0 + s.kStep, g), ldk, next, D);
    }
    const auto [kb, ldkb] = fp32Rows<N>(Wide, Dp, kRows, ldk, nk, D);
    const bool masked = s.partlyMasked(b, t0, nq, s0, nk);
    if (!masked) {
      gemmNarrow<false>(W, St, BQ, kb, ldkb, 1, Qt, BQ, nk, D);
    } else {
      // By strips of 16 queries: keys after a strip's last query are
      // masked and not computed (the mask below overwrites them).
      for (int64_t c = 0; c < W; c += L) {
        const int64_t rows = std::min(nk, t0 + c + L - s0);
        if (rows > 0)
          gemm<L, false>(St + c, BQ, kb, ldkb, 1, Qt + c, BQ, rows, D);
      }
    }
    copyRows<N>(Vp, Dp, a.v + s.kRow(b, s0, g), ldk, nk, D);

    if (masked)
      for (int64_t j = 0; j < nk; ++j)
        for (int64_t i = 0; i < W; ++i)
          St[j * BQ + i] = s0 + j < lowest[i] || s0 + j > highest[i]
                               ? kNegInf
                               : St[j * BQ + i];
    std::copy(rowMax, rowMax + W, mx);
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t i = 0; i < W; ++i)
        mx[i] = std::max(mx[i], St[j * BQ + i]);
    // Rescale what the earlier blocks accumulated to the new maximum. A
    // query that has seen nothing yet keeps -inf and gets P = 0.
    for (int64_t i = 0; i < W; ++i) {
      const float m = mx[i] == kNegInf ? 0.0f : mx[i];
      corr[i] = exp2Fast(rowMax[i] - m);
      rowMax[i] = mx[i];
      mx[i] = m;
      rowSum[i] *= corr[i];
    }
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t i = 0; i < W; ++i) {
        const float p = exp2Fast(St[j * BQ + i] - mx[i]);
        St[j * BQ + i] = p;
        rowSum[i] += p;
      }
    if (s0 > 0)
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t d = 0; d < Dp; ++d)
          Acc[i * Dp + d] *= corr[i];
    // Acc += P V; under the mask query i sees keys j <= i + t0 - s0 (and
    // under a window j > i + t0 - s0 - window).
    gemm<N, true>(Acc, Dp, St, 1, BQ, Vp, Dp, nq, nk, Dp,
                  masked ? queryBand(s, t0, s0) : Band());
  }

  // Epilogue: O = alpha P V + beta V_t, V_t at the query's own position.
  const float al = a.alpha[h], be = a.beta[h];
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t t = t0 + i;
    E *__restrict out = a.o + s.qRow(b, t, h);
    const float *__restrict acc = Acc + i * Dp;
    const float c = rowSum[i] > 0.0f ? al / rowSum[i] : 0.0f;
    if (be != 0.0f && t < s.S) {
      const E *__restrict vt = a.v + s.kRow(b, t, g);
      for (int64_t d = 0; d < D; ++d)
        store(out[d], c * acc[d] + be * load(vt[d]));
    } else {
      for (int64_t d = 0; d < D; ++d)
        store(out[d], c * acc[d]);
    }
    a.lse[(b * s.H + h) * s.T + t] =
        rowSum[i] > 0.0f ? (rowMax[i] + std::log2(rowSum[i])) * kLn2 : kNegInf;
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//
//
// Key-block outer loop: a task holds dK and dV of BK keys in tiles while the
// query blocks of every head of the kv group pass by, and adds each tile's
// dQ into the dq rows in memory. K^T and V^T are transposed once per key
// block.

/// As ForwardArgs; dq is made in fp32 buffers (the dqOut of the tasks).
template <typename E> struct BackwardArgs {
  E *dk, *dv;
  const E *dout, *q, *k, *v, *o;
  const float *lse, *alpha, *beta;
};

/// A task's sums for the coefficients' gradients of the G heads of its kv
/// group, or null when the kinds are fixed: [G] sum P dP (d alpha), then
/// [G] sum dO V (d beta).
using CoefficientSums = double *;

int64_t backwardTiles(int64_t Dp) {
  return 2 * Dp * BK + 4 * BK * Dp + 3 * BQ * Dp + 2 * BQ * BK;
}

/// Gradients of the key block [s0, s0 + nk) of kv head g in batch b from
/// every query head of the group: writes its dk/dv rows and adds the dQ
/// terms into dqOut (laid out like dq). lse2 and rowDot [G, T] hold the
/// group's lse * log2 e and D_i. nextS0 is the task's next key block (or
/// -1), prefetched during the last query block. With `sums`, adds each
/// head's sum of P dP over the block into sums[0 .. G).
template <int N, typename E>
void backwardKeyBlock(const Shape &s, const BackwardArgs<E> &a, float *dqOut,
                      const float *lse2, const float *rowDot, int64_t b,
                      int64_t g, int64_t s0, int64_t nextS0,
                      CoefficientSums sums, float *ws) {
  const int64_t D = s.D, Dp = N ? N : s.Dp, ldq = s.H * D, ldk = s.KV * D;
  // Keys from s.keys(b) on are padding that no query sees: their dk is 0
  // and their dv only the beta terms.
  const int64_t G = s.group(), rows = std::min(s.kStep, s.S - s0),
                nk = std::clamp<int64_t>(s.keys(b) - s0, 0, rows);
  const int64_t W = (nk + L - 1) / L * L; // key lanes computed
  float *__restrict Kt = ws;              // [D, BK]
  float *__restrict Vt = Kt + Dp * BK;    // [D, BK]
  float *__restrict dKa = Vt + Dp * BK;   // [BK, Dp]
  float *__restrict dVa = dKa + BK * Dp;  // [BK, Dp]
  float *__restrict Kp = dVa + BK * Dp;   // [BK, Dp] K
  float *__restrict Qp = Kp + BK * Dp;    // [BQ, Dp] Q
  float *__restrict dOp = Qp + BQ * Dp;   // [BQ, Dp] dO
  float *__restrict dQp = dOp + BQ * Dp;  // [BQ, Dp] dQ, when D is padded
  float *__restrict P = dQp + BQ * Dp;    // [BQ, BK] alpha P
  float *__restrict dS = P + BQ * BK;     // [BQ, BK] scale * dS
  float *__restrict Wide = dS + BQ * BK;  // [BK, Dp] bf16 V widened

  copyRows<N>(Kp, Dp, a.k + s.kRow(b, s0, g), ldk, nk, D);
  transpose(Kt, BK, Kp, Dp, nk, D, 1.0f);
  const auto [vb, ldvb] =
      fp32Rows<N>(Wide, Dp, a.v + s.kRow(b, s0, g), ldk, nk, D);
  transpose(Vt, BK, vb, ldvb, nk, D, 1.0f);
  std::fill(dKa, dKa + BK * Dp, 0.0f);
  std::fill(dVa, dVa + BK * Dp, 0.0f);

  const float c2 = s.scale * kLog2e;
  // Causal: queries before s0 see none of these keys, and under a window
  // or in documents neither do those from queryEnd on.
  const int64_t firstBlock = s.causal ? s0 / s.qStep : 0;
  const int64_t queryEnd = nk > 0 ? s.queryEnd(b, s0, nk) : 0;
  for (int64_t hg = 0; hg < G; ++hg) {
    const int64_t h = g * G + hg;
    const float al = a.alpha[h];
    // P dP per key lane, summed over the head's queries (no horizontal
    // reduction in the row loop).
    alignas(64) float pdp[BK] = {};
    for (int64_t t0 = firstBlock * s.qStep; t0 < queryEnd; t0 += s.qStep) {
      const int64_t nq = std::min(s.qStep, s.T - t0);
      const E *qb = a.q + s.qRow(b, t0, h);
      const E *db = a.dout + s.qRow(b, t0, h);
      float *dqb = dqOut + s.qRow(b, t0, h);
      if (t0 + s.qStep < queryEnd) {
        const int64_t next = std::min(s.qStep, s.T - t0 - s.qStep);
        prefetchRows(qb + s.qStep * ldq, ldq, next, D);
        prefetchRows(db + s.qStep * ldq, ldq, next, D);
        prefetchRows(dqb + s.qStep * ldq, ldq, next, D);
      } else if (hg == G - 1 && nextS0 >= 0) {
        const int64_t next = std::min(s.kStep, s.S - nextS0);
        prefetchRows(a.k + s.kRow(b, nextS0, g), ldk, next, D);
        prefetchRows(a.v + s.kRow(b, nextS0, g), ldk, next, D);
      }

      // P = 2^(c2 Q K^T - lse2) and dP = dO V^T, [nq, BK].
      copyRows<N>(Qp, Dp, qb, ldq, nq, D);
      copyRows<N>(dOp, Dp, db, ldq, nq, D);
      const bool masked = s.partlyMasked(b, t0, nq, s0, nk);
      if (!masked) {
        gemmNarrow<false>(nk, P, BK, Qp, Dp, 1, Kt, BK, nq, D);
        gemmNarrow<false>(nk, dS, BK, dOp, Dp, 1, Vt, BK, nq, D);
      } else {
        // By strips of 16 keys: queries before a strip's first key see
        // none of it and are not computed (zeroed below).
        for (int64_t c = 0; c < W; c += L) {
          const int64_t i0 = std::clamp<int64_t>(s0 + c - t0, 0, nq);
          gemm<L, false>(P + i0 * BK + c, BK, Qp + i0 * Dp, Dp, 1, Kt + c, BK,
                         nq - i0, D);
          gemm<L, false>(dS + i0 * BK + c, BK, dOp + i0 * Dp, Dp, 1, Vt + c, BK,
                         nq - i0, D);
        }
      }
      for (int64_t i = 0; i < nq; ++i) {
        // The keys [from, lim) of the block that query i sees.
        const int64_t lim =
            masked ? std::clamp<int64_t>(t0 + i - s0 + 1, 0, nk) : nk;
        const int64_t from =
            masked ? std::clamp<int64_t>(s.firstKey(b, t0 + i) - s0, 0, nk) : 0;
        const float m = lse2[hg * s.T + t0 + i];
        const float di = rowDot[hg * s.T + t0 + i];
        float *__restrict p = P + i * BK, *__restrict ds = dS + i * BK;
        // dP = dO V^T is in ds until the softmax backward overwrites it.
        auto row = [&](auto learned) HWY_ATTR {
          for (int64_t j = 0; j < W; ++j) {
            const bool seen = j >= from && j < lim;
            const float pj = seen ? exp2Fast(c2 * p[j] - m) : 0.0f;
            const float dp = seen ? ds[j] : 0.0f;
            if constexpr (decltype(learned)::value)
              pdp[j] += pj * dp;
            ds[j] = s.scale * pj * (al * dp - di);
            p[j] = al * pj;
          }
        };
        if (sums)
          row(std::true_type());
        else
          row(std::false_type());
      }

      // dV += (alpha P)^T dO, dK += dS^T Q, dQ += dS K, each over the
      // pairs that see each other.
      const Band keyRows = masked ? keyBand(s, t0, s0) : Band();
      const Band queryRows = masked ? queryBand(s, t0, s0) : Band();
      gemm<N, true>(dVa, Dp, P, 1, BK, dOp, Dp, nk, nq, Dp, keyRows);
      gemm<N, true>(dKa, Dp, dS, 1, BK, Qp, Dp, nk, nq, Dp, keyRows);
      if (s.padded()) {
        copyRows<N>(dQp, Dp, dqb, ldq, nq, D);
        gemm<N, true>(dQp, Dp, dS, BK, 1, Kp, Dp, nq, nk, Dp, queryRows);
        for (int64_t i = 0; i < nq; ++i)
          std::copy(dQp + i * Dp, dQp + i * Dp + D, dqb + i * ldq);
      } else {
        gemm<N, true>(dqb, ldq, dS, BK, 1, Kp, Dp, nq, nk, Dp, queryRows);
      }
    }
    if (sums)
      for (int64_t j = 0; j < nk; ++j)
        sums[hg] += pdp[j];
  }

  for (int64_t j = 0; j < rows; ++j) {
    const int64_t sj = s0 + j;
    float *__restrict dKj = dKa + j * Dp, *__restrict dVj = dVa + j * Dp;
    // The beta term: V at the query's own position gets beta dO.
    if (sj < s.T)
      for (int64_t h = g * G; h < g * G + G; ++h)
        if (a.beta[h] != 0.0f) {
          const float be = a.beta[h];
          const E *__restrict dout = a.dout + s.qRow(b, sj, h);
          for (int64_t d = 0; d < D; ++d)
            dVj[d] += be * load(dout[d]);
        }
    E *__restrict dk = a.dk + s.kRow(b, sj, g);
    E *__restrict dv = a.dv + s.kRow(b, sj, g);
    for (int64_t d = 0; d < D; ++d) {
      store(dk[d], dKj[d]);
      store(dv[d], dVj[d]);
    }
  }
}

/// lse2, rowDot [G, T] for the heads of kv head g in batch b: lse * log2 e
/// and D_i = rowsum(dO_i * (O_i - beta V_i)) = rowsum(dO'_i * (P V)_i).
/// With `dOV`, adds each head's sum of dO_i * V_i into dOV[0 .. G).
template <typename E>
void backwardRowTerms(const Shape &s, const BackwardArgs<E> &a, float *lse2,
                      float *rowDot, int64_t b, int64_t g, double *dOV) {
  const int64_t G = s.group();
  for (int64_t hg = 0; hg < G; ++hg) {
    const int64_t h = g * G + hg;
    for (int64_t t = 0; t < s.T; ++t) {
      const E *d = a.dout + s.qRow(b, t, h);
      float sum = dot(d, a.o + s.qRow(b, t, h), s.D);
      if ((a.beta[h] != 0.0f || dOV) && t < s.S) {
        const float own = dot(d, a.v + s.kRow(b, t, g), s.D);
        sum -= a.beta[h] * own;
        if (dOV)
          dOV[hg] += own;
      }
      rowDot[hg * s.T + t] = sum;
      lse2[hg * s.T + t] = a.lse[(b * s.H + h) * s.T + t] * kLog2e;
    }
  }
}

template <typename E>
void forward(E *o, float *lse, const E *q, const E *k, const E *v,
             const float *coefficients, const int32_t *starts,
             const int32_t *lengths, int64_t B, int64_t T, int64_t S, int64_t H,
             int64_t KV, int64_t D, float scale, int32_t causal,
             int64_t window) {
  const Shape s =
      makeShape(B, T, S, H, KV, D, scale, causal, window, starts, lengths);
  const ForwardArgs<E> a{o, lse, q, k, v, coefficients, coefficients + H};
  const int64_t nqb = (T + s.qStep - 1) / s.qStep, BH = B * H;
  dispatchWidth(s.Dp, [&](auto width) {
    constexpr int N = decltype(width)::value;
    // The query blocks of a head one after the other, so its K and V stay
    // in cache; costliest first (under a causal mask, the last ones).
    auto block = [&](int64_t i) {
      const int64_t bh = i / nqb, qb = nqb - 1 - i % nqb;
      return std::make_tuple(bh / H, bh % H, qb * s.qStep);
    };
    runTasks(
        BH * nqb, forwardScratch(s.Dp),
        [&](int64_t i, float *ws) HWY_ATTR {
          auto [b, h, t0] = block(i);
          forwardBlock<N>(s, a, b, h, t0, ws);
        },
        [&](int64_t i) HWY_ATTR { // its queries and first block of keys
          auto [b, h, t0] = block(i);
          const int64_t g = h / s.group();
          const int64_t nq = std::min(s.qStep, T - t0);
          const int64_t s0 = s.firstKeyBlock(b, t0);
          const int64_t nk = std::min(s.kStep, s.keyEnd(b, t0, nq) - s0);
          prefetchRows(q + s.qRow(b, t0, h), H * D, nq, D);
          if (nk > 0) {
            prefetchRows(k + s.kRow(b, s0, g), KV * D, nk, D);
            prefetchRows(v + s.kRow(b, s0, g), KV * D, nk, D);
          }
        });
  });
}

template <typename E>
void backward(E *dq, E *dk, E *dv, float *dcoefficients, const E *dout,
              const E *q, const E *k, const E *v, const E *o, const float *lse,
              const float *coefficients, const int32_t *starts,
              const int32_t *lengths, int64_t B, int64_t T, int64_t S,
              int64_t H, int64_t KV, int64_t D, float scale, int32_t causal,
              int64_t window) {
  const Shape s =
      makeShape(B, T, S, H, KV, D, scale, causal, window, starts, lengths);
  const int64_t G = s.group(), groups = B * KV;
  const int64_t nkb = (S + s.kStep - 1) / s.kStep, dqSize = B * T * H * D;

  // A task owns a kv head of a batch, hence its dk/dv and the dq rows of
  // its query heads: no races. With few such groups their key blocks are
  // also dealt to `chunks` tasks, each with a dq partial summed at the end:
  // round-robin (under the causal mask the first blocks meet the most
  // queries), or, under a window or in documents, where a block's terms
  // reach only the queries up to its queryEnd, in runs of consecutive
  // blocks, each partial then zeroed and summed only over the query rows
  // its run reaches. The split depends on the shape and the mask only, so
  // results do not depend on the thread count.
  int64_t chunks =
      std::clamp<int64_t>((16 + groups - 1) / std::max<int64_t>(groups, 1), 1,
                          std::max<int64_t>(nkb, 1)); // at most 16
  while (chunks > 1 && (chunks - 1) * dqSize > (int64_t(4) << 20))
    --chunks;
  const bool runs = s.window > 0 || s.starts;
  // The query rows [from, to) task i's dq partial holds.
  std::vector<std::pair<int64_t, int64_t>> reach(size_t(groups * chunks),
                                                 {0, T});
  // The dq sums in fp32, one per chunk: the first is dq itself when it is
  // fp32, a buffer rounded into it at the end when it is bf16.
  constexpr bool inPlace = std::is_same_v<E, float>;
  const int64_t buffers = inPlace ? chunks - 1 : chunks;
  float *sums32 = buffers > 0 ? threadBuffer(1, buffers * dqSize) : nullptr;
  auto dqSum = [&](int64_t c) -> float * {
    if constexpr (inPlace)
      if (c == 0)
        return dq;
    return sums32 + (inPlace ? c - 1 : c) * dqSize;
  };

  const BackwardArgs<E> a{
      dk, dv, dout, q, k, v, o, lse, coefficients, coefficients + H};
  // Per task [2, G] sums for the coefficients' gradients, added in task
  // order at the end: the result does not depend on the thread count.
  std::vector<double> sums(dcoefficients ? size_t(groups * chunks * 2 * G) : 0);
  const int64_t tiles = backwardTiles(s.Dp);
  dispatchWidth(s.Dp, [&](auto width) {
    constexpr int N = decltype(width)::value;
    runTasks(
        groups * chunks, tiles + 2 * G * T,
        [&](int64_t i, float *ws) HWY_ATTR {
          const int64_t grp = i / chunks, c = i % chunks;
          const int64_t b = grp / KV, g = grp % KV;
          float *lse2 = ws + tiles, *rowDot = lse2 + G * T;
          CoefficientSums mine = sums.empty() ? nullptr : &sums[i * 2 * G];
          // Every chunk of the group needs the row terms; one sums dO V.
          backwardRowTerms(s, a, lse2, rowDot, b, g,
                           mine && c == 0 ? mine + G : nullptr);
          // Key blocks first, first + step, ... before end.
          const int64_t first = runs ? c * nkb / chunks : c,
                        step = runs ? 1 : chunks,
                        end = runs ? (c + 1) * nkb / chunks : nkb;
          auto &[from, to] = reach[size_t(i)];
          if (runs) {
            const int64_t last = (end - 1) * s.kStep;
            from = first * s.kStep;
            to = s.queryEnd(b, last, std::min(s.kStep, S - last));
          }
          float *dqOut = dqSum(c);
          for (int64_t t = from; t < to; ++t)
            std::fill(dqOut + s.qRow(b, t, g * G),
                      dqOut + s.qRow(b, t, g * G + G), 0.0f);
          for (int64_t kb = first; kb < end; kb += step) {
            const int64_t next = kb + step < end ? (kb + step) * s.kStep : -1;
            backwardKeyBlock<N>(s, a, dqOut, lse2, rowDot, b, g, kb * s.kStep,
                                next, mine, ws);
          }
        },
        [](int64_t) {});
  });

  // Each dq row [b, t, h]: the sum of the partials that reach it, in chunk
  // order (at most 16 chunks).
  if (buffers > 0)
    parallelFor(B * T * H, std::max<int64_t>(1, (1 << 14) / D),
                [&](int64_t begin, int64_t end) HWY_ATTR {
                  const float *parts[16];
                  for (int64_t r = begin; r < end; ++r) {
                    const int64_t t = r / H % T,
                                  task = (r / (T * H) * KV + r % H / G) * chunks;
                    int64_t n = 0;
                    for (int64_t c = 0; c < chunks; ++c) {
                      const auto [from, to] = reach[size_t(task + c)];
                      if (t >= from && t < to)
                        parts[n++] = dqSum(c) + r * D;
                    }
                    E *__restrict out = dq + r * D;
                    for (int64_t d = 0; d < D; ++d) {
                      float sum = parts[0][d];
                      for (int64_t k = 1; k < n; ++k)
                        sum += parts[k][d];
                      store(out[d], sum);
                    }
                  }
                });

  if (dcoefficients)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / G, hg = h % G;
      double dAlpha = 0, dBeta = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < chunks; ++c) {
          const double *task = &sums[((b * KV + g) * chunks + c) * 2 * G];
          dAlpha += task[hg];
          dBeta += task[G + hg];
        }
      dcoefficients[h] = float(dAlpha);
      dcoefficients[H + h] = float(dBeta);
    }
}

} // namespace

void attentionForward(float *o, float *lse, const float *q, const float *k,
                      const float *v, const float *coefficients,
                      const int32_t *starts, const int32_t *lengths, int64_t B,
                      int64_t T, int64_t S, int64_t H, int64_t KV, int64_t D,
                      float scale, int32_t causal, int64_t window) {
  forward(o, lse, q, k, v, coefficients, starts, lengths, B, T, S, H, KV, D,
          scale, causal, window);
}

void attentionForwardBf16(lap_bf16 *o, float *lse, const lap_bf16 *q,
                          const lap_bf16 *k, const lap_bf16 *v,
                          const float *coefficients, const int32_t *starts,
                          const int32_t *lengths, int64_t B, int64_t T,
                          int64_t S, int64_t H, int64_t KV, int64_t D,
                          float scale, int32_t causal, int64_t window) {
  forward(o, lse, q, k, v, coefficients, starts, lengths, B, T, S, H, KV, D,
          scale, causal, window);
}

void attentionBackward(float *dq, float *dk, float *dv, float *dcoefficients,
                       const float *dout, const float *q, const float *k,
                       const float *v, const float *o, const float *lse,
                       const float *coefficients, const int32_t *starts,
                       const int32_t *lengths, int64_t B, int64_t T, int64_t S,
                       int64_t H, int64_t KV, int64_t D, float scale,
                       int32_t causal, int64_t window) {
  backward(dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients,
           starts, lengths, B, T, S, H, KV, D, scale, causal, window);
}

void attentionBackwardBf16(lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv,
                           float *dcoefficients, const lap_bf16 *dout,
                           const lap_bf16 *q, const lap_bf16 *k,
                           const lap_bf16 *v, const lap_bf16 *o,
                           const float *lse, const float *coefficients,
                           const int32_t *starts, const int32_t *lengths,
                           int64_t B, int64_t T, int64_t S, int64_t H,
                           int64_t KV, int64_t D, float scale, int32_t causal,
                           int64_t window) {
  backward(dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients,
           starts, lengths, B, T, S, H, KV, D, scale, causal, window);
}

} // namespace lap::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lap::cpu {

HWY_EXPORT(attentionForward);
HWY_EXPORT(attentionForwardBf16);
HWY_EXPORT(attentionBackward);
HWY_EXPORT(attentionBackwardBf16);

extern "C" void lap_cpu_attention_forward(
    float *o, float *lse, const float *q, const float *k, const float *v,
    const float *coefficients, const int32_t *starts, const int32_t *lengths,
    int64_t B, int64_t T, int64_t S, int64_t H, int64_t KV, int64_t D,
    float scale, int32_t causal, int64_t window) {
  useChosenIsa();
  HWY_DYNAMIC_DISPATCH(attentionForward)
  (o, lse, q, k, v, coefficients, starts, lengths, B, T, S, H, KV, D, scale,
   causal, window);
}

extern "C" void lap_cpu_attention_backward(
    float *dq, float *dk, float *dv, float *dcoefficients, const float *dout,
    const float *q, const float *k, const float *v, const float *o,
    const float *lse, const float *coefficients, const int32_t *starts,
    const int32_t *lengths, int64_t B, int64_t T, int64_t S, int64_t H,
    int64_t KV, int64_t D, float scale, int32_t causal, int64_t window) {
  useChosenIsa();
  HWY_DYNAMIC_DISPATCH(attentionBackward)
  (dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients, starts,
   lengths, B, T, S, H, KV, D, scale, causal, window);
}

extern "C" void lap_cpu_attention_forward_bf16(
    lap_bf16 *o, float *lse, const lap_bf16 *q, const lap_bf16 *k,
    const lap_bf16 *v, const float *coefficients, const int32_t *starts,
    const int32_t *lengths, int64_t B, int64_t T, int64_t S, int64_t H,
    int64_t KV, int64_t D, float scale, int32_t causal, int64_t window) {
  useChosenIsa();
  HWY_DYNAMIC_DISPATCH(attentionForwardBf16)
  (o, lse, q, k, v, coefficients, starts, lengths, B, T, S, H, KV, D, scale,
   causal, window);
}

extern "C" void lap_cpu_attention_backward_bf16(
    lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv, float *dcoefficients,
    const lap_bf16 *dout, const lap_bf16 *q, const lap_bf16 *k,
    const lap_bf16 *v, const lap_bf16 *o, const float *lse,
    const float *coefficients, const int32_t *starts, const int32_t *lengths,
    int64_t B, int64_t T, int64_t S, int64_t H, int64_t KV, int64_t D,
    float scale, int32_t causal, int64_t window) {
  useChosenIsa();
  HWY_DYNAMIC_DISPATCH(attentionBackwardBf16)
  (dq, dk, dv, dcoefficients, dout, q, k, v, o, lse, coefficients, starts,
   lengths, B, T, S, H, KV, D, scale, causal, window);
}

} // namespace lap::cpu
#endif // HWY_ONCE
