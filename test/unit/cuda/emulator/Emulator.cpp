//===- Emulator.cpp - CUDA blocks as fibers on the CPU --------------------===//

#include "test/unit/cuda/emulator/Emulator.h"

#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/TensorCores.h"

#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

thread_local dim3 threadIdx, blockIdx, blockDim;

namespace {

[[noreturn]] void abortWith(const char *why) {
  std::fprintf(stderr, "emulator: %s\n", why);
  std::abort();
}

/// The fibers of the block being run, one per CUDA thread, on this OS
/// thread: each runs until it waits at a barrier or ends, then yields to
/// the scheduler in run(), which resumes them in turn.
struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  dim3 index;
  bool done = false;
};
ucontext_t scheduler;
Fiber *current = nullptr;
uint64_t events = 0; // arrivals and ends: the scheduler's sign of progress

void yield() { swapcontext(&current->context, &scheduler); }

/// A reusable barrier of n fibers.
class Barrier {
public:
  explicit Barrier(int n) : n(n) {}
  void wait() {
    ++events;
    if (++count == n) {
      count = 0;
      ++generation;
      return;
    }
    for (const uint64_t arrival = generation; generation == arrival;)
      yield();
  }

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
  float c[32][4], x[32];
  const uint16_t *rows[32];
};

struct Block {
  Block(int threads, size_t sharedBytes)
      : barrier(threads), warps(new Warp[(threads + 31) / 32]),
        shared((sharedBytes + 15) / 16) {
    memset(shared.data(), 0xff, shared.size() * sizeof(uint4));
  }
  Barrier barrier;
  std::unique_ptr<Warp[]> warps;
  std::vector<uint4> shared;
};

Block *currentBlock = nullptr;

/// The thread's index in its block, x fastest (as CUDA numbers warps).
unsigned linearThread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
Warp &warp() { return currentBlock->warps[linearThread() / 32]; }
int lane() { return int(linearThread() % 32); }

/// The bf16 element in half `half` (0: the lower) of a register.
float element(uint32_t reg, int half) {
  return lap::cuda::load(lap_bf16(reg >> (16 * half)));
}

} // namespace

void __syncthreads() { currentBlock->barrier.wait(); }
void __syncwarp() { warp().barrier.wait(); }

float __shfl_xor_sync(unsigned, float x, int laneMask) {
  Warp &w = warp();
  w.x[lane()] = x;
  w.barrier.wait();
  const float y = w.x[lane() ^ laneMask];
  w.barrier.wait();
  return y;
}

namespace lap::cuda {

// Where each fragment element lives (TensorCores.h's table, from the PTX
// ISA): A[row][k] in lane 4 (row % 8) + k % 8 / 2, register row / 8 +
// 2 (k / 8); B[k][col] in lane 4 col + k % 8 / 2, register k / 8; both in
// half k % 2. A lane's C entry e is row g + 8 (e / 2), column 2c + e % 2.
void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  Warp &w = warp();
  const int l = lane();
  for (int i = 0; i < 4; ++i) {
    w.a[l][i] = a[i];
    w.c[l][i] = c[i];
  }
  w.b[l][0] = b0;
  w.b[l][1] = b1;
  w.barrier.wait();
  float d[4];
  for (int e = 0; e < 4; ++e) {
    const int row = l / 4 + 8 * (e / 2), col = 2 * (l % 4) + e % 2;
    float sum = w.c[l][e];
    for (int k = 0; k < 16; ++k)
      sum += element(w.a[4 * (row % 8) + k % 8 / 2][row / 8 + 2 * (k / 8)],
                     k % 2) *
             element(w.b[4 * col + k % 8 / 2][k / 8], k % 2);
    d[e] = sum;
  }
  w.barrier.wait();
  for (int e = 0; e < 4; ++e)
    c[e] = d[e];
}

// Matrix j's row i is at the address of lane 8j + i; lane 4g + c receives
// its rows 2c and 2c + 1 of column g.
void loadTransposed(uint32_t (&r)[4], const uint16_t *row) {
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0)
    abortWith("ldmatrix: a row address is not 16-byte aligned");
  Warp &w = warp();
  const int l = lane(), g = l / 4, c = l % 4;
  w.rows[l] = row;
  w.barrier.wait();
  for (int j = 0; j < 4; ++j)
    r[j] = uint32_t(w.rows[8 * j + 2 * c][g]) |
           uint32_t(w.rows[8 * j + 2 * c + 1][g]) << 16;
  w.barrier.wait();
}

void *dynamicShared() { return currentBlock->shared.data(); }

} // namespace lap::cuda

namespace {
std::string failure; // the first since the last take
} // namespace

std::string lap::cuda::takeFailure() { return std::exchange(failure, {}); }

namespace lap::test::emulator {

void Device::fail(const std::string &why) const {
  if (failure.empty())
    failure = why;
}

namespace {

const std::function<void()> *currentBody = nullptr;

void fiberMain() {
  (*currentBody)();
  current->done = true;
  ++events;
  yield();
}

} // namespace

void run(dim3 grid, dim3 block, size_t sharedBytes,
         const std::function<void()> &body) {
  constexpr size_t kStackBytes = size_t(1) << 18;
  const unsigned threads = block.x * block.y * block.z;
  currentBody = &body;
  std::vector<Fiber> fibers(threads);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        Block state(int(threads), sharedBytes);
        currentBlock = &state;
        blockIdx = dim3(x, y, z);
        blockDim = block;
        for (unsigned t = 0; t < threads; ++t) {
          Fiber &f = fibers[t];
          if (!f.stack)
            f.stack.reset(new char[kStackBytes]);
          f.done = false;
          f.index =
              dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.get();
          f.context.uc_stack.ss_size = kStackBytes;
          f.context.uc_link = nullptr;
          makecontext(&f.context, fiberMain, 0);
        }
        for (unsigned left = threads; left > 0;) {
          const uint64_t before = events;
          left = 0;
          for (Fiber &f : fibers) {
            if (f.done)
              continue;
            current = &f;
            threadIdx = f.index;
            swapcontext(&scheduler, &f.context);
            left += !f.done;
          }
          if (left > 0 && events == before)
            abortWith("a barrier is not reached by every thread of its "
                      "block or warp");
        }
      }
  current = nullptr;
}

} // namespace lap::test::emulator
