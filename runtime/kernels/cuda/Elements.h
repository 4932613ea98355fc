//===- Elements.h - Tensor elements of either kind in device code -*- CUDA -*-===//
//
// For .cu files: a kernel templated on its tensors' element type (fp32, or
// a bf16 model's lap_bf16 bits) reads each element as fp32 and stores its
// fp32 result as the element type, rounded to nearest (ties to even) for
// bf16, as the CPU's kernels do (runtime/kernels/Bf16.h). In host C++ (the
// emulator: DeviceCode.h) the same, by Bf16.h's rounding.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_ELEMENTS_H
#define LAP_RUNTIME_KERNELS_CUDA_ELEMENTS_H

#include "runtime/kernels/KernelEnums.h"
#include "runtime/kernels/cuda/DeviceCode.h"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#else
#include "runtime/kernels/Bf16.h"

#include <cstring>
#endif

namespace lap::cuda {

__device__ inline float load(float x) { return x; }
__device__ inline void store(float &to, float x) { to = x; }

#ifdef __CUDACC__
__device__ inline float load(lap_bf16 b) {
  return __bfloat162float(__ushort_as_bfloat16(b));
}
__device__ inline void store(lap_bf16 &to, float x) {
  to = __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
#else
inline float load(lap_bf16 b) {
  const uint32_t bits = uint32_t(b) << 16;
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}
inline void store(lap_bf16 &to, float x) { to = lap::bf16::bits(x); }
#endif

} // namespace lap::cuda

#endif // LAP_RUNTIME_KERNELS_CUDA_ELEMENTS_H
