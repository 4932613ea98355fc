//===- Bf16.h - Rounding fp32 to bf16 -----------------------------*- C++ -*-===//
//
// bf16 keeps fp32's sign and exponent and the top 7 bits of its mantissa.
// The kernels round to it as the hardware's conversions do (to nearest,
// ties to even) and keep the result in an fp32, whose low 16 bits are then
// zero: a GEMM of such operands is a bf16 GEMM with fp32 accumulation.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_BF16_H
#define LAP_RUNTIME_KERNELS_BF16_H

#include <cstdint>
#include <cstring>

namespace lap::bf16 {

/// Whether u, the bits of an fp32, is a NaN.
inline bool isNan(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/// x rounded to the nearest bf16 (ties to even); NaN stays NaN, and values
/// beyond bf16's largest finite one become infinite.
inline float round(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  // A select rather than a branch, so that loops of it vectorize.
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  u = isNan(u) ? u : rounded;
  std::memcpy(&x, &u, sizeof u);
  return x;
}

/// x rounded to bf16, as the bf16's own 16 bits (round()'s top half). A
/// NaN is made quiet, so that one whose payload is all in the low half
/// stays a NaN.
inline uint16_t bits(float x) {
  const float r = round(x);
  uint32_t u;
  std::memcpy(&u, &r, sizeof u);
  const uint16_t top = uint16_t(u >> 16);
  return isNan(u) ? uint16_t(top | 0x0040u) : top;
}

/// The fp32 value of bf16 bits b (exact).
inline float value(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// A tensor element of either kind, fp32 or bf16 bits, as fp32; and an
/// fp32 result stored as one (rounded to bf16). Kernels templated on their
/// tensors' element type read and write through these.
inline float load(float x) { return x; }
inline float load(uint16_t b) { return value(b); }
inline void store(float &to, float x) { to = x; }
inline void store(uint16_t &to, float x) { to = bits(x); }

} // namespace lap::bf16

#endif // LAP_RUNTIME_KERNELS_BF16_H
