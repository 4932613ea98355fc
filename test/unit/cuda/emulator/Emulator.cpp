//===- Emulator.cpp - CUDA blocks as fibers on the CPU --------------------===//

#include "test/unit/cuda/emulator/Emulator.h"

#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/TensorCores.h"
#include "runtime/kernels/cuda/WarpGroupMma.h"
#include "runtime/kernels/cuda/WarpSpecialization.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
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
ucontext_t scheduler;       // run()'s
std::vector<Fiber> *fibers; // the launch's
Fiber *current = nullptr;
uint64_t events = 0;       // arrivals and ends: the sign of progress
uint64_t eventsAtTurn = 0; // events when the turn last wrapped around

/// Switches to the next fiber that has not ended (which may be this one),
/// or to run() when none is left. A whole turn of the fibers without an
/// arrival or an end is a deadlock.
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
  Block(int threads, size_t sharedBytes)
      : threads(threads), barrier(threads),
        warps(new Warp[(threads + 31) / 32]), shared((sharedBytes + 15) / 16) {
    memset(shared.data(), 0xff, shared.size() * sizeof(uint4));
  }
  const int threads;
  Barrier barrier;
  std::unique_ptr<Warp[]> warps;
  std::unique_ptr<WarpGroup[]> warpGroups; // made by the first wgmma
  std::vector<uint4> shared;
  std::map<const uint64_t *, StageBarrier> stageBarriers;
  std::map<int, NamedBarrier> namedBarriers;
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

//===----------------------------------------------------------------------===//
// Warpgroup MMAs (WarpGroupMma.h)
//===----------------------------------------------------------------------===//

namespace {

using lap::cuda::hopper::SharedMatrix;

WarpGroup &warpGroup() {
  Block &block = *currentBlock;
  if (block.threads % 128 != 0)
    abortWith("wgmma: the block is not whole warpgroups");
  if (!block.warpGroups)
    block.warpGroups.reset(new WarpGroup[block.threads / 128]);
  return block.warpGroups[linearThread() / 128];
}

/// The bf16 at byte `offset` from `start` after the 128-byte swizzle of
/// addresses (WarpGroupMma.h): the 16-byte chunk (bits 4..6) XOR the row
/// of 128 bytes within its 1024 (bits 7..9).
float swizzledElement(const char *start, uint32_t offset) {
  auto at = reinterpret_cast<uintptr_t>(start) + offset;
  at ^= (at >> 7 & 7) << 4;
  uint16_t bits;
  memcpy(&bits, reinterpret_cast<const void *>(at), sizeof bits);
  return lap::cuda::load(lap_bf16(bits));
}

/// Element (row, k) of a K-major operand, k < 16.
float kMajor(const SharedMatrix &m, int row, int k) {
  return swizzledElement(
      m.start, uint32_t(row % 8 * 128 + row / 8 * m.strideBytes + k * 2));
}
/// Element (k, col) of an MN-major B, k < 16.
float mnMajor(const SharedMatrix &m, int k, int col) {
  return swizzledElement(m.start,
                         uint32_t(col % 64 * 2 + col / 64 * m.leadingBytes +
                                  k % 8 * 128 + k / 8 * m.strideBytes));
}

/// The value the thread's accumulator d will hold once its issued products
/// land: the last one issued on it, else what it holds.
const float *landedValue(const Fiber &f, const float *d) {
  for (auto p = f.openProducts.rbegin(); p != f.openProducts.rend(); ++p)
    if (p->d == d)
      return p->values.data();
  for (auto g = f.productGroups.rbegin(); g != f.productGroups.rend(); ++g)
    for (auto p = g->rbegin(); p != g->rend(); ++p)
      if (p->d == d)
        return p->values.data();
  return d;
}

/// One wgmma of shape m64nNk16 for the calling thread: d (+)= A B, A from
/// registers (a, when aShared is null) or shared memory (K-major), B from
/// shared memory (K-major, or MN-major when bTransposed).
void warpGroupMma(float *d, int n, const uint32_t *a,
                  const SharedMatrix *aShared, const SharedMatrix &b,
                  bool bTransposed, bool accumulate) {
  WarpGroup &group = warpGroup();
  Fiber &self = *current;
  const int t = int(linearThread() % 128), count = n / 2;
  const float *input = landedValue(self, d);
  for (int i = 0; i < count; ++i)
    group.d[t][i] = accumulate ? input[i] : 0.0f;
  for (int i = 0; a && i < 4; ++i)
    group.a[t][i] = a[i];
  if (aShared)
    group.sharedA[t] = *aShared;
  group.sharedB[t] = b;
  // Descriptors have a 16-byte start, and the kernels' base offset 0: an
  // operand starts in the first 128-byte row of a 1024-byte atom.
  auto misplaced = [](const SharedMatrix &m) {
    return (reinterpret_cast<uintptr_t>(m.start) & 0x38f) != 0;
  };
  if (misplaced(b) || (aShared && misplaced(*aShared)))
    abortWith("wgmma: an operand does not start within the first row of its "
              "1024-byte atom on 16 bytes");
  group.barrier.wait();
  auto same = [](const SharedMatrix &x, const SharedMatrix &y) {
    return x.start == y.start && x.strideBytes == y.strideBytes &&
           x.leadingBytes == y.leadingBytes;
  };
  if (!same(group.sharedB[t], group.sharedB[0]) ||
      (aShared && !same(group.sharedA[t], group.sharedA[0])))
    abortWith("wgmma: the threads of a warpgroup give different descriptors");
  // Element (row, k) of A; from registers as mma.sync's A fragment of
  // warp row / 16 (TensorCores.h's table).
  auto elementOfA = [&](int row, int k) {
    if (aShared)
      return kMajor(*aShared, row, k);
    const int r = row % 16;
    return element(
        group.a[row / 16 * 32 + 4 * (r % 8) + k % 8 / 2][r / 8 + 2 * (k / 8)],
        k % 2);
  };
  const int w = t / 32, g = t % 32 / 4, c = t % 4;
  Fiber::Product product{d, std::vector<float>(size_t(count)), a, {}, {}, 0};
  for (int i = 0; a && i < 4; ++i)
    product.aValues[i] = a[i];
  // Every element of the shared-memory operands, hashed (FNV-1a).
  product.hashOperands = [aShared = aShared ? *aShared : SharedMatrix{},
                          fromShared = aShared != nullptr, b, bTransposed, n] {
    uint64_t h = 14695981039346656037ull;
    auto add = [&](float x) {
      uint32_t bits;
      memcpy(&bits, &x, sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    };
    for (int k = 0; k < 16; ++k) {
      for (int row = 0; fromShared && row < 64; ++row)
        add(kMajor(aShared, row, k));
      for (int col = 0; col < n; ++col)
        add(bTransposed ? mnMajor(b, k, col) : kMajor(b, col, k));
    }
    return h;
  };
  product.operandHash = product.hashOperands();
  for (int i = 0; i < count; ++i) {
    const int j = i / 4, e = i % 4;
    const int row = 16 * w + g + 8 * (e / 2), col = 8 * j + 2 * c + e % 2;
    float sum = group.d[t][i];
    for (int k = 0; k < 16; ++k)
      sum += elementOfA(row, k) *
             (bTransposed ? mnMajor(b, k, col) : kMajor(b, col, k));
    product.values[size_t(i)] = sum;
  }
  group.barrier.wait();
  self.openProducts.push_back(std::move(product));
  // Until the group is waited for, the accumulator is the hardware's.
  for (int i = 0; i < count; ++i)
    d[i] = NAN;
}

} // namespace

namespace lap::cuda::hopper {

void fence() {}

void commit() {
  current->productGroups.push_back(std::move(current->openProducts));
  current->openProducts.clear();
}

void wait(int pending) {
  if (!current->openProducts.empty())
    abortWith("wgmma: a wait with products not committed");
  for (auto &groups = current->productGroups; int(groups.size()) > pending;
       groups.pop_front())
    for (const Fiber::Product &p : groups.front()) {
      if ((p.a && memcmp(p.a, p.aValues, sizeof p.aValues) != 0) ||
          p.hashOperands() != p.operandHash)
        abortWith("wgmma: an operand (A registers or shared memory) changed "
                  "before the wait for its group");
      memcpy(p.d, p.values.data(), p.values.size() * sizeof(float));
    }
}

namespace {

StageBarrier &stageBarrier(uint64_t *barrier) {
  auto found = currentBlock->stageBarriers.find(barrier);
  if (found == currentBlock->stageBarriers.end())
    abortWith("mbarrier: used before it was initialised");
  return found->second;
}

/// This thread's cp.async copies, landed now (completion may come at any
/// time before it is waited for).
void landCopies() {
  for (const Fiber::Copy &copy : current->open)
    memcpy(copy.to, &copy.bytes, sizeof copy.bytes);
  current->open.clear();
  for (; !current->groups.empty(); current->groups.pop_front())
    for (const Fiber::Copy &copy : current->groups.front())
      memcpy(copy.to, &copy.bytes, sizeof copy.bytes);
}

/// One arrival at named barrier `id` of `threads` threads; true when it
/// opened the barrier.
bool arriveAt(int id, int threads, uint64_t &generation) {
  if (id <= 0 || id > 15 || threads % 32 != 0)
    abortWith("bar: an id outside 1..15 or a count not of whole warps");
  NamedBarrier &b = currentBlock->namedBarriers[id];
  if (b.arrived == 0)
    b.count = threads;
  else if (b.count != threads)
    abortWith("bar: arrivals at one barrier give different counts");
  ++events;
  generation = b.generation;
  if (++b.arrived < b.count)
    return false;
  b.arrived = 0;
  ++b.generation;
  return true;
}

} // namespace

void initBarrier(uint64_t *barrier, int count) {
  currentBlock->stageBarriers[barrier] = {count, count, 0};
  memset(barrier, 0, sizeof *barrier);
}

void arrive(uint64_t *barrier) {
  StageBarrier &b = stageBarrier(barrier);
  ++events;
  if (--b.pending > 0)
    return;
  b.pending = b.count;
  b.phase ^= 1;
}

void arriveWhenCopied(uint64_t *barrier) {
  landCopies();
  arrive(barrier);
}

bool tryWait(uint64_t *barrier, int parity) {
  if (stageBarrier(barrier).phase != parity)
    return true;
  ::yield();
  return false;
}

void syncNamed(int id, int threads) {
  uint64_t generation;
  if (arriveAt(id, threads, generation))
    return;
  while (currentBlock->namedBarriers[id].generation == generation)
    ::yield();
}

void arriveNamed(int id, int threads) {
  uint64_t generation;
  arriveAt(id, threads, generation);
}

void mmaShared(float (&d)[8][4], SharedMatrix a, SharedMatrix b,
               bool accumulate) {
  warpGroupMma(&d[0][0], 64, nullptr, &a, b, false, accumulate);
}
void mmaShared(float (&d)[16][4], SharedMatrix a, SharedMatrix b,
               bool accumulate) {
  warpGroupMma(&d[0][0], 128, nullptr, &a, b, false, accumulate);
}
void mmaRegisters(float (&d)[8][4], const uint32_t (&a)[4], SharedMatrix b) {
  warpGroupMma(&d[0][0], 64, a, nullptr, b, true, true);
}
void mmaRegisters(float (&d)[16][4], const uint32_t (&a)[4], SharedMatrix b) {
  warpGroupMma(&d[0][0], 128, a, nullptr, b, true, true);
}

} // namespace lap::cuda::hopper

namespace {
std::string failure; // the first since the last take
} // namespace

std::string lap::cuda::takeFailure() { return std::exchange(failure, {}); }

namespace lap::test::emulator {

void *Device::bytes(int slot, size_t n) const {
  std::vector<uint4> &buffer = scratch[slot];
  buffer.resize(std::max<size_t>((n + 15) / 16, 1));
  memset(buffer.data(), 0xff, buffer.size() * sizeof(uint4));
  return buffer.data();
}

void Device::zero(void *p, size_t n) const { memset(p, 0, n); }

void Device::copy(void *to, const void *from, size_t n) const {
  const auto *t = static_cast<const char *>(to),
             *f = static_cast<const char *>(from);
  if (n > 0 && t < f + n && f < t + n)
    abortWith("copy: the ranges overlap");
  memcpy(to, from, n);
}

bool Device::sortPairs(const uint32_t *keysIn, uint32_t *keysOut,
                       const uint32_t *valuesIn, uint32_t *valuesOut, int64_t n,
                       int bits) const {
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

void Device::gemm(lap_matmul precision, char transa, char transb, int64_t M,
                  int64_t N, int64_t K, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float beta, float *C,
                  int64_t ldc) const {
  lap::cpu::gemm(transa, transb, M, N, K,
                 operand(precision, transa, M, K, A, lda, 0),
                 operand(precision, transb, K, N, B, ldb, 1), beta, C, ldc);
}

void Device::gemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                  const lap_bf16 *A, int64_t lda, const lap_bf16 *B,
                  int64_t ldb, float beta, float *C, int64_t ldc) const {
  lap::cpu::gemm(transa, transb, M, N, K, operand(transa, M, K, A, lda, 0),
                 operand(transb, K, N, B, ldb, 1), beta, C, ldc);
}

void Device::gemmToBf16(char transa, char transb, int64_t M, int64_t N,
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
bool Device::hopper() const { return hopperDevice; }

void Device::fail(const std::string &why) const {
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
