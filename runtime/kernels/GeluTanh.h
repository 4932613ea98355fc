//===- GeluTanh.h - The arithmetic of the tanh GELU -------------*- C++ -*-===//
//
// gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), as
// the generated loops compute it (FusedLoops.cpp) and cuBLASLt's GELU
// epilogues do. The CPU and CUDA kernels that fuse it into a GEMM share
// these; each brings its own tanh (an inline polynomial on the CPU, so that
// the loops vectorise; tanhf on the GPU), so they are written in t = tanh(u).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_GELUTANH_H
#define LAP_RUNTIME_KERNELS_GELUTANH_H

namespace lap::gelu {

constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;

/// u, whose tanh both the value and the slope take.
constexpr float tanhArgument(float x) {
  return kSqrt2OverPi * (x + kCubic * x * x * x);
}

/// gelu_tanh(x), given t = tanh(tanhArgument(x)).
constexpr float value(float x, float t) { return 0.5f * x * (1.0f + t); }

/// d gelu_tanh / dx, given t = tanh(tanhArgument(x)).
constexpr float slope(float x, float t) {
  float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

} // namespace lap::gelu

#endif // LAP_RUNTIME_KERNELS_GELUTANH_H
