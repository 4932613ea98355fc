//===- RandomBatch.h - Random inputs for a compiled model -------*- C++ -*-===//
//
// Batches of the manifest's layout filled with random data (token ids,
// normal pixels, one-hot targets), for `lapc-run check` and the benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_MODEL_RANDOMBATCH_H
#define LAP_RUNTIME_MODEL_RANDOMBATCH_H

#include "runtime/model/LoadedModel.h"

#include <memory>
#include <vector>

namespace lap {

/// Elements of a manifest shape at a run-time batch and sequence length
/// (-1 marks them: dimension 0 the batch, dimension 1 the sequence).
int64_t elementsAt(const std::vector<int64_t> &shape, int64_t batch,
                   int64_t seq);

/// One random batch in manifest "batch" order.
struct RandomBatch {
  RandomBatch(const nlohmann::json &manifest, int64_t batch, int64_t seq,
              uint64_t seed);
  int64_t bytes() const;

  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  std::vector<const void *> pointers;
  lap_batch view;
};

} // namespace lap

#endif // LAP_RUNTIME_MODEL_RANDOMBATCH_H
