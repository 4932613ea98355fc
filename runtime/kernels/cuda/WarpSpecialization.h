//===- WarpSpecialization.h - Producer and consumer warpgroups ----*- CUDA -*-===//
//
// What a block whose warpgroups take roles (a producer that copies tiles, and
// consumers that compute on them: AttentionHopper.h's forward) synchronises
// with, besides WarpGroupMma.h:
//  - stage barriers (mbarrier, in shared memory): a phase completes when its
//    count of arrivals is in; waiting names the phase by its parity. A
//    producer thread's arrival can be the completion of its asynchronous
//    copies (cp.async.mbarrier.arrive.noinc);
//  - named barriers (bar.sync / bar.arrive with an id and a thread count),
//    with which the consumers take turns to issue their products;
//  - moving registers between warpgroups (setmaxnreg).
// Under nvcc these are the hardware's where the code is built for sm_90a and
// a trap elsewhere; compiled as host C++ the emulator
// (test/unit/cuda/emulator) defines them.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_WARPSPECIALIZATION_H
#define LAP_RUNTIME_KERNELS_CUDA_WARPSPECIALIZATION_H

#include "runtime/kernels/cuda/DeviceCode.h"

#include <cstdint>

namespace lap::cuda::hopper {

#if defined(__CUDACC__)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LAP_SM90A(...) asm volatile(__VA_ARGS__)
#else
#define LAP_SM90A(...) __trap()
#endif

__device__ inline uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Makes `barrier` one whose phases complete after `count` arrivals. One
/// thread initialises; a __syncthreads follows before any use.
__device__ inline void initBarrier(uint64_t *barrier, int count) {
  LAP_SM90A(
      "mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(sharedAddress(barrier)),
      "r"(count)
      : "memory");
}
/// One arrival of this thread (release: its earlier writes are seen by
/// whoever waits for the phase).
__device__ inline void arrive(uint64_t *barrier) {
  LAP_SM90A(
      "mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sharedAddress(barrier))
      : "memory");
}
/// One arrival, once every cp.async this thread has started has landed.
__device__ inline void arriveWhenCopied(uint64_t *barrier) {
  LAP_SM90A("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(
                sharedAddress(barrier))
            : "memory");
}
/// Whether the phase of parity `parity` has completed (it waits a while).
__device__ inline bool tryWait(uint64_t *barrier, int parity) {
  uint32_t done = 0;
  LAP_SM90A("{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(sharedAddress(barrier)), "r"(parity)
            : "memory");
  return done != 0;
}

/// Named barrier `id` (1..15; 0 is __syncthreads'): waits until `threads`
/// have arrived, this one among them; or arrives without waiting.
__device__ inline void syncNamed(int id, int threads) {
  LAP_SM90A("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void arriveNamed(int id, int threads) {
  LAP_SM90A("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// The calling warpgroup's registers per thread become Count (a multiple
/// of 8 in 24..256): fewer for a producer, more for consumers.
template <int Count> __device__ inline void shrinkRegisters() {
  LAP_SM90A("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Count));
}
template <int Count> __device__ inline void growRegisters() {
  LAP_SM90A("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Count));
}

#undef LAP_SM90A

#else // the emulator's

void initBarrier(uint64_t *barrier, int count);
void arrive(uint64_t *barrier);
void arriveWhenCopied(uint64_t *barrier);
bool tryWait(uint64_t *barrier, int parity);
void syncNamed(int id, int threads);
void arriveNamed(int id, int threads);
template <int Count> inline void shrinkRegisters() {}
template <int Count> inline void growRegisters() {}

#endif

/// Waits until the phase of parity `parity` of `barrier` has completed.
__device__ inline void waitBarrier(uint64_t *barrier, int parity) {
  while (!tryWait(barrier, parity)) {
  }
}

} // namespace lap::cuda::hopper

#endif // LAP_RUNTIME_KERNELS_CUDA_WARPSPECIALIZATION_H
