//===- AttentionBench.cpp - Time the fused attention kernel -----*- C++ -*-===//
//
// lap-gpu-attention-bench [--tokens N] [--width N] [--warmup N] [--iters N]
//
// Times lap_cuda_attention_forward and forward + backward (the kernels a
// CUDA library calls once per layer for all its heads) at head dims 64 and
// 128, sequence lengths 512 ... 8192, causal and not, with every head
// softmax attention (`attn`) and with half of them Laplacian (V − PV:
// alpha −1, beta 1), the shapes FlashAttention's benchmarks use: `tokens`
// (16384) per batch, `width` (2048) / head dim heads. FLOPs as
// FlashAttention counts them: 4·B·H·N²·D forward, half of it causal, and
// backward 2.5 times the forward. Prints one JSON object per shape;
// bench/gpu/torch_attention.py times PyTorch on the same shapes.
//
//===----------------------------------------------------------------------===//

#include "bench/StepArgs.h"
#include "bench/gpu/CudaTiming.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Kernels.h"

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace lap::bench;

namespace {

/// The median milliseconds of `iters` runs of `body` after `warmup`.
template <typename F>
double medianMs(cudaStream_t stream, int64_t warmup, int64_t iters, F body) {
  std::vector<double> ms =
      timeRuns(stream, warmup, iters, [&](int64_t) { body(); });
  if (std::string failure = lap::cuda::takeFailure(); !failure.empty())
    throw std::runtime_error(failure);
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  try {
    int64_t tokens = flag(argc, argv, "--tokens", 16384);
    int64_t width = flag(argc, argv, "--width", 2048);
    int64_t warmup = flag(argc, argv, "--warmup", 2);
    int64_t iters = flag(argc, argv, "--iters", 10);
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreate");
    lap::cuda::setStream(stream);
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    std::mt19937 rng(1);

    for (int64_t d : {64, 128})
      for (int64_t n : {512, 1024, 2048, 4096, 8192})
        for (int32_t causal : {0, 1})
          for (bool mixed : {false, true}) {
            const int64_t b = std::max<int64_t>(1, tokens / n), h = width / d;
            const int64_t elements = b * n * h * d;
            auto q = randomFloats(elements, rng),
                 k = randomFloats(elements, rng),
                 v = randomFloats(elements, rng),
                 dout = randomFloats(elements, rng),
                 o = randomFloats(elements, rng, true),
                 dq = randomFloats(elements, rng, true),
                 dk = randomFloats(elements, rng, true),
                 dv = randomFloats(elements, rng, true),
                 lse = randomFloats(b * h * n, rng, true);
            // alpha then beta per head: attn (1, 0), laplacian (-1, 1) on
            // the odd heads when mixed.
            std::vector<float> coefficients(size_t(2 * h));
            for (int64_t i = 0; i < h; ++i) {
              bool laplacian = mixed && i % 2 == 1;
              coefficients[size_t(i)] = laplacian ? -1.0f : 1.0f;
              coefficients[size_t(h + i)] = laplacian ? 1.0f : 0.0f;
            }
            DeviceBuffer c(size_t(2 * h) * 4);
            check(cudaMemcpy(c.data, coefficients.data(), size_t(2 * h) * 4,
                             cudaMemcpyHostToDevice),
                  "cudaMemcpy");
            const float scale = 1.0f / std::sqrt(float(d));
            auto forward = [&] {
              lap_cuda_attention_forward(o->as<float>(), lse->as<float>(),
                                         q->as<float>(), k->as<float>(),
                                         v->as<float>(), c.as<float>(), b, n, n,
                                         h, h, d, scale, causal);
            };
            double forwardMs = medianMs(stream, warmup, iters, forward);
            double bothMs = medianMs(stream, warmup, iters, [&] {
              forward();
              lap_cuda_attention_backward(
                  dq->as<float>(), dk->as<float>(), dv->as<float>(), nullptr,
                  dout->as<float>(), q->as<float>(), k->as<float>(),
                  v->as<float>(), o->as<float>(), lse->as<float>(),
                  c.as<float>(), b, n, n, h, h, d, scale, causal);
            });
            double flops = 4.0 * double(b * h) * double(n) * double(n) *
                           double(d) * (causal ? 0.5 : 1.0);
            nlohmann::json out{
                {"framework", "lap"},
                {"kernel", "attention (fp32)"},
                {"device", prop.name},
                {"precision", "fp32"},
                {"head_dim", d},
                {"seq", n},
                {"batch", b},
                {"heads", h},
                {"causal", causal != 0},
                {"kinds", mixed ? "mixed" : "attn"},
                {"forward_ms", forwardMs},
                {"forward_tflops", flops / (forwardMs * 1e-3) / 1e12},
                {"forward_backward_ms", bothMs},
                {"forward_backward_tflops",
                 3.5 * flops / (bothMs * 1e-3) / 1e12},
            };
            std::cout << out.dump() << std::endl;
          }
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "lap-gpu-attention-bench: error: " << e.what() << "\n";
    return 2;
  }
}
