//===- Parallel.cpp - parallel-for for generated code -----------*- C++ -*-===//

#include "runtime/kernels/cpu/Parallel.h"

extern "C" void lap_cpu_parallel_for(int64_t n, int64_t grain,
                                     void (*body)(void *, int64_t, int64_t),
                                     void *ctx) {
  lap::cpu::parallelFor(
      n, grain, [&](int64_t begin, int64_t end) { body(ctx, begin, end); });
}
