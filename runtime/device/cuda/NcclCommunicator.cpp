//===- NcclCommunicator.cpp - Collectives between GPUs over NCCL -*- C++ -*-===//

#include "runtime/device/cuda/NcclCommunicator.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <thread>

using namespace lap::comm;

namespace {

ncclDataType_t ncclType(DataType type) {
  switch (type) {
  case DataType::F32:
    return ncclFloat32;
  case DataType::F64:
    return ncclFloat64;
  case DataType::I64:
    return ncclInt64;
  }
  return ncclChar;
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(Communicator &bootstrap, int device, void *stream)
      : bootstrap(bootstrap), stream(static_cast<cudaStream_t>(stream)) {
    setTimeout(bootstrap.timeout());
    cudaCheck(cudaSetDevice(device), "cudaSetDevice");
    ncclUniqueId id;
    if (bootstrap.rank() == 0)
      ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
    bootstrap.broadcastValue(id);
    ncclCheck(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()),
              "ncclCommInitRank");
    int version = 0;
    ncclGetVersion(&version);
    library = fmt::format("NCCL {}.{}.{}", version / 10000, version / 100 % 100,
                          version % 100);
  }
  ~NcclCommunicator() override {
    if (comm)
      ncclCommDestroy(comm);
  }

  int rank() const override { return bootstrap.rank(); }
  int size() const override { return bootstrap.size(); }
  int localSize() const override { return bootstrap.localSize(); }
  int localRank() const override { return bootstrap.localRank(); }
  std::string name() const override { return library; }
  bool launched() const override { return bootstrap.launched(); }

  void allReduce(void *data, int64_t count, DataType type,
                 ReduceOp op) override {
    ncclCheck(ncclAllReduce(data, data, size_t(count), ncclType(type),
                            op == ReduceOp::Sum ? ncclSum : ncclMax, comm,
                            stream),
              "ncclAllReduce");
    wait("an all-reduce");
  }

  void reduceScatter(const void *send, void *recv,
                     const std::vector<int64_t> &counts,
                     DataType type) override {
    checkBlocks(counts);
    const char *from = static_cast<const char *>(send);
    int64_t bytes = elementBytes(type), offset = 0;
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size(); offset += counts[r], ++r)
      ncclCheck(ncclReduce(from + offset * bytes, recv, size_t(counts[r]),
                           ncclType(type), ncclSum, r, comm, stream),
                "ncclReduce");
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    wait("a reduce-scatter");
  }

  void allGather(void *data, const std::vector<int64_t> &counts,
                 DataType type) override {
    checkBlocks(counts);
    char *blocks = static_cast<char *>(data);
    int64_t bytes = elementBytes(type), offset = 0;
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size(); offset += counts[r], ++r)
      ncclCheck(ncclBroadcast(blocks + offset * bytes, blocks + offset * bytes,
                              size_t(counts[r]), ncclType(type), r, comm,
                              stream),
                "ncclBroadcast");
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    wait("an all-gather");
  }

  void broadcast(void *data, int64_t bytes, int root) override {
    ncclCheck(
        ncclBroadcast(data, data, size_t(bytes), ncclChar, root, comm, stream),
        "ncclBroadcast");
    wait(fmt::format("a broadcast from rank {}", root));
  }

  void send(const void *data, int64_t bytes, int to) override {
    ncclCheck(ncclSend(data, size_t(bytes), ncclChar, to, comm, stream),
              "ncclSend");
    wait(fmt::format("a send to rank {}", to));
  }

  void receive(void *data, int64_t bytes, int from) override {
    ncclCheck(ncclRecv(data, size_t(bytes), ncclChar, from, comm, stream),
              "ncclRecv");
    wait(fmt::format("a receive from rank {}", from));
  }

  void barrier() override {
    // NCCL has no barrier; the bootstrap's orders the hosts' ranks.
    cudaCheck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    bootstrap.barrier();
  }

  [[noreturn]] void abort(int code) override {
    if (comm)
      ncclCommAbort(comm);
    comm = nullptr;
    bootstrap.abort(code);
  }

private:
  void checkBlocks(const std::vector<int64_t> &counts) const {
    if (int64_t(counts.size()) != size())
      throw CommError(
          fmt::format("{} blocks for {} ranks", counts.size(), size()));
  }

  void ncclCheck(ncclResult_t status, const char *call) const {
    if (status != ncclSuccess)
      throw CommError(
          fmt::format("{} failed: {}", call, ncclGetErrorString(status)));
  }

  void cudaCheck(cudaError_t status, const char *call) const {
    if (status != cudaSuccess)
      throw CommError(
          fmt::format("{} failed: {}", call, cudaGetErrorString(status)));
  }

  /// Waits for the stream: NCCL reports a peer's failure asynchronously,
  /// and a collective that never completes must not hang the job.
  void wait(const std::string &what) {
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      cudaError_t status = cudaStreamQuery(stream);
      if (status == cudaSuccess)
        return;
      if (status != cudaErrorNotReady)
        cudaCheck(status, what.c_str());
      ncclResult_t async = ncclSuccess;
      ncclCheck(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
      ncclCheck(async, what.c_str());
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (timeoutSeconds > 0 && waited > timeoutSeconds) {
        ncclCommAbort(comm);
        comm = nullptr;
        throw CommError(fmt::format(
            "{} waited {:.0f} s for the other GPUs: one of them stopped or "
            "hangs (--comm-timeout sets the limit)",
            what, waited));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  Communicator &bootstrap;
  cudaStream_t stream;
  ncclComm_t comm = nullptr;
  std::string library;
};

} // namespace

std::unique_ptr<Communicator>
lap::comm::ncclCommunicator(Communicator &bootstrap, int device, void *stream) {
  return std::make_unique<NcclCommunicator>(bootstrap, device, stream);
}
