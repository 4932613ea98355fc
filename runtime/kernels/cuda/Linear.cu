//===- Linear.cu - y = x W^T + b and its gradients --------------*- CUDA -*-===//
//
// Every product is one cuBLASLt GEMM (Gemm.h); the bias rides on the
// forward GEMM's epilogue and its gradient on dW's (cuBLASLt's BIAS and
// BGRADB epilogues), so neither costs a pass of its own; so do a tanh GELU
// after a linear layer (GELU_AUX_BIAS) and its gradient with the layer's
// bias gradient (DGELU_BGRAD). A bf16 model's kernels (`_bf16`) take the
// same epilogues on bf16 vectors as cuBLASLt rounds its fp32 sums to bf16;
// where no algorithm fuses one, the fp32 GEMM goes to scratch and kernels
// (GeluEpilogues.h, ColumnSums.h) apply it and round.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Kernels.h"

#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/GeluEpilogues.h"
#include "runtime/kernels/cuda/Gemm.h"
#include "runtime/kernels/cuda/Launcher.h"

#include <algorithm>

using lap::cuda::columnSums;
using lap::cuda::Epilogue;
using lap::cuda::fusedGemmToBf16;
using lap::cuda::gemm;
using lap::cuda::gemmToBf16;
using lap::cuda::Launcher;
using lap::cuda::roundToBf16;

namespace {

/// fp32 scratch of `floats` for a bf16 kernel's results before rounding.
float *fp32Results(int64_t floats) {
  return static_cast<float *>(lap::cuda::scratch(
      lap::cuda::kBf16Result, size_t(floats) * sizeof(float)));
}

/// dw [out, in] = dy^T x and db [out] = column sums of dy [n, out] (each
/// nullable): db comes with dw's GEMM where there is one.
void weightGrads(float *dw, float *db, const float *dy, const float *x,
                 int64_t n, int64_t in, int64_t out, lap_matmul precision) {
  if (dw)
    gemm(precision, 'T', 'N', out, in, n, dy, out, x, in, 0.0f, dw, in,
         db ? Epilogue::kBiasGradA : Epilogue::kNone, db);
  else if (db)
    columnSums(db, {dy}, n, out);
}

} // namespace

extern "C" void lap_cuda_linear_forward(float *y, const float *x,
                                        const float *w, const float *b,
                                        int64_t n, int64_t in, int64_t out,
                                        lap_matmul precision) {
  // y [n, out] = x [n, in] w^T (w [out, in]) + b; kBias only reads b.
  gemm(precision, 'N', 'T', n, out, in, x, in, w, in, 0.0f, y, out,
       b ? Epilogue::kBias : Epilogue::kNone, const_cast<float *>(b));
}

extern "C" void lap_cuda_linear_backward(float *dx, float *dw, float *db,
                                         const float *dy, const float *x,
                                         const float *w, int64_t n, int64_t in,
                                         int64_t out, lap_matmul precision) {
  // dx [n, in] = dy [n, out] w [out, in].
  if (dx)
    gemm(precision, 'N', 'N', n, in, out, dy, out, w, in, 0.0f, dx, in);
  weightGrads(dw, db, dy, x, n, in, out, precision);
}

extern "C" void lap_cuda_linear_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                             const lap_bf16 *w,
                                             const lap_bf16 *b, int64_t n,
                                             int64_t in, int64_t out) {
  // y [n, out] = x [n, in] w^T + b, summed in fp32 and rounded once.
  gemmToBf16('N', 'T', n, out, in, x, in, w, in, y, b);
}

extern "C" void lap_cuda_linear_backward_bf16(lap_bf16 *dx, lap_bf16 *dw,
                                              lap_bf16 *db, const lap_bf16 *dy,
                                              const lap_bf16 *x,
                                              const lap_bf16 *w, int64_t n,
                                              int64_t in, int64_t out) {
  // dx [n, in] = dy [n, out] w [out, in]; dw [out, in] = dy^T x, with db
  // [out] (dy's column sums) where an algorithm fuses it (BGRADB).
  if (dx)
    gemmToBf16('N', 'N', n, in, out, dy, out, w, in, dx);
  if (dw && fusedGemmToBf16('T', 'N', out, in, n, dy, out, x, in, dw,
                            db ? Epilogue::kBiasGradA : Epilogue::kNone, db))
    return;
  if (dw)
    gemmToBf16('T', 'N', out, in, n, dy, out, x, in, dw);
  // db [out]: dy's column sums in fp32 scratch, rounded.
  if (db) {
    float *acc = fp32Results(out);
    if (!acc)
      return;
    columnSums(acc, {dy}, n, out);
    roundToBf16(db, acc, 1, out);
  }
}

extern "C" void lap_cuda_linear_gelu_forward(float *y, float *pre,
                                             const float *x, const float *w,
                                             const float *b, int64_t n,
                                             int64_t in, int64_t out,
                                             lap_matmul precision) {
  // y [n, out] = gelu_tanh(x [n, in] w^T + b); pre [n, out] gets x w^T + b.
  gemm(precision, 'N', 'T', n, out, in, x, in, w, in, 0.0f, y, out,
       Epilogue::kGelu, const_cast<float *>(b), pre);
}

extern "C" void lap_cuda_gelu_linear_backward(float *dpre, float *dbias,
                                              const float *dy, const float *w,
                                              const float *pre, int64_t n,
                                              int64_t in, int64_t out,
                                              lap_matmul precision) {
  // dpre [n, in] = dy [n, out] w [out, in] * gelu_tanh'(pre); dbias [in]
  // its column sums. kGeluGrad only reads pre.
  gemm(precision, 'N', 'N', n, in, out, dy, out, w, in, 0.0f, dpre, in,
       Epilogue::kGeluGrad, dbias, const_cast<float *>(pre));
}

extern "C" void lap_cuda_linear_gelu_forward_bf16(lap_bf16 *y, lap_bf16 *pre,
                                                  const lap_bf16 *x,
                                                  const lap_bf16 *w,
                                                  const lap_bf16 *b, int64_t n,
                                                  int64_t in, int64_t out) {
  // y [n, out] = gelu_tanh(x w^T + b) and pre = x w^T + b (nullable), each
  // rounded from fp32 (GELU_AUX_BIAS and its variants).
  if (!fusedGemmToBf16('N', 'T', n, out, in, x, in, w, in, y, Epilogue::kGelu,
                       const_cast<lap_bf16 *>(b), pre))
    lap::cuda::epilogues::linearGeluBf16(Launcher(), y, pre, x, w, b, n, in,
                                         out);
}

extern "C" void lap_cuda_gelu_linear_backward_bf16(
    lap_bf16 *dpre, lap_bf16 *dbias, const lap_bf16 *dy, const lap_bf16 *w,
    const lap_bf16 *pre, int64_t n, int64_t in, int64_t out) {
  // dpre [n, in] = (dy w) * gelu_tanh'(pre) and dbias [in] (nullable) its
  // column sums, each rounded from fp32 (DGELU_BGRAD, DGELU).
  if (!fusedGemmToBf16('N', 'N', n, in, out, dy, out, w, in, dpre,
                       Epilogue::kGeluGrad, dbias, const_cast<lap_bf16 *>(pre)))
    lap::cuda::epilogues::geluLinearGradBf16(Launcher(), dpre, dbias, dy, w,
                                             pre, n, in, out);
}

extern "C" void lap_cuda_linear_heads_forward(float *q, float *k, float *v,
                                              const float *x, const float *w,
                                              const float *b, int64_t n,
                                              int64_t in, int64_t hq,
                                              int64_t hkv,
                                              lap_matmul precision) {
  lap_cuda_linear_forward(q, x, w, b, n, in, hq, precision);
  lap_cuda_linear_forward(k, x, w + hq * in, b ? b + hq : nullptr, n, in, hkv,
                          precision);
  lap_cuda_linear_forward(v, x, w + (hq + hkv) * in, b ? b + hq + hkv : nullptr,
                          n, in, hkv, precision);
}

extern "C" void
lap_cuda_linear_heads_backward(float *dx, float *dw, float *db, const float *dq,
                               const float *dk, const float *dv, const float *x,
                               const float *w, int64_t n, int64_t in,
                               int64_t hq, int64_t hkv, lap_matmul precision) {
  const float *blocks[3] = {dq, dk, dv};
  const int64_t widths[3] = {hq, hkv, hkv}, starts[3] = {0, hq, hq + hkv};
  for (int i = 0; i < 3; ++i) {
    // dx [n, in] sums the blocks' contributions in block order (beta 1
    // after the first).
    if (dx)
      gemm(precision, 'N', 'N', n, in, widths[i], blocks[i], widths[i],
           w + starts[i] * in, in, i == 0 ? 0.0f : 1.0f, dx, in);
    weightGrads(dw ? dw + starts[i] * in : nullptr,
                db ? db + starts[i] : nullptr, blocks[i], x, n, in, widths[i],
                precision);
  }
}

extern "C" void lap_cuda_linear_heads_forward_bf16(
    lap_bf16 *q, lap_bf16 *k, lap_bf16 *v, const lap_bf16 *x, const lap_bf16 *w,
    const lap_bf16 *b, int64_t n, int64_t in, int64_t hq, int64_t hkv) {
  lap_cuda_linear_forward_bf16(q, x, w, b, n, in, hq);
  lap_cuda_linear_forward_bf16(k, x, w + hq * in, b ? b + hq : nullptr, n, in,
                               hkv);
  lap_cuda_linear_forward_bf16(v, x, w + (hq + hkv) * in,
                               b ? b + hq + hkv : nullptr, n, in, hkv);
}

extern "C" void lap_cuda_linear_heads_backward_bf16(
    lap_bf16 *dx, lap_bf16 *dw, lap_bf16 *db, const lap_bf16 *dq,
    const lap_bf16 *dk, const lap_bf16 *dv, const lap_bf16 *x,
    const lap_bf16 *w, int64_t n, int64_t in, int64_t hq, int64_t hkv) {
  const lap_bf16 *blocks[3] = {dq, dk, dv};
  const int64_t widths[3] = {hq, hkv, hkv}, starts[3] = {0, hq, hq + hkv};
  // dx [n, in] sums the blocks' contributions in fp32 scratch, in block
  // order, and is rounded once; the weight gradients then reuse the
  // scratch (the stream orders them).
  if (dx) {
    float *acc = fp32Results(n * in);
    if (!acc)
      return;
    for (int i = 0; i < 3; ++i)
      gemm('N', 'N', n, in, widths[i], blocks[i], widths[i], w + starts[i] * in,
           in, i == 0 ? 0.0f : 1.0f, acc, in);
    roundToBf16(dx, acc, n, in);
  }
  for (int i = 0; i < 3; ++i)
    if (dw || db)
      lap_cuda_linear_backward_bf16(nullptr, dw ? dw + starts[i] * in : nullptr,
                                    db ? db + starts[i] : nullptr, blocks[i], x,
                                    w, n, in, widths[i]);
}
