//===- WarpGroups.cpp - wgmma and warp-specialised blocks, emulated -------===//
//
// WarpGroupMma.h's warpgroup MMAs and WarpSpecialization.h's stage and
// named barriers on the emulator's fibers (Fibers.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Elements.h"
#include "runtime/kernels/cuda/WarpGroupMma.h"
#include "runtime/kernels/cuda/WarpSpecialization.h"
#include "test/unit/cuda/emulator/Fibers.h"

#include <cmath>
#include <cstring>

using namespace lap::test::emulator::internal;

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
  yield();
  return false;
}

void syncNamed(int id, int threads) {
  uint64_t generation;
  if (arriveAt(id, threads, generation))
    return;
  while (currentBlock->namedBarriers[id].generation == generation)
    yield();
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
