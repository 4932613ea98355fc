//===- Emulator.h - CUDA blocks as host threads -------------------*- C++ -*-===//
//
// Runs kernels written in runtime/kernels/cuda/TensorCores.h's primitives
// on the CPU, from their own source compiled as host C++. A block is one
// host thread per CUDA thread, so __syncthreads and the warp-wide
// operations meet as on a GPU; blocks run one after another. The warp-wide
// operations (mma.sync m16n8k16, ldmatrix .x4 .trans, shuffles) exchange
// the lanes' registers and give each lane what the PTX ISA documents it
// receives. What the emulator cannot show: the hardware's own rounding of
// a product's sum (it sums in fp32, in k order) and its scheduling. A
// barrier that not every thread reaches aborts with a message rather than
// hang; so does a misaligned ldmatrix row.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_CUDA_EMULATOR_EMULATOR_H
#define LAP_TEST_UNIT_CUDA_EMULATOR_EMULATOR_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lap::test::emulator {

/// Runs body() as `blocks` blocks of `threads` threads each, with
/// `sharedBytes` of dynamic shared memory (filled with 0xff bytes, a bf16
/// NaN, so that reading what no thread wrote shows).
void run(int64_t blocks, int threads, size_t sharedBytes,
         const std::function<void()> &body);

/// The Device of the CUDA kernels' plans (runtime/kernels/cuda/
/// Attention.h) on the emulator: launches run here, scratch is host memory
/// (NaN until written), failures are recorded.
class Device {
public:
  template <typename... Params, typename... Args>
  bool launch(void (*kernel)(Params...), int64_t blocks, int threads,
              size_t sharedBytes, const char *, Args... args) const {
    run(blocks, threads, sharedBytes, [&] { kernel(args...); });
    return true;
  }
  float *floats(int slot, int64_t n) const {
    std::vector<float> &buffer = scratch[slot];
    buffer.assign(size_t(std::max<int64_t>(n, 1)), NAN);
    return buffer.data();
  }
  void fail(const std::string &why) const {
    if (failure.empty())
      failure = why;
  }
  /// The first failure since the last call; empty if none.
  std::string takeFailure() const { return std::exchange(failure, {}); }

private:
  mutable std::map<int, std::vector<float>> scratch;
  mutable std::string failure;
};

} // namespace lap::test::emulator

#endif // LAP_TEST_UNIT_CUDA_EMULATOR_EMULATOR_H
