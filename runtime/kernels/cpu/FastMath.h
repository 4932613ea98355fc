//===- FastMath.h - exp and tanh the vectoriser can widen -------*- C++ -*-===//
//
// Inline polynomials for the kernels' element loops: libm's expf and tanhf
// are calls the vectoriser cannot widen.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_FASTMATH_H
#define LAP_RUNTIME_KERNELS_CPU_FASTMATH_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lap::cpu {

/// exp(x) within ~2 ulp for x in [-87, 88] (Cephes' expf: exp(r) on
/// |r| <= ln2/2 times 2^k); 0 below -87, exp(88) above 88.
inline float expApprox(float x) {
  float xc = std::min(std::max(x, -87.0f), 88.0f);
  float k = std::nearbyint(xc * 1.44269504088896341f);
  float r = xc - k * 0.693359375f + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * (r * r) + r + 1.0f;
  float scale = __builtin_bit_cast(float, (int32_t(k) + 127) << 23);
  return x < -87.0f ? 0.0f : e * scale;
}

/// tanh(x) within a few ulp: Cephes' odd polynomial below 0.625, else
/// 1 - 2 / (exp(2|x|) + 1) with the sign of x.
inline float tanhApprox(float x) {
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * x + x;
  float a = std::fabs(x);
  float large = std::copysign(1.0f - 2.0f / (expApprox(2.0f * a) + 1.0f), x);
  return a < 0.625f ? small : large;
}

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_FASTMATH_H
