//===- AttentionBench.cpp - Time the fused attention kernel -----*- C++ -*-===//
//
// lap-gpu-attention-bench [--tokens N] [--width N] [--warmup N] [--iters N]
//                          [--seq N] [--fp32 0|1] [--window N]
//
// Times lap_cuda_attention_forward and forward + backward (the kernels a
// CUDA library calls once per layer for all its heads), in bf16 (a bf16
// model's `_bf16` kernels: the tensor cores) and fp32, at head dims 64 and
// 128, sequence lengths 512 ... 8192, causal and not, with every head
// softmax attention (`attn`) and with half of them Laplacian (V − PV:
// alpha −1, beta 1), the shapes FlashAttention's benchmarks use: `tokens`
// (16384) per batch, `width` (2048) / head dim heads. FLOPs as
// FlashAttention counts them: 4·B·H·N²·D forward, half of it causal, and
// backward 2.5 times the forward. --seq N times sequences of N alone,
// --fp32 0 bf16 alone, --window N the causal shapes under a sliding window
// of N keys (FLOPs: the pairs it allows). On a GPU whose bf16 attention is
// Hopper's kernels (AttentionHopper.h), bf16 is timed again on the mma.sync
// kernels the other GPUs run (Context.h's allowHopperKernels). Prints one JSON
// object per shape and kernel family ("kernels": hopper, tensorcore,
// cudacores); bench/gpu/torch_attention.py times PyTorch on the same shapes.
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

struct Shape {
  int64_t b, n, h, d;
  int32_t causal;
  bool mixed;     // half the heads (the odd ones) Laplacian
  int64_t window; // causal: keys t - window < s <= t (0: all)
  /// Query-key pairs a head computes, as FlashAttention counts them: n^2,
  /// half of it causal; under a window the pairs it allows.
  double pairs() const {
    const double all = double(n) * double(n);
    if (!causal || window <= 0 || window >= n)
      return causal ? all / 2 : all;
    return double(window) * double(window + 1) / 2 +
           double(n - window) * double(window);
  }
};

// The kernels of either element type, as a library of that precision calls
// them.
void forwardOf(float *o, float *lse, const float *q, const float *k,
               const float *v, const float *c, const Shape &s, float scale) {
  lap_cuda_attention_forward(o, lse, q, k, v, c, nullptr, nullptr, s.b, s.n,
                             s.n, s.h, s.h, s.d, scale, s.causal, s.window);
}
void forwardOf(lap_bf16 *o, float *lse, const lap_bf16 *q, const lap_bf16 *k,
               const lap_bf16 *v, const float *c, const Shape &s, float scale) {
  lap_cuda_attention_forward_bf16(o, lse, q, k, v, c, nullptr, nullptr, s.b,
                                  s.n, s.n, s.h, s.h, s.d, scale, s.causal,
                                  s.window);
}
void backwardOf(float *dq, float *dk, float *dv, const float *dout,
                const float *q, const float *k, const float *v, const float *o,
                const float *lse, const float *c, const Shape &s, float scale) {
  lap_cuda_attention_backward(dq, dk, dv, nullptr, dout, q, k, v, o, lse, c,
                              nullptr, nullptr, s.b, s.n, s.n, s.h, s.h, s.d,
                              scale, s.causal, s.window);
}
void backwardOf(lap_bf16 *dq, lap_bf16 *dk, lap_bf16 *dv, const lap_bf16 *dout,
                const lap_bf16 *q, const lap_bf16 *k, const lap_bf16 *v,
                const lap_bf16 *o, const float *lse, const float *c,
                const Shape &s, float scale) {
  lap_cuda_attention_backward_bf16(dq, dk, dv, nullptr, dout, q, k, v, o, lse,
                                   c, nullptr, nullptr, s.b, s.n, s.n, s.h, s.h,
                                   s.d, scale, s.causal, s.window);
}

/// A shape's tensors at element type E, allocated and filled once for all
/// shapes: q, k, v, dout random; o, dq, dk, dv and lse zero. Every shape
/// has `elements` per tensor (b n = tokens, h d = width) and at most
/// `rows` logsumexps.
template <typename E> struct Tensors {
  Tensors(int64_t elements, int64_t rows, std::mt19937 &rng)
      : elements(elements), rows(rows), q(randomElements<E>(elements, rng)),
        k(randomElements<E>(elements, rng)),
        v(randomElements<E>(elements, rng)),
        dout(randomElements<E>(elements, rng)),
        o(randomElements<E>(elements, rng, true)),
        dq(randomElements<E>(elements, rng, true)),
        dk(randomElements<E>(elements, rng, true)),
        dv(randomElements<E>(elements, rng, true)),
        lse(randomElements<float>(rows, rng, true)) {}
  int64_t elements, rows;
  std::unique_ptr<DeviceBuffer> q, k, v, dout, o, dq, dk, dv, lse;
};

/// The forward and forward + backward times of one shape at element type E.
template <typename E>
nlohmann::json timeShape(const Shape &s, const Tensors<E> &t,
                         cudaStream_t stream, int64_t warmup, int64_t iters) {
  if (s.b * s.n * s.h * s.d > t.elements || s.b * s.h * s.n > t.rows)
    throw std::runtime_error("a shape larger than the tensors");
  // Named with their type: with `auto` they would be dependent, and
  // `->as<E>()` would need `template`.
  const std::unique_ptr<DeviceBuffer> &q = t.q, &k = t.k, &v = t.v,
                                      &dout = t.dout, &o = t.o, &dq = t.dq,
                                      &dk = t.dk, &dv = t.dv, &lse = t.lse;
  // alpha then beta per head: attn (1, 0), laplacian (-1, 1) on the odd
  // heads when mixed.
  std::vector<float> coefficients(size_t(2 * s.h));
  for (int64_t i = 0; i < s.h; ++i) {
    bool laplacian = s.mixed && i % 2 == 1;
    coefficients[size_t(i)] = laplacian ? -1.0f : 1.0f;
    coefficients[size_t(s.h + i)] = laplacian ? 1.0f : 0.0f;
  }
  DeviceBuffer c(size_t(2 * s.h) * 4);
  check(cudaMemcpy(c.data, coefficients.data(), size_t(2 * s.h) * 4,
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  const float scale = 1.0f / std::sqrt(float(s.d));
  auto forward = [&] {
    forwardOf(o->as<E>(), lse->as<float>(), q->as<E>(), k->as<E>(), v->as<E>(),
              c.as<float>(), s, scale);
  };
  double forwardMs = medianMs(stream, warmup, iters, forward);
  double bothMs = medianMs(stream, warmup, iters, [&] {
    forward();
    backwardOf(dq->as<E>(), dk->as<E>(), dv->as<E>(), dout->as<E>(), q->as<E>(),
               k->as<E>(), v->as<E>(), o->as<E>(), lse->as<float>(),
               c.as<float>(), s, scale);
  });
  double flops = 4.0 * double(s.b * s.h) * s.pairs() * double(s.d);
  return {
      {"framework", "lap"},
      {"kernel", "attention"},
      {"head_dim", s.d},
      {"seq", s.n},
      {"batch", s.b},
      {"heads", s.h},
      {"causal", s.causal != 0},
      {"window", s.window},
      {"kinds", s.mixed ? "mixed" : "attn"},
      {"forward_ms", forwardMs},
      {"forward_tflops", flops / (forwardMs * 1e-3) / 1e12},
      {"forward_backward_ms", bothMs},
      {"forward_backward_tflops", 3.5 * flops / (bothMs * 1e-3) / 1e12},
  };
}

} // namespace

int main(int argc, char **argv) {
  try {
    int64_t tokens = flag(argc, argv, "--tokens", 16384);
    int64_t width = flag(argc, argv, "--width", 2048);
    int64_t warmup = flag(argc, argv, "--warmup", 2);
    int64_t iters = flag(argc, argv, "--iters", 10);
    const int64_t onlySeq = flag(argc, argv, "--seq", 0);
    const bool fp32 = flag(argc, argv, "--fp32", 1) != 0;
    const int64_t window = flag(argc, argv, "--window", 0);
    const std::vector<int64_t> seqs =
        onlySeq > 0 ? std::vector<int64_t>{onlySeq}
                    : std::vector<int64_t>{512, 1024, 2048, 4096, 8192};
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreate");
    lap::cuda::setStream(stream);
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    std::mt19937 rng(1);

    // Every shape: b = tokens / n (at least 1) sequences of n tokens,
    // width / d heads.
    auto timeAll = [&](auto element, const char *precision,
                       const char *kernels) {
      using E = decltype(element);
      const int64_t elements = std::max<int64_t>(tokens, 8192) * width;
      const Tensors<E> tensors(elements, elements / 64, rng);
      for (int64_t d : {64, 128})
        for (int64_t n : seqs)
          for (int32_t causal : {0, 1})
            for (bool mixed : {false, true}) {
              Shape shape{std::max<int64_t>(1, tokens / n),
                          n,
                          width / d,
                          d,
                          causal,
                          mixed,
                          causal ? window : 0};
              nlohmann::json out =
                  timeShape<E>(shape, tensors, stream, warmup, iters);
              out["device"] = prop.name;
              out["precision"] = precision;
              out["kernels"] = kernels;
              std::cout << out.dump() << std::endl;
            }
    };
    if (lap::cuda::hopperKernels()) {
      timeAll(lap_bf16(0), "bf16", "hopper");
      lap::cuda::allowHopperKernels(false);
    }
    timeAll(lap_bf16(0), "bf16", "tensorcore");
    if (fp32)
      timeAll(float(0), "fp32", "cudacores");
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "lap-gpu-attention-bench: error: " << e.what() << "\n";
    return 2;
  }
}
