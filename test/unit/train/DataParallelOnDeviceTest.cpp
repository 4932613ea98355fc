//===- DataParallelOnDeviceTest.cpp - Ranks whose arrays are a device's ---===//
//
// Ranks on GPUs keep their gradients, parameters and optimizer state in
// device memory, which only the device's communicator (NCCL) may move;
// scalars, signals and state on its way to a checkpoint go through the
// host's (MPI). Here a CPU library trains on a device that is host memory
// but says it is not (so the trainer copies through upload and download as
// for a GPU), with two communicators of the same ranks that fail the test
// when handed memory of the wrong side. The run, stopped at step 3 and
// resumed (the optimizer state travels both ways), must end bit for bit
// where the same run with one communicator and the host device does: the
// arithmetic is the same. Plain data parallel and ZeRO-1, AdamW and Muon.
// The device's communicator is the one the trainer asks the device for.
//
// Runs as one process (ctest) and as two ranks of an MPI job
// (test/runtime/data-parallel-on-device.test).
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"
#include "test/unit/comm/RankedTests.h"
#include "test/unit/model/ModelTestSupport.h"
#include "test/unit/train/TrainerRuns.h"

#include <cstring>
#include <map>

using namespace lap;
using namespace lap::test;
using namespace lap::train;

namespace {

comm::Communicator *world = nullptr;

/// Host memory the trainer must treat as a device's (onHost() is false);
/// it knows its arrays, for the communicators to check what they move.
class ApartDevice final : public device::Device {
public:
  bool onHost() const override { return false; }
  void *allocateBytes(size_t bytes) override {
    void *data = host.allocateBytes(bytes);
    arrays[static_cast<const char *>(data)] = bytes;
    return data;
  }
  void release(void *data) override {
    arrays.erase(static_cast<const char *>(data));
    host.release(data);
  }
  void uploadBytes(void *to, const void *from, size_t bytes) override {
    host.uploadBytes(to, from, bytes);
  }
  void downloadBytes(void *to, const void *from, size_t bytes) override {
    host.downloadBytes(to, from, bytes);
  }
  void copyBytes(void *to, const void *from, size_t bytes) override {
    host.copyBytes(to, from, bytes);
  }
  void *stream() const override { return nullptr; }
  /// The world's collectives, checked to move only this device's arrays
  /// (defined below CheckedComm).
  std::unique_ptr<comm::Communicator>
  communicator(comm::Communicator &ranks) override;
  void accumulate(float *acc, const float *g, float scale, int64_t n,
                  bool first) override {
    host.accumulate(acc, g, scale, n, first);
  }
  void squaredNorms(const float *x, const std::vector<device::Span> &spans,
                    double *out) override {
    host.squaredNorms(x, spans, out);
  }
  void scale(float *x, const std::vector<device::Span> &spans,
             float coef) override {
    host.scale(x, spans, coef);
  }
  void adamw(float *params, const float *grads, float *m, float *v,
             const std::vector<device::Span> &spans,
             const device::AdamWScalars &s) override {
    host.adamw(params, grads, m, v, spans, s);
  }
  void muonMomentum(float *buf, const float *g, float *u, int64_t n,
                    float momentum, float weight, bool nesterov) override {
    host.muonMomentum(buf, g, u, n, momentum, weight, nesterov);
  }
  void orthogonalize(float *x, int64_t rows, int64_t cols, int64_t steps,
                     lap_matmul precision) override {
    host.orthogonalize(x, rows, cols, steps, precision);
  }
  void applyUpdate(float *params, const float *u, int64_t n, float decay,
                   float scale) override {
    host.applyUpdate(params, u, n, decay, scale);
  }

  /// Whether `bytes` at `data` lie in one of the arrays.
  bool holds(const void *data, int64_t bytes) const {
    auto at = static_cast<const char *>(data);
    auto it = arrays.upper_bound(at);
    if (it == arrays.begin())
      return false;
    --it;
    return at >= it->first && at + bytes <= it->first + it->second;
  }

  int64_t communicated = 0; ///< collectives of its communicator that moved data

private:
  device::Device &host = device::host();
  std::map<const char *, size_t> arrays;
};

/// `inner`'s collectives, restricted to the device's arrays (`onDevice`)
/// or to host memory: anything else fails the test.
class CheckedComm final : public comm::Communicator {
public:
  /// Counts the collectives that moved data in `calls`.
  CheckedComm(comm::Communicator &inner, const ApartDevice &device,
              bool onDevice, int64_t &calls)
      : inner(inner), device(device), onDevice(onDevice), calls(calls) {}

  int rank() const override { return inner.rank(); }
  int size() const override { return inner.size(); }
  int localSize() const override { return inner.localSize(); }
  int localRank() const override { return inner.localRank(); }
  std::string name() const override { return inner.name(); }
  bool launched() const override { return inner.launched(); }

  void allReduce(void *data, int64_t count, comm::DataType type,
                 comm::ReduceOp op) override {
    check(data, count * comm::elementBytes(type), "all-reduce");
    inner.allReduce(data, count, type, op);
  }
  void reduceScatter(const void *send, void *recv,
                     const std::vector<int64_t> &counts,
                     comm::DataType type) override {
    int64_t bytes = comm::elementBytes(type), total = 0;
    for (int64_t c : counts)
      total += c;
    check(send, total * bytes, "reduce-scatter");
    check(recv, counts.at(size_t(rank())) * bytes, "reduce-scatter");
    inner.reduceScatter(send, recv, counts, type);
  }
  void allGather(void *data, const std::vector<int64_t> &counts,
                 comm::DataType type) override {
    int64_t total = 0;
    for (int64_t c : counts)
      total += c;
    check(data, total * comm::elementBytes(type), "all-gather");
    inner.allGather(data, counts, type);
  }
  void broadcast(void *data, int64_t bytes, int root) override {
    check(data, bytes, "broadcast");
    inner.broadcast(data, bytes, root);
  }
  void send(const void *data, int64_t bytes, int to) override {
    check(data, bytes, "send");
    inner.send(data, bytes, to);
  }
  void receive(void *data, int64_t bytes, int from) override {
    check(data, bytes, "receive");
    inner.receive(data, bytes, from);
  }
  void barrier() override { inner.barrier(); }
  [[noreturn]] void abort(int code) override { inner.abort(code); }

private:
  void check(const void *data, int64_t bytes, const char *what) {
    if (bytes <= 0)
      return;
    ++calls;
    if (device.holds(data, bytes) != onDevice)
      ADD_FAILURE() << "the " << (onDevice ? "device's" : "host's")
                    << " communicator was given a " << what << " of " << bytes
                    << " bytes in " << (onDevice ? "host" : "device")
                    << " memory";
  }

  comm::Communicator &inner;
  const ApartDevice &device;
  bool onDevice;
  int64_t &calls;
};

// The trainer hands it the host's (checked) communicator; the device's
// goes over the same ranks unchecked by it.
std::unique_ptr<comm::Communicator>
ApartDevice::communicator(comm::Communicator &) {
  return std::make_unique<CheckedComm>(*world, *this, true, communicated);
}

/// A directory every rank sees: rank 0's temporary one.
class SharedDir {
public:
  SharedDir() {
    char path[4096] = {};
    if (world->rank() == 0) {
      mine = std::make_unique<TempDir>();
      std::strncpy(path, mine->path().c_str(), sizeof path - 1);
    }
    world->broadcast(path, sizeof path, 0);
    path_ = path;
  }
  ~SharedDir() { world->barrier(); } // before rank 0 removes it
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::unique_ptr<TempDir> mine;
  std::string path_;
};

class DataParallelOnDevice
    : public ::testing::TestWithParam<std::tuple<bool, OptimizerKind>> {};

TEST_P(DataParallelOnDevice, MovesOnlyTheDevicesArraysOverItsCommunicator) {
  auto [zero, kind] = GetParam();
  const mixed::Case &c = mixed::kCases[1]; // nanochat: GQA, Muon's matrices
  const std::string &library = compiled(std::string(c.name) + "_cpu", c.yaml,
                                        mixed::kMaxBatch, mixed::kMaxSeq);
  SharedDir dir;
  std::string want = dir.file("host"), got = dir.file("apart");

  trainOn(library, device::host(), c.image, want, 0, kind, {world, zero});
  ApartDevice apart;
  int64_t hostCalls = 0;
  CheckedComm hostComm(*world, apart, false, hostCalls);
  RunRanks ranks{&hostComm, zero};
  trainOn(library, apart, c.image, got, 3, kind, ranks);
  trainOn(library, apart, c.image, got, 0, kind, ranks);
  // One rank without ZeRO-1 has no arrays to move: no communicator opens.
  if (world->size() > 1 || zero)
    EXPECT_GT(apart.communicated, 0);
  else
    EXPECT_EQ(apart.communicated, 0);
  EXPECT_GT(hostCalls, 0);

  EXPECT_EQ(loggedLosses(got), loggedLosses(want));
  std::vector<float> wantParams = checkpointParameters(library, want),
                     gotParams = checkpointParameters(library, got);
  ASSERT_EQ(gotParams.size(), wantParams.size());
  EXPECT_EQ(
      std::memcmp(gotParams.data(), wantParams.data(), wantParams.size() * 4),
      0);
}

INSTANTIATE_TEST_SUITE_P(
    PlainAndZeroOne, DataParallelOnDevice,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(OptimizerKind::AdamW,
                                         OptimizerKind::Muon)),
    [](const auto &info) {
      return std::string(std::get<0>(info.param) ? "zero1" : "plain") +
             (std::get<1>(info.param) == OptimizerKind::Muon ? "_muon"
                                                             : "_adamw");
    });

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<comm::Communicator> comm =
      comm::worldCommunicator(&argc, &argv);
  world = comm.get();
  ::testing::InitGoogleTest(&argc, argv);
  return lap::test::runTestsOnRanks(*world);
}
