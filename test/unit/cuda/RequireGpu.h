//===- RequireGpu.h - Skip a GPU test, saying why, without a GPU -*- C++ -*-===//

#ifndef LAP_TEST_UNIT_CUDA_REQUIREGPU_H
#define LAP_TEST_UNIT_CUDA_REQUIREGPU_H

#ifdef LAP_CUDA_EMULATOR

/// Built for the emulator (test/unit/cuda/emulator), every test runs.
#define REQUIRE_GPU()                                                          \
  do {                                                                         \
  } while (0)

#else

#include "runtime/device/cuda/Discovery.h"

#include <gtest/gtest.h>

#include <string>

/// Skips the test, saying why, unless a CUDA device is visible.
#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    std::string why;                                                           \
    if (lap::cuda::visibleDevices(&why).empty())                               \
      GTEST_SKIP() << "no GPU, skipping: " << why;                             \
  } while (0)

#endif

#endif // LAP_TEST_UNIT_CUDA_REQUIREGPU_H
