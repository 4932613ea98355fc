//===- IsaTestMain.cpp - GoogleTest main for one kernel instruction set ---===//
//
// ctest runs the attention and whole-model tests once per instruction set
// the kernels are compiled for (LAP_CPU_ISA=avx512, avx2, generic). Where
// this CPU cannot run the one asked for, the test exits with 77, which
// ctest reports as skipped (SKIP_RETURN_CODE), with the reason in its log.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  if (const char *error = lap_cpu_isa_error();
      error && !GTEST_FLAG_GET(list_tests)) {
    std::printf("skipped: %s\n", error);
    return 77;
  }
  std::printf("kernels: %s\n", lap_cpu_isa());
  return RUN_ALL_TESTS();
}
