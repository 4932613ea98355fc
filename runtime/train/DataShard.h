//===- DataShard.h - A rank's share of every global batch -------*- C++ -*-===//
//
// The data stream is the same whatever the number of ranks: a step trains
// on the next `ranks × perRank` samples of it, and rank r reads the perRank
// consecutive ones from r × perRank. So a global batch and its contents do
// not depend on how many ranks share it, and the data position a checkpoint
// records (samples of the stream consumed) means the same to any number of
// ranks. Positions are in samples (token windows, images); perRank is a
// whole number of micro-batches.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_DATASHARD_H
#define LAP_RUNTIME_TRAIN_DATASHARD_H

#include <algorithm>
#include <cstdint>

namespace lap::train {

struct DataShard {
  uint64_t rank = 0, ranks = 1;
  uint64_t perRank = 1; ///< samples a rank reads per step

  uint64_t perStep() const { return ranks * perRank; }
  /// The stream position of the rank's sample `s` (counted from 0).
  uint64_t global(uint64_t s) const {
    return s / perRank * perStep() + rank * perRank + s % perRank;
  }
  /// The stream position reached once the rank has read `s` samples, as
  /// a checkpoint records it (exact at step boundaries).
  uint64_t reached(uint64_t s) const {
    return s / perRank * perStep() + s % perRank;
  }
  /// The samples the rank has read at stream position `position`.
  uint64_t local(uint64_t position) const {
    return position / perStep() * perRank +
           std::min(position % perStep(), perRank);
  }
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_DATASHARD_H
