//===- RunSignalsTest.cpp - Signals during GEMMs, and blocked threads ----===//

#include "runtime/train/RunSignals.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <dnnl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include <pthread.h>
#include <unistd.h>

using namespace lap::train;

namespace {

// oneDNN 2.x's JIT GEMMs run with the stack pointer in a heap workspace: a
// signal frame pushed there corrupts the heap, and glibc aborts at a later
// malloc or free. Thousands of signals during GEMMs on this thread (the
// pool has one) must leave the heap intact.
TEST(RunSignals, SignalsDuringGemmsLeaveTheHeapIntact) {
  omp_set_num_threads(1);
  RunSignals signals;
  std::atomic<bool> done{false};
  std::thread sender;
  withRunSignalsBlocked([&] {
    sender = std::thread([&] {
      while (!done) {
        kill(getpid(), SIGUSR1);
        usleep(20);
      }
    });
  });
  const int64_t n = 384;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f),
      c(size_t(n * n));
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(dnnl_sgemm('N', 'T', n, n, n, 1.0f, a.data(), n, b.data(), n,
                         0.0f, c.data(), n),
              dnnl_success);
    std::vector<char> probe(size_t(1 + i * 97 % 65536)); // malloc and free
  }
  done = true;
  sender.join();
  EXPECT_TRUE(signals.checkpointAsked());
  EXPECT_FLOAT_EQ(c[0], 0.5f * 0.25f * float(n));
}

TEST(RunSignals, ThreadsStartedBlockedNeverTakeThem) {
  sigset_t seen;
  withRunSignalsBlocked([&] {
    std::thread([&] { pthread_sigmask(SIG_BLOCK, nullptr, &seen); }).join();
  });
  for (int signal : RunSignals::kSignals)
    EXPECT_TRUE(sigismember(&seen, signal)) << signal;
  sigset_t mine;
  pthread_sigmask(SIG_BLOCK, nullptr, &mine);
  EXPECT_FALSE(sigismember(&mine, SIGINT)); // the caller's mask is back
}

TEST(RunSignals, FlagsAndPreviousHandlers) {
  {
    RunSignals signals;
    EXPECT_EQ(signals.stop(), 0);
    raise(SIGUSR2);
    EXPECT_EQ(signals.stop(), SIGUSR2);
    raise(SIGUSR1);
    EXPECT_TRUE(signals.checkpointAsked());
    signals.checkpointWritten();
    EXPECT_FALSE(signals.checkpointAsked());
  }
  struct sigaction now = {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

} // namespace
