//===- DataParallel.h - The ranks of a run sharing one step -----*- C++ -*-===//
//
// Every rank trains its share of the global batch (DataShard) and sums its
// micro-batch gradients, each scaled by 1 / (micro-batches of the global
// batch); then the ranks' sums are added:
//  - plain data parallel: an all-reduce, and every rank applies the same
//    update to its full copy of the parameters and optimizer state;
//  - ZeRO-1 (`train.zero: 1`): the tensors, in offset order, are split
//    into contiguous shards of about equal size (whole tensors, so Muon
//    sees whole matrices), one per rank; a reduce-scatter leaves each rank
//    the summed gradients of its shard, it updates that shard with the
//    optimizer state of that shard alone, and an all-gather sends every
//    shard's parameters to all.
// Clipping measures the norm as one process would (the same fp64 partial
// sums in the same order), and the optimizer is elementwise or per matrix,
// so ZeRO-1 updates exactly as plain data parallel does. Checkpoints hold
// the whole optimizer state whatever the sharding (rank 0 collects it), so
// a run resumes with any number of ranks.
//
// On GPUs the gradients and parameters move through a second communicator
// of the same ranks over device memory (NCCL); scalars, signals and the
// optimizer state on its way to a checkpoint go through the first, on the
// host.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_DATAPARALLEL_H
#define LAP_RUNTIME_TRAIN_DATAPARALLEL_H

#include "runtime/comm/Communicator.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Optimizer.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lap::train {

class DataParallel {
public:
  /// The ranks of `comm` training the parameters `tensors` (a flat buffer
  /// of `elements` floats of `device` memory, which `onDevice` moves
  /// between them; null: `comm`); `zero` shards the optimizer state.
  DataParallel(comm::Communicator &comm, std::vector<TensorInfo> tensors,
               int64_t elements, bool zero,
               device::Device &device = device::host(),
               comm::Communicator *onDevice = nullptr);

  comm::Communicator &comm() const { return communicator; }
  bool zero() const { return sharded; }
  /// The tensors this rank updates: all, or its shard under ZeRO-1.
  const std::vector<TensorInfo> &updated() const { return mine; }

  /// Sums the ranks' `accumulated` gradients; returns the buffer holding
  /// the sums of updated(): `accumulated` itself, or under ZeRO-1
  /// `scratch` (of the same layout) with this rank's shard filled in.
  float *reduce(float *accumulated, float *scratch);
  /// The fp64 sums of squares of this rank's share of `reduced`
  /// (squaredNormPartials of updated()): what the two below read.
  std::vector<double> squares(const float *reduced) const;
  /// The first tensor of the whole table with a non-finite summed gradient.
  std::optional<std::string>
  firstNonFinite(const std::vector<double> &squares) const;
  /// clipGradients over every rank's shard: returns the global norm.
  double clip(float *reduced, std::vector<double> squares,
              double maxNorm) const;
  /// ZeRO-1: every shard's updated parameters to every rank.
  void gatherParameters(float *params) const;
  /// Rank 0's `count` floats of parameters at `params` to every rank (the
  /// whole model, frozen parameters included).
  void broadcastParameters(float *params, int64_t count) const;

  /// Rank 0: the optimizer state the other ranks hold (ZeRO-1; none in
  /// plain data parallel), by name, for a checkpoint. Every rank calls it.
  std::vector<std::pair<std::string, std::vector<float>>>
  collectState(Optimizer &optimizer) const;
  /// Fills every rank's optimizer state from the checkpoint rank 0 loaded
  /// (null on the other ranks); a missing or mis-sized tensor is an error
  /// naming `checkpoint`'s optimizer file. Every rank calls it.
  void distributeState(Optimizer &optimizer,
                       const LoadedCheckpoint *checkpoint) const;

private:
  comm::Communicator &communicator;
  device::Device &device;      ///< where the gradients and parameters live
  /// Collectives on `device`'s arrays; null for one rank without ZeRO-1,
  /// whose arrays have nowhere to go.
  comm::Communicator *buffers;
  std::vector<TensorInfo> table, mine;
  int64_t elements;
  bool sharded;
  size_t firstMine = 0; ///< mine[i] is table[firstMine + i]
  /// ZeRO-1: the elements of each rank's shard, in rank order (they tile
  /// the flat buffer), and where this rank's starts.
  std::vector<int64_t> shardElements;
  int64_t shardBegin = 0;
  /// ZeRO-1: each shard's count of clipping's partial sums (after clip()).
  mutable std::vector<int64_t> partialCounts;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_DATAPARALLEL_H
