//===- Attention.h - What an attention call launches ------------*- CUDA -*-===//
//
// The plan of lap_cuda_attention_forward/backward (and _bf16): the sizes it
// refuses, which kernels take the call (AttentionTensorCores.h for a bf16
// model's heads up to 128 wide, AttentionHopper.h's in their place on
// compute capability 9.0; AttentionCudaCores.h otherwise; the row
// terms and the coefficients' sums from the latter for both), the scratch
// and the launches, written against a Launcher (Launcher.h): CUDA's, or
// the emulator's, which so runs the whole of it on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ATTENTION_H
#define LAP_RUNTIME_KERNELS_CUDA_ATTENTION_H

#include "runtime/kernels/cuda/AttentionCudaCores.h"
#include "runtime/kernels/cuda/AttentionHopper.h"
#include "runtime/kernels/cuda/AttentionShape.h"
#include "runtime/kernels/cuda/AttentionTensorCores.h"
#include "runtime/kernels/cuda/ScratchSlots.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

namespace lap::cuda::attention {

// Each .cu file that includes this header has its own copy of its kernels
// and plans (and the emulator's program, of all of them).
namespace {

/// Records why the kernels cannot take this shape and returns false.
template <typename Launcher>
bool supported(const Launcher &device, const char *what, int64_t B, int64_t T,
               int64_t S, int64_t H, int64_t KV, int64_t D, int32_t causal,
               int64_t window, const int32_t *starts) {
  auto no = [&](const std::string &why) {
    device.fail(std::string(what) + ": " + why);
    return false;
  };
  if (B < 0 || T < 0 || S < 0 || H < 0 || KV < 0 || D < 0)
    return no("negative size");
  if (H > 0 && (KV == 0 || H % KV != 0))
    return no("H = " + std::to_string(H) +
              " is not a multiple of KV = " + std::to_string(KV));
  if (D > cudacores::kMaxD)
    return no("head dim D = " + std::to_string(D) + " is above " +
              std::to_string(cudacores::kMaxD) +
              ", the widest these kernels support");
  if (std::max({B, T, S, H, KV, window}) > INT_MAX)
    return no("a size is beyond 2^31 - 1");
  if (window < 0 || (window > 0 && !causal))
    return no("window = " + std::to_string(window) +
              ": 0 (none), or positive under a causal mask");
  if (starts && !causal)
    return no("documents (starts) need a causal mask");
  return true;
}

/// Calls fn(integral_constant<int, DP>) with DP the compiled width that
/// holds D: 32, 64, 96, 128, 192 or 256 (D <= cudacores::kMaxD).
template <typename F> void withWidth(int64_t D, F &&fn) {
  if (D <= 32)
    fn(std::integral_constant<int, 32>());
  else if (D <= 64)
    fn(std::integral_constant<int, 64>());
  else if (D <= 96)
    fn(std::integral_constant<int, 96>());
  else if (D <= 128)
    fn(std::integral_constant<int, 128>());
  else if (D <= 192)
    fn(std::integral_constant<int, 192>());
  else
    fn(std::integral_constant<int, 256>());
}

/// Whether a call runs on the tensor cores (AttentionTensorCores.h): a
/// bf16 model's heads up to 128 wide.
template <typename E> constexpr bool onTensorCores(int64_t D) {
  return std::is_same_v<E, lap_bf16> && D <= tensorcore::kMaxD;
}

/// lap_cuda_attention_forward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void forward(const Launcher &device, E *o, float *lse, const E *q, const E *k,
             const E *v, const float *coefficients, const int32_t *starts,
             const int32_t *lengths, int64_t B, int64_t T, int64_t S, int64_t H,
             int64_t KV, int64_t D, float scale, int32_t causal,
             int64_t window) {
  if (!supported(device, "attention_forward", B, T, S, H, KV, D, causal, window,
                 starts))
    return;
  const Shape s =
      makeShape(B, T, S, H, KV, D, scale, causal, window, starts, lengths);
  withWidth(D, [&](auto width) {
    constexpr int DP = decltype(width)::value;
    // DP <= 128 exactly when D <= 128; no kernel is built that no call takes.
    if constexpr (onTensorCores<E>(DP)) {
      if constexpr (std::is_same_v<E, lap_bf16>) { // for nvcc's front end
        if (device.hopper())
          hopper::launchForward(device, o, lse, q, k, v, coefficients, s);
        else
          tensorcore::launchForward(device, o, lse, q, k, v, coefficients, s);
      }
    } else {
      using F = cudacores::ForwardTiles<DP>;
      const int64_t tiles = (T + F::BQ - 1) / F::BQ;
      device.launch(cudacores::forwardKernel<DP, E>, B * H * tiles,
                    cudacores::kThreads, F::bytes, "attention_forward", o, lse,
                    q, k, v, coefficients, s, int(tiles));
    }
  });
}

/// lap_cuda_attention_backward (E = float) or its _bf16 variant.
template <typename Launcher, typename E>
void backward(const Launcher &device, E *dq, E *dk, E *dv, float *dcoefficients,
              const E *dout, const E *q, const E *k, const E *v, const E *o,
              const float *lse, const float *coefficients,
              const int32_t *starts, const int32_t *lengths, int64_t B,
              int64_t T, int64_t S, int64_t H, int64_t KV, int64_t D,
              float scale, int32_t causal, int64_t window) {
  if (!supported(device, "attention_backward", B, T, S, H, KV, D, causal,
                 window, starts))
    return;
  const Shape s =
      makeShape(B, T, S, H, KV, D, scale, causal, window, starts, lengths);
  const int64_t rows = B * T * H;
  withWidth(D, [&](auto width) {
    constexpr int DP = decltype(width)::value;
    // As in forward: no kernel is built that no call takes.
    constexpr bool tensorCores = onTensorCores<E>(DP);
    using K = cudacores::KeyTiles<DP>;
    using Q = cudacores::QueryTiles<DP>;
    const bool onHopper = tensorCores && device.hopper();
    const int64_t keyBlock = onHopper      ? hopper::kRows
                             : tensorCores ? tensorcore::kRows
                                           : K::BK;
    const int64_t keyTiles = (S + keyBlock - 1) / keyBlock;
    const int64_t queryTiles = (T + Q::BQ - 1) / Q::BQ;
    // Scratch: the row terms D_i [B, H, T], then with learned coefficients
    // each row's dO . V [B, H, T]; the d alpha partials [B, H, keyTiles].
    float *terms = deviceScratch<float>(device, kAttentionScratch,
                                        dcoefficients ? 2 * rows : rows);
    float *partials =
        dcoefficients
            ? deviceScratch<float>(device, kReductionPartials, B * H * keyTiles)
            : nullptr;
    if (!terms || (dcoefficients && !partials))
      return;
    float *own = dcoefficients ? terms + rows : nullptr;
    device.launch(cudacores::rowTermsKernel<E>,
                  (rows + cudacores::kRowWarps - 1) / cudacores::kRowWarps,
                  32 * cudacores::kRowWarps, 0,
                  "attention_backward (row terms)", terms, own, dout, o, v,
                  coefficients, s, rows);
    if constexpr (tensorCores) {
      if constexpr (std::is_same_v<E, lap_bf16>) { // as in forward
        if (onHopper)
          hopper::launchGradients(device, dq, dk, dv, partials, dout, q, k, v,
                                  lse, terms, coefficients, s);
        else
          tensorcore::launchGradients(device, dq, dk, dv, partials, dout, q, k,
                                      v, lse, terms, coefficients, s);
      }
    } else {
      device.launch(cudacores::keyGradientsKernel<DP, E>, B * KV * keyTiles,
                    cudacores::kThreads, K::bytes,
                    "attention_backward (dk, dv)", dk, dv, partials, dout, q, k,
                    v, lse, terms, coefficients, s, int(keyTiles));
      device.launch(cudacores::queryGradientsKernel<DP, E>, B * H * queryTiles,
                    cudacores::kThreads, Q::bytes, "attention_backward (dq)",
                    dq, dout, q, k, v, lse, terms, coefficients, s,
                    int(queryTiles));
    }
    if (dcoefficients)
      device.launch(cudacores::coefficientsKernel, 2 * H,
                    cudacores::kSumThreads, 0,
                    "attention_backward (dcoefficients)", dcoefficients,
                    partials, int(keyTiles), own, int(B), int(H), int(T));
  });
}

} // namespace
} // namespace lap::cuda::attention

#endif // LAP_RUNTIME_KERNELS_CUDA_ATTENTION_H
