//===- Communicator.h - Collectives between the ranks of a run --*- C++ -*-===//
//
// Data-parallel training needs a handful of collectives: the sum of every
// rank's gradients (all-reduce, or reduce-scatter under ZeRO-1), the
// parameters gathered back from their owners, a broadcast of the resumed
// state, point-to-point copies of optimizer shards to the rank that writes
// checkpoints, and small agreements (a stop signal, a loss). One interface
// with three implementations: a single process (no library at all), Open
// MPI across processes and hosts, and NCCL across GPUs (device memory, on a
// stream). Buffers live where the implementation works: host memory for MPI,
// device memory for NCCL.
//
// Failures are errors, never hangs: a collective that waits longer than the
// timeout throws CommError naming what it waited for, and abort() ends every
// rank of the job.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_COMM_COMMUNICATOR_H
#define LAP_RUNTIME_COMM_COMMUNICATOR_H

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace lap::comm {

enum class DataType { F32, F64, I64 };
enum class ReduceOp { Sum, Max };

/// A collective failed or timed out.
class CommError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Ranks of the job on this host, for sizing each rank's thread pool.
  virtual int localSize() const = 0;
  /// This rank's index among those on its host.
  virtual int localRank() const = 0;
  /// "Open MPI v4.1.4", "NCCL 2.28.9", "one process".
  virtual std::string name() const = 0;
  /// Whether a launcher (mpirun) started this process: its output then
  /// goes through the launcher, a pipe or a pseudo-terminal of its own.
  virtual bool launched() const = 0;

  /// data[i] = op over the ranks of data[i], in place, on every rank.
  virtual void allReduce(void *data, int64_t count, DataType type,
                         ReduceOp op) = 0;
  /// The sum over the ranks of `send` (the counts' total), block by block:
  /// rank r receives block r (counts[r] elements) into `recv`.
  virtual void reduceScatter(const void *send, void *recv,
                             const std::vector<int64_t> &counts,
                             DataType type) = 0;
  /// `data` holds the ranks' blocks in rank order (counts[r] elements
  /// each); every rank's own block is sent to all, in place.
  virtual void allGather(void *data, const std::vector<int64_t> &counts,
                         DataType type) = 0;
  virtual void broadcast(void *data, int64_t bytes, int root) = 0;
  virtual void send(const void *data, int64_t bytes, int to) = 0;
  virtual void receive(void *data, int64_t bytes, int from) = 0;
  virtual void barrier() = 0;

  /// Ends every rank of the job with `code` (the launcher reports it).
  [[noreturn]] virtual void abort(int code) = 0;

  /// Seconds a collective may wait for the other ranks before CommError;
  /// 0 waits for ever (set before a phase where one rank works alone for
  /// long, e.g. preparing data).
  void setTimeout(double seconds) { timeoutSeconds = seconds; }
  double timeout() const { return timeoutSeconds; }

  // Typed conveniences.
  void allReduceSum(float *data, int64_t count) {
    allReduce(data, count, DataType::F32, ReduceOp::Sum);
  }
  void allReduceSum(double *data, int64_t count) {
    allReduce(data, count, DataType::F64, ReduceOp::Sum);
  }
  void allReduceMax(int64_t *data, int64_t count) {
    allReduce(data, count, DataType::I64, ReduceOp::Max);
  }
  template <typename T> void broadcastValue(T &value, int root = 0) {
    broadcast(&value, int64_t(sizeof(T)), root);
  }

protected:
  double timeoutSeconds = 0;
};

/// The communicator of this process: MPI when a launcher (mpirun, srun)
/// started it as one rank of several, else a single process. MPI is
/// initialised here and finalised when the communicator goes.
std::unique_ptr<Communicator> worldCommunicator(int *argc, char ***argv);

/// The one-process communicator: every collective is the identity.
std::unique_ptr<Communicator> singleProcess();

/// Bytes of one element of `type`.
inline int64_t elementBytes(DataType type) {
  return type == DataType::F32 ? 4 : 8;
}

} // namespace lap::comm

#endif // LAP_RUNTIME_COMM_COMMUNICATOR_H
