//===- AttentionTensorCores.cu - Launch the tensor-core attention -*- CUDA -*-===//
//
// tensorCoreForward and tensorCoreGradients (AttentionShape.h): the launch
// plans of AttentionTensorCores.h on the calling thread's stream.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/AttentionTensorCores.h"
#include "runtime/kernels/cuda/Context.h"

#include <climits>
#include <string>

namespace lap::cuda {
namespace {

/// Launches kernel<<<blocks, threads, bytes>>> on the calling thread's
/// stream (opting in to more than 48 KiB of dynamic shared memory).
struct CudaLaunch {
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), int64_t blocks, int threads,
                  size_t bytes, const char *what, Args... args) const {
    if (blocks == 0)
      return;
    if (blocks > INT_MAX)
      return fail(std::string(what) + ": too many blocks");
    if (bytes > 48 * 1024 &&
        !check(cudaFuncSetAttribute(kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(bytes)),
               what))
      return;
    kernel<<<unsigned(blocks), threads, bytes, stream()>>>(args...);
    checkLaunch(what);
  }
};

} // namespace

void tensorCoreForward(uint16_t *o, float *lse, const uint16_t *q,
                       const uint16_t *k, const uint16_t *v,
                       const float *coefficients, const Shape &s) {
  tensorcore::launchForward(CudaLaunch(), o, lse, q, k, v, coefficients, s);
}

void tensorCoreGradients(uint16_t *dq, uint16_t *dk, uint16_t *dv,
                         float *alphaPartials, const uint16_t *dout,
                         const uint16_t *q, const uint16_t *k,
                         const uint16_t *v, const float *lse,
                         const float *terms, const float *coefficients,
                         const Shape &s) {
  tensorcore::launchGradients(CudaLaunch(), dq, dk, dv, alphaPartials, dout, q,
                              k, v, lse, terms, coefficients, s);
}

} // namespace lap::cuda
