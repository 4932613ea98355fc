//===- Gemm.cu - cuBLASLt GEMMs; the column sums on CUDA --------*- CUDA -*-===//
//
// cuBLASLt is column-major: a row-major [M, N] matrix with leading dimension
// ld is the column-major [N, M] one with the same ld, so row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T:
// operands swapped, each keeping its own transpose flag. The descriptors and
// the heuristic's algorithm are built once per shape (and per pointer
// alignment, which the algorithms depend on) and kept per thread, like the
// cuBLASLt handle. At bf16 precision cuBLASLt rounds the fp32 operands to
// bf16 itself and runs the tensor cores' bf16 products with fp32
// accumulation (CUBLAS_COMPUTE_32F_FAST_16BF). A bf16 model's bf16 operands
// go to the tensor cores as they are, their fp32 sums written as fp32
// (gemm) or rounded to bf16 as cuBLASLt stores them (gemmToBf16).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Gemm.h"

#include "runtime/kernels/cuda/ColumnSums.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/GeluEpilogues.h"
#include "runtime/kernels/cuda/Launcher.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

using lap::cuda::blocksFor;
using lap::cuda::check;
using lap::cuda::checkLaunch;
using lap::cuda::Epilogue;
using lap::cuda::kBf16Result;
using lap::cuda::kBlock;
using lap::cuda::kGemmWorkspace;
using lap::cuda::Launcher;
using lap::cuda::lt;
using lap::cuda::scratch;
using lap::cuda::stream;

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// The largest power of two dividing p's address, at most 256 (cuBLASLt's
/// default assumption, which a pointer into the middle of a tensor breaks).
uint32_t alignmentOf(const void *p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uintptr_t low = a & (~a + 1);
  return uint32_t(a == 0 || low > 256 ? 256 : low);
}

/// The column-major problem cuBLASLt solves, D [m, n] = opA(A) opB(B) +
/// beta D, for the row-major one: m = N, n = M, A = B, B = A.
struct Problem {
  cublasComputeType_t compute;
  cudaDataType_t input;  ///< A's and B's elements
  cudaDataType_t output; ///< C's elements
  cublasOperation_t opA, opB;
  uint64_t m, n, k;
  int64_t lda, ldb, ldc;
  const void *A, *B;
  void *C;
  const void *bias, *aux; ///< the epilogue's vectors (null: none)
};

/// The row-major C [M, N] = op(A) op(B) as cuBLASLt's column-major
/// problem C^T = op(B)^T op(A)^T: operands swapped, each keeping its own
/// transpose flag.
Problem problem(cublasComputeType_t compute, cudaDataType_t input,
                cudaDataType_t output, char transa, char transb, int64_t M,
                int64_t N, int64_t K, const void *A, int64_t lda, const void *B,
                int64_t ldb, void *C, int64_t ldc, const void *bias = nullptr,
                const void *aux = nullptr) {
  return {compute,
          input,
          output,
          transb == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N,
          transa == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N,
          uint64_t(N),
          uint64_t(M),
          uint64_t(K),
          ldb,
          lda,
          ldc,
          B,
          A,
          C,
          bias,
          aux};
}

/// One shape's descriptors and algorithm. fused is false where no
/// algorithm has the epilogue: the GEMM runs without, a kernel adds it.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool fused = false;
};

void destroy(Plan &p) {
  if (p.desc)
    cublasLtMatmulDescDestroy(p.desc);
  for (cublasLtMatrixLayout_t l : {p.a, p.b, p.c})
    if (l)
      cublasLtMatrixLayoutDestroy(l);
  p = {};
}

/// The compute type, the input and output types, transa, transb, M, N, K,
/// lda, ldb, ldc, the cuBLASLt epilogue, and the alignments of A, B, C, the
/// bias and the epilogue's auxiliary matrix.
using PlanKey = std::tuple<int, int, int, char, char, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int, uint32_t, uint32_t,
                           uint32_t, uint32_t, uint32_t>;

struct Plans {
  std::map<PlanKey, Plan> byKey;
  ~Plans() {
    for (auto &entry : byKey)
      destroy(entry.second);
  }
};

/// Points `desc`'s epilogue at this call's bias vector and auxiliary
/// matrix (each null when the epilogue has none); false, recorded, on a
/// failure.
bool setVectors(cublasLtMatmulDesc_t desc, const void *bias, const void *aux) {
  return (!bias || check(cublasLtMatmulDescSetAttribute(
                             desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                             sizeof bias),
                         "cublasLtMatmulDescSetAttribute")) &&
         (!aux || check(cublasLtMatmulDescSetAttribute(
                            desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                            &aux, sizeof aux),
                        "cublasLtMatmulDescSetAttribute"));
}

/// The heuristic's best algorithm for p as it stands; false if none.
bool bestAlgorithm(cublasLtHandle_t lt, Plan &p,
                   cublasLtMatmulPreference_t pref) {
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0 ||
      result.state != CUBLAS_STATUS_SUCCESS)
    return false;
  p.algo = result.algo;
  return true;
}

/// Builds the plan for q with `epilogue` (CUBLASLT_EPILOGUE_DEFAULT for
/// none), falling back to none where no algorithm fuses it. False, with the
/// failure recorded, when not even the plain GEMM has an algorithm.
bool build(cublasLtHandle_t lt, Plan &p, const Problem &q,
           cublasLtEpilogue_t epilogue) {
  const int32_t opA = q.opA, opB = q.opB;
  const bool nA = q.opA == CUBLAS_OP_N, nB = q.opB == CUBLAS_OP_N;
  bool ok = check(cublasLtMatmulDescCreate(&p.desc, q.compute, CUDA_R_32F),
                  "cublasLtMatmulDescCreate") &&
            check(cublasLtMatmulDescSetAttribute(
                      p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA),
                  "cublasLtMatmulDescSetAttribute") &&
            check(cublasLtMatmulDescSetAttribute(
                      p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB),
                  "cublasLtMatmulDescSetAttribute") &&
            check(cublasLtMatrixLayoutCreate(&p.a, q.input, nA ? q.m : q.k,
                                             nA ? q.k : q.m, q.lda),
                  "cublasLtMatrixLayoutCreate") &&
            check(cublasLtMatrixLayoutCreate(&p.b, q.input, nB ? q.k : q.n,
                                             nB ? q.n : q.k, q.ldb),
                  "cublasLtMatrixLayoutCreate") &&
            check(cublasLtMatrixLayoutCreate(&p.c, q.output, q.m, q.n, q.ldc),
                  "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  const uint64_t workspace = kWorkspaceBytes;
  const uint32_t alignA = alignmentOf(q.A), alignB = alignmentOf(q.B),
                 alignC = alignmentOf(q.C);
  ok = ok &&
       check(cublasLtMatmulPreferenceCreate(&pref),
             "cublasLtMatmulPreferenceCreate") &&
       check(cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                 sizeof workspace),
             "cublasLtMatmulPreferenceSetAttribute") &&
       check(cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
                 sizeof alignA),
             "cublasLtMatmulPreferenceSetAttribute") &&
       check(cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
                 sizeof alignB),
             "cublasLtMatmulPreferenceSetAttribute") &&
       check(cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
                 sizeof alignC),
             "cublasLtMatmulPreferenceSetAttribute") &&
       check(cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
                 sizeof alignC),
             "cublasLtMatmulPreferenceSetAttribute");
  if (ok && epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // The heuristic reads the vectors' alignments from the descriptor. The
    // auxiliary matrix has C's layout.
    const uint32_t e = epilogue;
    const int64_t auxLd = q.ldc;
    ok = check(cublasLtMatmulDescSetAttribute(
                   p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e),
               "cublasLtMatmulDescSetAttribute") &&
         setVectors(p.desc, q.bias, q.aux) &&
         (!q.aux || check(cublasLtMatmulDescSetAttribute(
                              p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                              &auxLd, sizeof auxLd),
                          "cublasLtMatmulDescSetAttribute"));
    p.fused = ok && bestAlgorithm(lt, p, pref);
    if (ok && !p.fused) {
      const uint32_t none = CUBLASLT_EPILOGUE_DEFAULT;
      ok = check(cublasLtMatmulDescSetAttribute(
                     p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &none, sizeof none),
                 "cublasLtMatmulDescSetAttribute");
    }
  }
  if (ok && !p.fused && !bestAlgorithm(lt, p, pref)) {
    lap::cuda::fail("cublasLt: no GEMM algorithm for m " + std::to_string(q.m) +
                    ", n " + std::to_string(q.n) + ", k " +
                    std::to_string(q.k));
    ok = false;
  }
  if (pref)
    cublasLtMatmulPreferenceDestroy(pref);
  return ok;
}

/// C [M, N] (leading dimension ldc) = beta C + bias (bias [N] nullable;
/// beta 0 does not read C, which may hold NaN).
__global__ void scaleAddBias(float *C, int64_t ldc, int64_t M, int64_t N,
                             float beta, const float *bias) {
  int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= M * N)
    return;
  int64_t i = e / N, j = e % N;
  float *c = C + i * ldc + j;
  float v = beta == 0.0f ? 0.0f : beta * *c;
  *c = bias ? v + bias[j] : v;
}

/// C = beta C, the GEMM of K = 0 (beta 1 leaves C alone).
void scaleWithoutProducts(float *C, int64_t ldc, int64_t M, int64_t N,
                          float beta) {
  if (beta == 1.0f)
    return;
  scaleAddBias<<<blocksFor(M * N), kBlock, 0, stream()>>>(C, ldc, M, N, beta,
                                                          nullptr);
  checkLaunch("gemm (K = 0)");
}

} // namespace

int64_t lap::cuda::columnSumsScratch(int64_t n, int64_t c) {
  return columns::columnSumsScratch(n, c);
}

void lap::cuda::columnSums(float *out, const ColumnTerms<float> &terms,
                           int64_t n, int64_t c, float *partials) {
  columns::columnSums(Launcher(), out, terms, n, c, partials);
}

void lap::cuda::columnSums(float *out, const ColumnTerms<lap_bf16> &terms,
                           int64_t n, int64_t c, float *partials) {
  columns::columnSums(Launcher(), out, terms, n, c, partials);
}

void lap::cuda::roundToBf16(lap_bf16 *to, const float *from, int64_t n,
                            int64_t c, const lap_bf16 *bias) {
  columns::roundToBf16(Launcher(), to, from, n, c, bias);
}

namespace {

/// cuBLASLt's form of `epilogue`, by which of the vectors it is given.
cublasLtEpilogue_t cublasEpilogue(Epilogue epilogue, bool bias, bool aux) {
  switch (epilogue) {
  case Epilogue::kNone:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::kBias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::kBiasGradA:
    return CUBLASLT_EPILOGUE_BGRADB;
  case Epilogue::kGelu:
    return bias ? (aux ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                       : CUBLASLT_EPILOGUE_GELU_BIAS)
                : (aux ? CUBLASLT_EPILOGUE_GELU_AUX : CUBLASLT_EPILOGUE_GELU);
  case Epilogue::kGeluGrad:
    return bias ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// The epilogue of C = beta C + op(A) op(B) [M, N] as kernels, where
/// cuBLASLt did not fuse it (or there was no GEMM: K = 0).
void epilogueAfter(Epilogue epilogue, int64_t M, int64_t N, int64_t K,
                   const float *A, float *C, int64_t ldc, float *bias,
                   float *aux) {
  switch (epilogue) {
  case Epilogue::kNone:
    return;
  case Epilogue::kBias:
    scaleAddBias<<<blocksFor(M * N), kBlock, 0, stream()>>>(C, ldc, M, N, 1.0f,
                                                            bias);
    checkLaunch("gemm (bias)");
    return;
  case Epilogue::kBiasGradA:
    return lap::cuda::columnSums(bias, {A}, K, M);
  case Epilogue::kGelu:
    return lap::cuda::epilogues::gelu(Launcher(), C, aux, C, bias, M, N, ldc);
  case Epilogue::kGeluGrad:
    lap::cuda::epilogues::geluSlope(Launcher(), C, C, aux, M, N, ldc);
    if (bias)
      lap::cuda::columnSums(bias, {C}, M, N);
    return;
  }
}

/// The plan of q with `epilogue` where cuBLASLt fuses it (made at the
/// shape's first call), or null where there is none (recorded). transa and
/// transb are the row-major call's.
Plan *planOf(const Problem &q, char transa, char transb,
             cublasLtEpilogue_t epilogue) {
  cublasLtHandle_t handle = lt();
  if (!handle)
    return nullptr;
  // q is column-major: its (m, n) are the row-major (N, M).
  const PlanKey key(int(q.compute), int(q.input), int(q.output), transa, transb,
                    int64_t(q.n), int64_t(q.m), int64_t(q.k), q.ldb, q.lda,
                    q.ldc, int(epilogue), alignmentOf(q.B), alignmentOf(q.A),
                    alignmentOf(q.C), alignmentOf(q.bias), alignmentOf(q.aux));
  thread_local Plans plans;
  auto found = plans.byKey.find(key);
  if (found == plans.byKey.end()) {
    Plan p;
    if (!build(handle, p, q, epilogue)) {
      destroy(p);
      return nullptr;
    }
    found = plans.byKey.emplace(key, p).first;
  }
  return &found->second;
}

/// Runs q on its plan p: C = op(A) op(B) + beta C, with p's epilogue where
/// fused; false where it did not run (recorded).
bool run(Plan &p, const Problem &q, float beta) {
  void *workspace = scratch(kGemmWorkspace, kWorkspaceBytes);
  // The plan is per shape: this call's vectors go into its descriptor.
  if (!workspace || (p.fused && !setVectors(p.desc, q.bias, q.aux)))
    return false;
  const float alpha = 1.0f;
  return check(cublasLtMatmul(lt(), p.desc, &alpha, q.A, p.a, q.B, p.b, &beta,
                              q.C, p.c, q.C, p.c, &p.algo, workspace,
                              kWorkspaceBytes, stream()),
               "cublasLtMatmul");
}

/// Runs q, C = op(A) op(B) + beta C with `epilogue` where cuBLASLt fuses
/// it; false where it did not run (recorded). wasFused: whether the
/// epilogue ran with it.
bool matmul(const Problem &q, char transa, char transb,
            cublasLtEpilogue_t epilogue, float beta, bool &wasFused) {
  Plan *p = planOf(q, transa, transb, epilogue);
  wasFused = p && p->fused;
  return p && run(*p, q, beta);
}

} // namespace

void lap::cuda::gemm(lap_matmul precision, char transa, char transb, int64_t M,
                     int64_t N, int64_t K, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C,
                     int64_t ldc, Epilogue epilogue, float *bias, float *aux) {
  const bool gelu =
      epilogue == Epilogue::kGelu || epilogue == Epilogue::kGeluGrad;
  if (epilogue == Epilogue::kBiasGradA && (transa != 'T' || lda != M))
    return fail("gemm: a bias gradient of A needs transa 'T' and lda == M");
  if (gelu && beta != 0.0f)
    return fail("gemm: a GELU epilogue needs beta 0");
  if (epilogue == Epilogue::kGeluGrad && (!aux || (bias && ldc != N)))
    return fail("gemm: a GELU gradient needs aux, and ldc == N for its bias "
                "gradient");
  // An empty C still has a bias gradient: A's [M], or C's [N] (zero).
  if (M <= 0 || N <= 0) {
    if (epilogue == Epilogue::kBiasGradA && M > 0)
      columnSums(bias, {A}, K, M);
    else if (epilogue == Epilogue::kGeluGrad && bias && N > 0)
      check(cudaMemsetAsync(bias, 0, size_t(N) * sizeof(float), stream()),
            "cudaMemsetAsync");
    return;
  }
  // No products: C = beta C, then the epilogue (a bias gradient of A sums
  // no rows: 0).
  if (K <= 0) {
    scaleWithoutProducts(C, ldc, M, N, beta);
    return epilogueAfter(epilogue, M, N, K, A, C, ldc, bias, aux);
  }
  const cublasComputeType_t compute = precision == LAP_MATMUL_BF16
                                          ? CUBLAS_COMPUTE_32F_FAST_16BF
                                          : CUBLAS_COMPUTE_32F;
  const Problem q = problem(compute, CUDA_R_32F, CUDA_R_32F, transa, transb, M,
                            N, K, A, lda, B, ldb, C, ldc, bias, aux);
  // cuBLASLt takes an auxiliary matrix only with a leading dimension that is
  // a multiple of 8; other shapes get the epilogue from a kernel.
  const cublasLtEpilogue_t fused = aux && ldc % 8 != 0
                                       ? CUBLASLT_EPILOGUE_DEFAULT
                                       : cublasEpilogue(epilogue, bias, aux);
  bool wasFused = false;
  if (matmul(q, transa, transb, fused, beta, wasFused) && !wasFused)
    epilogueAfter(epilogue, M, N, K, A, C, ldc, bias, aux);
}

void lap::cuda::gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                     const lap_bf16 *A, int64_t lda, const lap_bf16 *B,
                     int64_t ldb, float beta, float *C, int64_t ldc) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    scaleWithoutProducts(C, ldc, M, N, beta);
    return;
  }
  const Problem q = problem(CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_32F, transa,
                            transb, M, N, K, A, lda, B, ldb, C, ldc);
  bool wasFused = false;
  matmul(q, transa, transb, CUBLASLT_EPILOGUE_DEFAULT, beta, wasFused);
}

bool lap::cuda::fusedGemmToBf16(char transa, char transb, int64_t M, int64_t N,
                                int64_t K, const lap_bf16 *A, int64_t lda,
                                const lap_bf16 *B, int64_t ldb, lap_bf16 *C,
                                Epilogue epilogue, lap_bf16 *bias,
                                lap_bf16 *aux) {
  if (!bias &&
      (epilogue == Epilogue::kBias || epilogue == Epilogue::kBiasGradA))
    epilogue = Epilogue::kNone;
  // cuBLASLt's bias gradient of A needs A as [K, M]; its auxiliary matrix
  // a leading dimension that is a multiple of 8.
  if (M <= 0 || N <= 0 || K <= 0 ||
      (epilogue == Epilogue::kBiasGradA && (transa != 'T' || lda != M)) ||
      (epilogue == Epilogue::kGeluGrad && !aux) || (aux && N % 8 != 0))
    return false;
  const Problem q =
      problem(CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_16BF, transa, transb, M,
              N, K, A, lda, B, ldb, C, N, bias, aux);
  const cublasLtEpilogue_t fused = cublasEpilogue(epilogue, bias, aux);
  Plan *p = planOf(q, transa, transb, fused);
  // No plan at all: the failure is recorded.
  if (!p)
    return true;
  if (fused != CUBLASLT_EPILOGUE_DEFAULT && !p->fused)
    return false;
  run(*p, q, 0.0f);
  return true;
}

void lap::cuda::gemmToBf16(char transa, char transb, int64_t M, int64_t N,
                           int64_t K, const lap_bf16 *A, int64_t lda,
                           const lap_bf16 *B, int64_t ldb, lap_bf16 *C,
                           const lap_bf16 *bias) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0 && !bias) {
    check(cudaMemsetAsync(C, 0, size_t(M * N) * sizeof(lap_bf16), stream()),
          "cudaMemsetAsync");
    return;
  }
  if (fusedGemmToBf16(transa, transb, M, N, K, A, lda, B, ldb, C,
                      bias ? Epilogue::kBias : Epilogue::kNone,
                      const_cast<lap_bf16 *>(bias)))
    return;
  // A bias but no algorithm that adds it as it rounds (or no products):
  // the fp32 GEMM, then the bias and one rounding.
  auto *acc =
      static_cast<float *>(scratch(kBf16Result, size_t(M * N) * sizeof(float)));
  if (!acc)
    return;
  gemm(transa, transb, M, N, K, A, lda, B, ldb, 0.0f, acc, N);
  roundToBf16(C, acc, M, N, bias);
}
