//===- MpiCommunicator.cpp - Collectives over MPI ---------------*- C++ -*-===//
//
// Every collective is the non-blocking MPI call, tested until done: a spin
// first (a step's collectives are short), then short sleeps so that a rank
// waiting long for another leaves the cores to it, and the timeout. MPI
// counts are ints: buffers go in buckets of at most kBucket elements, all
// in flight at once, which also lets MPI pipeline a large all-reduce.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include <sched.h>

using namespace lap::comm;

namespace {

constexpr int64_t kBucket = int64_t(1) << 22;

MPI_Datatype mpiType(DataType type) {
  switch (type) {
  case DataType::F32:
    return MPI_FLOAT;
  case DataType::F64:
    return MPI_DOUBLE;
  case DataType::I64:
    return MPI_INT64_T;
  }
  return MPI_BYTE;
}

/// Whether a launcher started this process as a rank of an MPI job.
bool launchedAsRank() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(int *argc, char ***argv) {
    int provided = 0;
    // Only the main thread calls MPI (data workers never do).
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm local;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_,
                              MPI_INFO_NULL, &local),
          "MPI_Comm_split_type");
    check(MPI_Comm_rank(local, &localRank_), "MPI_Comm_rank");
    check(MPI_Comm_size(local, &localSize_), "MPI_Comm_size");
    MPI_Comm_free(&local);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    library.assign(version, size_t(length));
    library = library.substr(0, library.find_first_of(",\n"));
  }
  ~MpiCommunicator() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localSize() const override { return localSize_; }
  int localRank() const override { return localRank_; }
  std::string name() const override { return library; }
  bool launched() const override { return true; }

  void allReduce(void *data, int64_t count, DataType type,
                 ReduceOp op) override {
    std::vector<MPI_Request> requests;
    char *bytes = static_cast<char *>(data);
    for (int64_t begin = 0; begin < count; begin += kBucket) {
      int n = int(std::min(kBucket, count - begin));
      requests.emplace_back();
      check(MPI_Iallreduce(MPI_IN_PLACE, bytes + begin * elementBytes(type), n,
                           mpiType(type),
                           op == ReduceOp::Sum ? MPI_SUM : MPI_MAX,
                           MPI_COMM_WORLD, &requests.back()),
            "MPI_Iallreduce");
    }
    wait(requests, "an all-reduce");
  }

  void reduceScatter(const void *send, void *recv,
                     const std::vector<int64_t> &counts,
                     DataType type) override {
    std::vector<int> ints = intCounts(counts, "a reduce-scatter");
    std::vector<MPI_Request> requests(1);
    check(MPI_Ireduce_scatter(send, recv, ints.data(), mpiType(type), MPI_SUM,
                              MPI_COMM_WORLD, &requests[0]),
          "MPI_Ireduce_scatter");
    wait(requests, "a reduce-scatter");
  }

  void allGather(void *data, const std::vector<int64_t> &counts,
                 DataType type) override {
    std::vector<int> ints = intCounts(counts, "an all-gather");
    std::vector<int> displacements(ints.size(), 0);
    for (size_t r = 1; r < ints.size(); ++r)
      displacements[r] = displacements[r - 1] + ints[r - 1];
    std::vector<MPI_Request> requests(1);
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, mpiType(type), data, ints.data(),
                          displacements.data(), mpiType(type), MPI_COMM_WORLD,
                          &requests[0]),
          "MPI_Iallgatherv");
    wait(requests, "an all-gather");
  }

  void broadcast(void *data, int64_t bytes, int root) override {
    std::vector<MPI_Request> requests;
    forEachBucket(data, bytes, [&](char *p, int n) {
      requests.emplace_back();
      check(MPI_Ibcast(p, n, MPI_BYTE, root, MPI_COMM_WORLD, &requests.back()),
            "MPI_Ibcast");
    });
    wait(requests, fmt::format("a broadcast from rank {}", root));
  }

  void send(const void *data, int64_t bytes, int to) override {
    std::vector<MPI_Request> requests;
    forEachBucket(const_cast<void *>(data), bytes, [&](char *p, int n) {
      requests.emplace_back();
      check(MPI_Isend(p, n, MPI_BYTE, to, 0, MPI_COMM_WORLD, &requests.back()),
            "MPI_Isend");
    });
    wait(requests, fmt::format("a send to rank {}", to));
  }

  void receive(void *data, int64_t bytes, int from) override {
    std::vector<MPI_Request> requests;
    forEachBucket(data, bytes, [&](char *p, int n) {
      requests.emplace_back();
      check(
          MPI_Irecv(p, n, MPI_BYTE, from, 0, MPI_COMM_WORLD, &requests.back()),
          "MPI_Irecv");
    });
    wait(requests, fmt::format("a receive from rank {}", from));
  }

  void barrier() override {
    std::vector<MPI_Request> requests(1);
    check(MPI_Ibarrier(MPI_COMM_WORLD, &requests[0]), "MPI_Ibarrier");
    wait(requests, "a barrier");
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; if it did, still end
  }

private:
  void check(int status, const std::string &call) const {
    if (status == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw CommError(
        fmt::format("{} failed: {}", call, std::string(text, size_t(length))));
  }

  std::vector<int> intCounts(const std::vector<int64_t> &counts,
                             const char *what) const {
    std::vector<int> ints;
    int64_t total = 0;
    for (int64_t c : counts) {
      total += c;
      ints.push_back(int(c));
    }
    if (int64_t(counts.size()) != size_ || total > INT_MAX)
      throw CommError(fmt::format(
          "{} of {} blocks, {} elements: MPI takes one block per rank and "
          "at most 2^31 elements",
          what, counts.size(), total));
    return ints;
  }

  template <typename F>
  static void forEachBucket(void *data, int64_t bytes, F &&f) {
    char *p = static_cast<char *>(data);
    for (int64_t begin = 0; begin < bytes; begin += kBucket * 4)
      f(p + begin, int(std::min(kBucket * 4, bytes - begin)));
  }

  void wait(std::vector<MPI_Request> &requests, const std::string &what) {
    using clock = std::chrono::steady_clock;
    auto start = clock::now();
    auto pause = std::chrono::microseconds(0);
    for (;;) {
      int done = 0;
      check(MPI_Testall(int(requests.size()), requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "waiting for " + what);
      if (done)
        return;
      double waited =
          std::chrono::duration<double>(clock::now() - start).count();
      if (timeoutSeconds > 0 && waited > timeoutSeconds)
        throw CommError(fmt::format(
            "{} waited {:.0f} s for the other ranks: one of them stopped or "
            "hangs (--comm-timeout sets the limit)",
            what, waited));
      // MPI progresses a collective only inside its calls: test again at
      // once (yielding the core to any rank that shares it) for 100 ms,
      // then sleep up to a millisecond a time (a rank waiting for rank 0's
      // evaluation leaves the cores alone).
      if (waited < 0.1) {
        sched_yield();
      } else {
        pause = std::min(std::chrono::microseconds(1000),
                         pause + std::chrono::microseconds(20));
        std::this_thread::sleep_for(pause);
      }
    }
  }

  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  std::string library;
};

} // namespace

std::unique_ptr<Communicator> lap::comm::worldCommunicator(int *argc,
                                                           char ***argv) {
  if (!launchedAsRank())
    return singleProcess();
  return std::make_unique<MpiCommunicator>(argc, argv);
}
