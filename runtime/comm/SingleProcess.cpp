//===- SingleProcess.cpp - The communicator of a one-process run -*- C++ -*-===//

#include "runtime/comm/Communicator.h"

#include <cstdlib>
#include <cstring>

using namespace lap::comm;

namespace {

class SingleProcess final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localSize() const override { return 1; }
  int localRank() const override { return 0; }
  std::string name() const override { return "one process"; }
  bool launched() const override { return false; }

  void allReduce(void *, int64_t, DataType, ReduceOp) override {}
  void reduceScatter(const void *send, void *recv,
                     const std::vector<int64_t> &counts,
                     DataType type) override {
    if (send != recv)
      std::memmove(recv, send, size_t(counts.at(0) * elementBytes(type)));
  }
  void allGather(void *, const std::vector<int64_t> &, DataType) override {}
  void broadcast(void *, int64_t, int) override {}
  void send(const void *, int64_t, int to) override { noPeer(to); }
  void receive(void *, int64_t, int from) override { noPeer(from); }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }

private:
  [[noreturn]] static void noPeer(int rank) {
    throw CommError("a one-process run has no rank " + std::to_string(rank));
  }
};

} // namespace

std::unique_ptr<Communicator> lap::comm::singleProcess() {
  return std::make_unique<SingleProcess>();
}
