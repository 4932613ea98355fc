//===- CopyTest.cpp - lap_cpu_copy ----------------------------------------===//

#include "runtime/kernels/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

TEST(CopyTest, CopiesExactlyNElements) {
  for (int64_t n : {0, 1, 7, 4096 + 3}) {
    std::vector<float> x(n + 1), y(n + 1, -1.0f);
    for (int64_t i = 0; i <= n; ++i)
      x[i] = float(i) * 0.5f + 1.0f;
    lap_cpu_copy(y.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(y[i], x[i]) << "n " << n << " at " << i;
    EXPECT_EQ(y[n], -1.0f) << "n " << n << ": wrote past the end";
  }
}

} // namespace
