//===- Copy.cpp - Copies between buffers ------------------------*- C++ -*-===//

#include "runtime/kernels/cpu/Kernels.h"

#include <cstring>

extern "C" void lap_cpu_copy(float *y, const float *x, int64_t n) {
  if (n > 0)
    std::memcpy(y, x, size_t(n) * sizeof(float));
}
