//===- ImageLoader.h - Augmented image batches, prepared ahead --*- C++ -*-===//
//
// Supervised training batches: a shuffled epoch order, each image cropped,
// flipped, colour-augmented and normalised as the spec's `augment` says,
// then mixup/cutmix and label smoothing over the batch. Worker threads
// prepare the next batches while the model trains on the current one.
// Every random draw comes from (seed, sample position) or (seed, batch), so
// a batch does not depend on the number of threads or on timing, and a
// resumed run sees the same batches.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_IMAGELOADER_H
#define LAP_RUNTIME_TRAIN_IMAGELOADER_H

#include "dsl/Spec.h"
#include "runtime/data/Augment.h"
#include "runtime/data/ImageDatasets.h"
#include "runtime/data/MultiCrop.h"
#include "runtime/train/DataShard.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace lap::train {

/// One batch as the model takes it: images [B, C, H, W], target
/// distributions [B, classes], and the labels behind them; or, for
/// self-distillation, the multi-crop views of each image instead of images
/// and targets.
struct ImageBatch {
  int64_t batch = 0;
  std::vector<float> images, targets;
  std::vector<int32_t> labels;
  /// Multi-crop: view v of every image, [B, C, S_v, S_v] (global views
  /// first, then local ones).
  std::vector<std::vector<float>> views;
};

/// The transform of one image into the model's input: the training
/// augmentations, or (evaluation) the resize and centre crop alone.
struct ImageTransform {
  int64_t size = 0, channels = 0;
  const dsl::AugmentSpec *augment = nullptr; ///< null: evaluation
  std::vector<float> mean, std;

  /// Model-ready pixels [channels, size, size] of `image`.
  data::Image operator()(const data::Image &image, std::mt19937_64 &rng) const;
};

/// The normalisation for `channels`: ImageNet's mean and std for colour,
/// 0.5 and 0.5 for a single channel.
void defaultNormalization(int64_t channels, std::vector<float> &mean,
                          std::vector<float> &std);

class ImageLoader {
public:
  /// Batches prepared at once are held in memory: this bounds them.
  static constexpr int64_t kMaxWorkers = 8;

  /// Batches of `batch` images of `set` under `transform`, with `mix` over
  /// each batch; `workers` threads (1 to kMaxWorkers), each preparing one
  /// batch ahead; the batches of `shard` (a rank's share of the stream).
  ImageLoader(const data::ImageDataset &set, ImageTransform transform,
              data::MixConfig mix, int64_t batch, int64_t classes,
              uint64_t seed, int64_t workers, DataShard shard = {});
  /// Batches of the multi-crop views of `batch` images of `set` (in the
  /// model's `channels`), otherwise as above.
  ImageLoader(const data::ImageDataset &set, data::MultiCropConfig multiCrop,
              int64_t channels, int64_t batch, uint64_t seed, int64_t workers,
              DataShard shard = {});
  ~ImageLoader();
  ImageLoader(const ImageLoader &) = delete;
  ImageLoader &operator=(const ImageLoader &) = delete;

  /// The next batch (waits for a worker when none is ready).
  void next(ImageBatch &out);
  /// The stream position (images of every rank) reached, for checkpoints;
  /// seek restarts there.
  uint64_t position() const { return shard.reached(served); }
  void seek(uint64_t position);
  int64_t batchesPerEpoch() const { return int64_t(set.size()) / batch; }

private:
  ImageLoader(const data::ImageDataset &set, ImageTransform transform,
              data::MixConfig mix,
              std::optional<data::MultiCropConfig> multiCrop, int64_t batch,
              int64_t classes, uint64_t seed, int64_t workers, DataShard shard);
  void work();
  ImageBatch make(uint64_t index) const;
  /// The images of batch `index` of `epoch`, by the epoch's keyed shuffle.
  std::vector<int64_t> samplesOf(uint64_t epoch, uint64_t index) const;
  void stop();
  void start();

  const data::ImageDataset &set;
  ImageTransform transform;
  data::MixConfig mix;
  std::optional<data::MultiCropConfig> multiCrop;
  int64_t batch, classes;
  uint64_t seed;
  int64_t workers;
  DataShard shard;
  /// The shuffles of the (at most two) epochs being prepared: near an epoch
  /// boundary, workers build batches of both.
  mutable std::map<uint64_t, std::vector<uint64_t>> orders;
  mutable std::mutex orderMutex;

  // In this rank's share: the stream's batch of index i is
  // shard.global(i * batch) / batch.
  uint64_t served = 0;     ///< images handed out
  uint64_t nextBatch = 0;  ///< next batch index to hand out
  uint64_t nextToMake = 0; ///< next batch index a worker claims
  std::deque<std::pair<uint64_t, ImageBatch>> ready;
  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
  std::exception_ptr failure; ///< the first worker's error, rethrown by next()
  std::vector<std::thread> threads;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_IMAGELOADER_H
