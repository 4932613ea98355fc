//===- CommunicatorTest.cpp - Collectives against their definitions -------===//
//
// Runs as one process (ctest: the single-process communicator) and as the
// ranks of an MPI job (test/runtime/communicator.test: mpirun -np 3, MPI's
// collectives with uneven and empty blocks). Every rank checks the values
// it receives against what each rank contributed. (A stopped rank and the
// timeout: test/runtime/data-parallel-faults.test.)
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"
#include "test/unit/comm/RankedTests.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

using namespace lap::comm;

namespace {

Communicator *world = nullptr;

/// Rank r's value at index i.
float valueOf(int r, int64_t i) { return float(r + 1) * 1000.0f + float(i); }

TEST(Communicator, AllReduceSumsAndMaxima) {
  int n = world->size(), me = world->rank();
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = valueOf(me, int64_t(i));
  world->allReduceSum(x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    float expected = 0;
    for (int r = 0; r < n; ++r)
      expected += valueOf(r, int64_t(i));
    ASSERT_EQ(x[i], expected) << i;
  }
  int64_t m[2] = {me, -me};
  world->allReduceMax(m, 2);
  EXPECT_EQ(m[0], n - 1);
  EXPECT_EQ(m[1], 0);
}

TEST(Communicator, ReduceScatterAndAllGatherUnevenBlocks) {
  int n = world->size(), me = world->rank();
  // Block r holds r + 2 elements; one empty block when there are ranks.
  std::vector<int64_t> counts(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    counts[size_t(r)] = r == 1 ? 0 : r + 2;
  int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t(0));
  int64_t begin =
      std::accumulate(counts.begin(), counts.begin() + me, int64_t(0));
  std::vector<double> send(static_cast<size_t>(total)),
      mine(static_cast<size_t>(counts[size_t(me)]));
  for (int64_t i = 0; i < total; ++i)
    send[size_t(i)] = valueOf(me, i);
  world->reduceScatter(send.data(), mine.data(), counts, DataType::F64);
  for (int64_t i = 0; i < counts[size_t(me)]; ++i) {
    double expected = 0;
    for (int r = 0; r < n; ++r)
      expected += valueOf(r, begin + i);
    EXPECT_EQ(mine[size_t(i)], expected);
  }
  std::vector<float> gathered(size_t(total), -1.0f);
  for (int64_t i = 0; i < counts[size_t(me)]; ++i)
    gathered[size_t(begin + i)] = valueOf(me, i);
  world->allGather(gathered.data(), counts, DataType::F32);
  for (int r = 0, at = 0; r < n; at += int(counts[size_t(r)]), ++r)
    for (int64_t i = 0; i < counts[size_t(r)]; ++i)
      EXPECT_EQ(gathered[size_t(at + i)], valueOf(r, i)) << r << " " << i;
}

TEST(Communicator, BroadcastAndPointToPoint) {
  int n = world->size(), me = world->rank();
  char text[32] = {};
  if (me == n - 1)
    std::strcpy(text, "from the last rank");
  world->broadcast(text, sizeof text, n - 1);
  EXPECT_STREQ(text, "from the last rank");
  if (n == 1)
    return;
  std::vector<float> values(100000); // several MPI messages' worth of bytes
  if (me == 1) {
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = float(i);
    world->send(values.data(), int64_t(values.size()) * 4, 0);
  } else if (me == 0) {
    world->receive(values.data(), int64_t(values.size()) * 4, 1);
    EXPECT_EQ(values[99999], 99999.0f);
  }
  world->barrier();
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<Communicator> comm = worldCommunicator(&argc, &argv);
  world = comm.get();
  ::testing::InitGoogleTest(&argc, argv);
  return lap::test::runTestsOnRanks(*world);
}
