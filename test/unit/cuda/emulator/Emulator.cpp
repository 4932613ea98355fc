//===- Emulator.cpp - CUDA blocks as fibers on the CPU --------------------===//

#include "test/unit/cuda/emulator/Emulator.h"

#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/TensorCores.h"
#include "test/unit/cuda/emulator/Fibers.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

thread_local dim3 threadIdx, blockIdx, blockDim;

namespace lap::test::emulator::internal {

void abortWith(const char *why) {
  std::fprintf(stderr, "emulator: %s\n", why);
  std::abort();
}

Fiber *current = nullptr;
uint64_t events = 0;
Block *currentBlock = nullptr;

namespace {
ucontext_t scheduler;       // run()'s
std::vector<Fiber> *fibers; // the launch's
uint64_t eventsAtTurn = 0;  // events when the turn last wrapped around
} // namespace

void yield() {
  std::vector<Fiber> &all = *fibers;
  const size_t n = all.size(), from = size_t(current - all.data());
  for (size_t step = 1; step <= n; ++step) {
    const size_t i = (from + step) % n;
    if (i == 0) { // a new turn
      if (events == eventsAtTurn)
        abortWith("a barrier is not reached by every thread of its block or "
                  "warp");
      eventsAtTurn = events;
    }
    if (all[i].done)
      continue;
    if (i == from)
      return;
    Fiber *previous = current;
    current = &all[i];
    threadIdx = current->index;
    swapcontext(&previous->context, &current->context);
    return;
  }
  swapcontext(&current->context, &scheduler);
}

void Barrier::wait() {
  ++events;
  if (++count == n) {
    count = 0;
    ++generation;
    return;
  }
  for (const uint64_t arrival = generation; generation == arrival;)
    yield();
}

Block::Block(int threads, size_t sharedBytes)
    : threads(threads), barrier(threads), warps(new Warp[(threads + 31) / 32]),
      shared((sharedBytes + 15) / 16) {
  memset(shared.data(), 0xff, shared.size() * sizeof(uint4));
}

unsigned linearThread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

float element(uint32_t reg, int half) {
  return lap::cuda::load(lap_bf16(reg >> (16 * half)));
}

} // namespace lap::test::emulator::internal

using namespace lap::test::emulator::internal;

namespace {
Warp &warp() { return currentBlock->warps[linearThread() / 32]; }
int lane() { return int(linearThread() % 32); }
} // namespace

void __syncthreads() { currentBlock->barrier.wait(); }
void __syncwarp() { warp().barrier.wait(); }

namespace {

/// Lane ^ laneMask's x (any type of up to 8 bytes).
template <typename T> T shuffleXor(T x, int laneMask) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  Warp &w = warp();
  memcpy(&w.x[lane()], &x, sizeof x);
  w.barrier.wait();
  T y;
  memcpy(&y, &w.x[lane() ^ laneMask], sizeof y);
  w.barrier.wait();
  return y;
}

} // namespace

float __shfl_xor_sync(unsigned, float x, int laneMask) {
  return shuffleXor(x, laneMask);
}
double __shfl_xor_sync(unsigned, double x, int laneMask) {
  return shuffleXor(x, laneMask);
}
long long __shfl_xor_sync(unsigned, long long x, int laneMask) {
  return shuffleXor(x, laneMask);
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

void copyAsync16(uint16_t *to, const uint16_t *from, bool valid) {
  if (reinterpret_cast<uintptr_t>(to) % 16 != 0 ||
      (valid && reinterpret_cast<uintptr_t>(from) % 16 != 0))
    abortWith("cp.async: an address is not 16-byte aligned");
  uint4 bytes{0, 0, 0, 0};
  if (valid)
    memcpy(&bytes, from, sizeof bytes);
  current->open.push_back({to, bytes});
  // Until it lands, what a reader finds there is undefined: NaN.
  memset(to, 0xff, sizeof bytes);
}

void commitCopies() {
  current->groups.push_back(std::move(current->open));
  current->open.clear();
}

void waitCopies(int pending) {
  for (auto &groups = current->groups; int(groups.size()) > pending;
       groups.pop_front())
    for (const Fiber::Copy &copy : groups.front())
      memcpy(copy.to, &copy.bytes, sizeof copy.bytes);
}

void *dynamicShared() { return currentBlock->shared.data(); }

} // namespace lap::cuda

namespace {
std::string failure; // the first since the last take
} // namespace

std::string lap::cuda::takeFailure() { return std::exchange(failure, {}); }

namespace lap::test::emulator {

void *Launcher::bytes(int slot, size_t n) const {
  std::vector<uint4> &buffer = scratch[slot];
  buffer.resize(std::max<size_t>((n + 15) / 16, 1));
  memset(buffer.data(), 0xff, buffer.size() * sizeof(uint4));
  return buffer.data();
}

void Launcher::zero(void *p, size_t n) const { memset(p, 0, n); }

void Launcher::copy(void *to, const void *from, size_t n) const {
  const auto *t = static_cast<const char *>(to),
             *f = static_cast<const char *>(from);
  if (n > 0 && t < f + n && f < t + n)
    abortWith("copy: the ranges overlap");
  memcpy(to, from, n);
}

bool Launcher::sortPairs(const uint32_t *keysIn, uint32_t *keysOut,
                         const uint32_t *valuesIn, uint32_t *valuesOut,
                         int64_t n, int bits) const {
  const uint32_t mask = bits >= 32 ? ~0u : (1u << bits) - 1;
  std::vector<int64_t> order(size_t(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = int64_t(i);
  // Stable: equal keys in their input order.
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const uint32_t ka = keysIn[a] & mask, kb = keysIn[b] & mask;
    return ka < kb || (ka == kb && a < b);
  });
  for (size_t i = 0; i < order.size(); ++i) {
    keysOut[i] = keysIn[order[i]];
    valuesOut[i] = valuesIn[order[i]];
  }
  return true;
}

namespace {

/// An operand [rows, cols] of a GEMM (op 'T': stored transposed) as
/// lap::cpu::gemm reads it at `precision`.
lap::cpu::Matrix operand(lap_matmul precision, char op, int64_t rows,
                         int64_t cols, const float *a, int64_t ld, int slot) {
  return op == 'N' ? lap::cpu::operand(precision, a, rows, cols, ld, slot)
                   : lap::cpu::operand(precision, a, cols, rows, ld, slot);
}
lap::cpu::Matrix operand(char op, int64_t rows, int64_t cols, const lap_bf16 *a,
                         int64_t ld, int slot) {
  return op == 'N' ? lap::cpu::operand(a, rows, cols, ld, slot)
                   : lap::cpu::operand(a, cols, rows, ld, slot);
}

} // namespace

void Launcher::gemm(lap_matmul precision, char transa, char transb, int64_t M,
                    int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float beta, float *C,
                    int64_t ldc) const {
  lap::cpu::gemm(transa, transb, M, N, K,
                 operand(precision, transa, M, K, A, lda, 0),
                 operand(precision, transb, K, N, B, ldb, 1), beta, C, ldc);
}

void Launcher::gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                    const lap_bf16 *A, int64_t lda, const lap_bf16 *B,
                    int64_t ldb, float beta, float *C, int64_t ldc) const {
  lap::cpu::gemm(transa, transb, M, N, K, operand(transa, M, K, A, lda, 0),
                 operand(transb, K, N, B, ldb, 1), beta, C, ldc);
}

void Launcher::gemmToBf16(char transa, char transb, int64_t M, int64_t N,
                          int64_t K, const lap_bf16 *A, int64_t lda,
                          const lap_bf16 *B, int64_t ldb, lap_bf16 *C) const {
  lap::cpu::gemmToBf16(transa, transb, M, N, K,
                       operand(transa, M, K, A, lda, 0),
                       operand(transb, K, N, B, ldb, 1), C);
}

namespace {
bool hopperDevice = false;
} // namespace

void setHopper(bool on) { hopperDevice = on; }
bool Launcher::hopper() const { return hopperDevice; }

void Launcher::fail(const std::string &why) const {
  if (failure.empty())
    failure = why;
}

namespace {

const std::function<void()> *currentBody = nullptr;

/// A fiber's life: the body for each block of the launch in turn.
void fiberMain() {
  for (;;) {
    (*currentBody)();
    if (!current->open.empty() || !current->groups.empty())
      abortWith("a thread ended with asynchronous copies not waited for");
    if (!current->openProducts.empty() || !current->productGroups.empty())
      abortWith("a thread ended with wgmma products not waited for");
    current->done = true;
    ++events;
    yield();
  }
}

} // namespace

void run(dim3 grid, dim3 block, size_t sharedBytes,
         const std::function<void()> &body) {
  constexpr size_t kStackBytes = size_t(1) << 18;
  const unsigned threads = block.x * block.y * block.z;
  currentBody = &body;
  std::vector<Fiber> launch(threads);
  fibers = &launch;
  for (Fiber &f : launch) {
    f.stack.reset(new char[kStackBytes]);
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiberMain, 0);
  }
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        Block state(int(threads), sharedBytes);
        currentBlock = &state;
        blockIdx = dim3(x, y, z);
        blockDim = block;
        for (unsigned t = 0; t < threads; ++t) {
          launch[t].done = false;
          launch[t].index =
              dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
        }
        // The first fiber starts (or resumes from its last block's end);
        // the block is done when the last one returns here.
        current = &launch[0];
        threadIdx = current->index;
        eventsAtTurn = events - 1;
        swapcontext(&scheduler, &current->context);
      }
  current = nullptr;
  fibers = nullptr;
}

} // namespace lap::test::emulator
