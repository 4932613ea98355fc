//===- Losses.cu - The losses' entry points ---------------------*- CUDA -*-===//
//
// lap_cuda_cross_entropy*, linear_cross_entropy* and row_loss*: Losses.h's
// plans on CUDA's device.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Kernels.h"
#include "runtime/kernels/cuda/Launcher.h"
#include "runtime/kernels/cuda/Losses.h"

using lap::cuda::Launcher;
namespace losses = lap::cuda::losses;

extern "C" void lap_cuda_cross_entropy_forward(float *loss, const float *logits,
                                               const int32_t *targets,
                                               int64_t n, int64_t V,
                                               float label_smoothing,
                                               float softcap) {
  losses::crossEntropyForward(Launcher(), loss, logits, targets, n, V,
                              label_smoothing, softcap);
}

extern "C" void
lap_cuda_cross_entropy_backward(float *dlogits, const float *dloss,
                                const float *logits, const int32_t *targets,
                                int64_t n, int64_t V, float label_smoothing,
                                float softcap) {
  losses::crossEntropyBackward(Launcher(), dlogits, dloss, logits, targets, n,
                               V, label_smoothing, softcap);
}

extern "C" void lap_cuda_cross_entropy_forward_bf16(
    float *loss, const lap_bf16 *logits, const int32_t *targets, int64_t n,
    int64_t V, float label_smoothing, float softcap) {
  losses::crossEntropyForward(Launcher(), loss, logits, targets, n, V,
                              label_smoothing, softcap);
}

extern "C" void lap_cuda_cross_entropy_backward_bf16(
    lap_bf16 *dlogits, const float *dloss, const lap_bf16 *logits,
    const int32_t *targets, int64_t n, int64_t V, float label_smoothing,
    float softcap) {
  losses::crossEntropyBackward(Launcher(), dlogits, dloss, logits, targets, n,
                               V, label_smoothing, softcap);
}

extern "C" void lap_cuda_linear_cross_entropy(
    float *loss, float *dx, float *dw, const float *dloss, const float *x,
    const float *w, const int32_t *targets, int64_t n, int64_t C, int64_t V,
    float label_smoothing, float softcap, lap_matmul precision) {
  losses::linearCrossEntropy(Launcher(), loss, dx, dw, dloss, x, w, targets, n,
                             C, V, label_smoothing, softcap, precision);
}

extern "C" void lap_cuda_linear_cross_entropy_bf16(
    float *loss, lap_bf16 *dx, lap_bf16 *dw, const float *dloss,
    const lap_bf16 *x, const lap_bf16 *w, const int32_t *targets, int64_t n,
    int64_t C, int64_t V, float label_smoothing, float softcap) {
  losses::linearCrossEntropy(Launcher(), loss, dx, dw, dloss, x, w, targets, n,
                             C, V, label_smoothing, softcap);
}

extern "C" void lap_cuda_row_loss_forward(float *loss, const float *logits,
                                          const float *targets, int64_t n,
                                          int64_t K, lap_row_loss kind,
                                          float temperature) {
  losses::rowLossForward(Launcher(), loss, logits, targets, n, K, kind,
                         temperature);
}

extern "C" void lap_cuda_row_loss_backward(float *dlogits, const float *dloss,
                                           const float *logits,
                                           const float *targets, int64_t n,
                                           int64_t K, lap_row_loss kind,
                                           float temperature) {
  losses::rowLossBackward(Launcher(), dlogits, dloss, logits, targets, n, K,
                          kind, temperature);
}
