//===- RankedTests.h - Google Test as the ranks of an MPI job ---*- C++ -*-===//

#ifndef LAP_TEST_UNIT_COMM_RANKEDTESTS_H
#define LAP_TEST_UNIT_COMM_RANKEDTESTS_H

#include "runtime/comm/Communicator.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace lap::test {

/// Runs the tests on every rank of `world`: rank 0 reports them, the other
/// ranks only their failures, each line naming the rank.
inline int runTestsOnRanks(comm::Communicator &world) {
  class Failures : public ::testing::EmptyTestEventListener {
  public:
    explicit Failures(int rank) : rank(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult &result) override {
      if (result.failed())
        std::fprintf(stderr, "rank %d: %s:%d: Failure\n%s\n", rank,
                     result.file_name() ? result.file_name() : "?",
                     result.line_number(), result.message());
    }

  private:
    int rank;
  };
  if (world.rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new Failures(world.rank()));
  }
  return RUN_ALL_TESTS();
}

} // namespace lap::test

#endif // LAP_TEST_UNIT_COMM_RANKEDTESTS_H
