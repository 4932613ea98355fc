//===- IsaTest.cpp - A forced instruction set holds for GEMMs too ---------===//
//
// Run once per instruction set (IsaTestMain): below the best one this CPU
// has, oneDNN's GEMMs keep to AVX2 as well, so that LAP_CPU_ISA=avx2 runs
// the whole library as an AVX2-only CPU would.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"

#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>

#include <string>

TEST(Isa, GemmsKeepToTheChosenInstructionSet) {
  std::string chosen = lap_cpu_isa(), available = lap_cpu_isas();
  bool best = available.rfind(chosen, 0) == 0; // lap_cpu_isas: best first
  dnnl_cpu_isa_t gemms = dnnl_get_effective_cpu_isa();
  if (best)
    EXPECT_NE(gemms, dnnl_cpu_isa_all) << "oneDNN reports no instruction set";
  else
    EXPECT_EQ(gemms, dnnl_cpu_isa_avx2)
        << "kernels " << chosen << " of " << available
        << ", but oneDNN's GEMMs may use more than AVX2";
}
