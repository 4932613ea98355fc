//===- Norms.cu - The norms' entry points ------------------------*- CUDA -*-===//
//
// lap_cuda_*_norm*, l2_normalize, weight_norm and layer_scale: Norms.h's
// plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"
#include "runtime/kernels/cuda/Norms.h"

using lap::cuda::Launcher;
namespace norms = lap::cuda::norms;

extern "C" void lap_cuda_layer_norm_backward(float *dx, float *dw, float *db,
                                             const float *dy, const float *x,
                                             const float *w, int64_t n,
                                             int64_t c, float eps) {
  norms::layerNormBackward(Launcher(), dx, dw, db, dy, x, w, n, c, eps);
}

extern "C" void lap_cuda_layer_norm_backward_bf16(
    lap_bf16 *dx, lap_bf16 *dw, lap_bf16 *db, const lap_bf16 *dy,
    const lap_bf16 *x, const lap_bf16 *w, int64_t n, int64_t c, float eps) {
  norms::layerNormBackward(Launcher(), dx, dw, db, dy, x, w, n, c, eps);
}

extern "C" void lap_cuda_rms_norm_backward(float *dx, float *dw,
                                           const float *dy, const float *x,
                                           const float *w, int64_t n, int64_t c,
                                           float eps) {
  norms::rmsNormBackward(Launcher(), dx, dw, dy, x, w, n, c, eps);
}

extern "C" void lap_cuda_rms_norm_backward_bf16(lap_bf16 *dx, lap_bf16 *dw,
                                                const lap_bf16 *dy,
                                                const lap_bf16 *x,
                                                const lap_bf16 *w, int64_t n,
                                                int64_t c, float eps) {
  norms::rmsNormBackward(Launcher(), dx, dw, dy, x, w, n, c, eps);
}

extern "C" void lap_cuda_l2_normalize_forward(float *y, const float *x,
                                              int64_t n, int64_t c, float eps) {
  norms::l2NormalizeForward(Launcher(), y, x, n, c, eps);
}

extern "C" void lap_cuda_l2_normalize_backward(float *dx, const float *dy,
                                               const float *x, int64_t n,
                                               int64_t c, float eps) {
  norms::l2NormalizeBackward(Launcher(), dx, dy, x, n, c, eps);
}

extern "C" void lap_cuda_weight_norm_forward(float *w, const float *v,
                                             const float *g, int64_t k,
                                             int64_t d) {
  norms::weightNormForward(Launcher(), w, v, g, k, d);
}

extern "C" void lap_cuda_weight_norm_backward(float *dv, float *dg,
                                              const float *dw, const float *v,
                                              const float *g, int64_t k,
                                              int64_t d) {
  norms::weightNormBackward(Launcher(), dv, dg, dw, v, g, k, d);
}

extern "C" void lap_cuda_layer_scale_backward(float *dx, float *dgamma,
                                              const float *dy, const float *x,
                                              const float *gamma, int64_t n,
                                              int64_t c) {
  norms::layerScaleBackward(Launcher(), dx, dgamma, dy, x, gamma, n, c);
}

extern "C" void lap_cuda_layer_scale_backward_bf16(
    lap_bf16 *dx, lap_bf16 *dgamma, const lap_bf16 *dy, const lap_bf16 *x,
    const lap_bf16 *gamma, int64_t n, int64_t c) {
  norms::layerScaleBackward(Launcher(), dx, dgamma, dy, x, gamma, n, c);
}
