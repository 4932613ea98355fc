//===- Fibers.h - The emulator's threads, warps and blocks -------*- C++ -*-===//
//
// What the emulator's files share (Emulator.cpp: the scheduler, warp-wide
// operations and the Launcher; WarpGroups.cpp: wgmma and the barriers of
// warp-specialised blocks): the CUDA threads of the block being run as
// fibers resumed in turn, what a warp or warpgroup exchanges for one
// operation, and a block's shared state.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_TEST_UNIT_CUDA_EMULATOR_FIBERS_H
#define LAP_TEST_UNIT_CUDA_EMULATOR_FIBERS_H

#include "runtime/kernels/cuda/DeviceCode.h"
#include "runtime/kernels/cuda/WarpGroupMma.h"

#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace lap::test::emulator::internal {

[[noreturn]] void abortWith(const char *why);

/// The fibers of the block being run, one per CUDA thread, on this OS
/// thread: each runs until it waits at a barrier or ends, then yields to
/// the next one that has not ended, in turn; the last to end returns to
/// run(). A launch's fibers run its blocks one after another: a fiber that
/// ended its block waits in fiberMain for the next.
struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  dim3 index;
  bool done = false;
  /// Asynchronous copies (cp.async) started and not yet waited for: the
  /// open group, and the closed ones, oldest first.
  struct Copy {
    uint16_t *to;
    uint4 bytes;
  };
  std::vector<Copy> open;
  std::deque<std::vector<Copy>> groups;
  /// Warpgroup MMAs issued and not yet waited for: the accumulator they
  /// write and its value, and what they read (the thread's A registers, a
  /// hash of the shared-memory operands), which must not change until the
  /// wait; the open group, and the closed ones, oldest first.
  struct Product {
    float *d;
    std::vector<float> values;
    const uint32_t *a;
    uint32_t aValues[4];
    std::function<uint64_t()> hashOperands;
    uint64_t operandHash;
  };
  std::vector<Product> openProducts;
  std::deque<std::vector<Product>> productGroups;
};

extern Fiber *current;  // the running fiber
extern uint64_t events; // arrivals and ends: the sign of progress

/// Switches to the next fiber that has not ended (which may be this one),
/// or to run() when none is left. A whole turn of the fibers without an
/// arrival or an end is a deadlock.
void yield();

/// A reusable barrier of n fibers.
class Barrier {
public:
  explicit Barrier(int n) : n(n) {}
  void wait();

private:
  const int n;
  int count = 0;
  uint64_t generation = 0;
};

/// What the lanes of a warp put down for one warp-wide operation, read by
/// the others between its two barriers.
struct Warp {
  Barrier barrier{32};
  uint32_t a[32][4], b[32][2];
  float c[32][4];
  uint64_t x[32];
  const uint16_t *rows[32];
};

/// What the 128 threads of a warpgroup put down for one wgmma, read by
/// the others between its two barriers: each one's accumulator (as it
/// stands once its earlier products land) and A registers, and the
/// operands' descriptors.
struct WarpGroup {
  static constexpr int kMaxN = 128;
  Barrier barrier{128};
  float d[128][kMaxN / 2];
  uint32_t a[128][4];
  lap::cuda::hopper::SharedMatrix sharedA[128], sharedB[128];
};

/// A stage barrier (mbarrier): the arrivals a phase takes, those still to
/// come, and the phase's parity.
struct StageBarrier {
  int count = 0, pending = 0, phase = 0;
};

/// A named barrier (bar.sync / bar.arrive): its thread count, the arrivals
/// so far, and how many times it has opened.
struct NamedBarrier {
  int count = 0, arrived = 0;
  uint64_t generation = 0;
};

struct Block {
  Block(int threads, size_t sharedBytes);
  const int threads;
  Barrier barrier;
  std::unique_ptr<Warp[]> warps;
  std::unique_ptr<WarpGroup[]> warpGroups; // made by the first wgmma
  std::vector<uint4> shared;
  std::map<const uint64_t *, StageBarrier> stageBarriers;
  std::map<int, NamedBarrier> namedBarriers;
};

extern Block *currentBlock; // the running block

/// The thread's index in its block, x fastest (as CUDA numbers warps).
unsigned linearThread();

/// The bf16 element in half `half` (0: the lower) of a register.
float element(uint32_t reg, int half);

} // namespace lap::test::emulator::internal

#endif // LAP_TEST_UNIT_CUDA_EMULATOR_FIBERS_H
