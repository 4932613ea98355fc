//===- ImageRegime.h - Supervised image classification ----------*- C++ -*-===//
//
// The DeiT-3 recipe's data side: the spec's data set (IDX, CIFAR-10/100
// binary, or an ImageFolder), augmented batches with mixup/cutmix and label
// smoothing from ImageLoader, and evaluation on the test split: top-1 and
// top-5 accuracy and the cross-entropy of the clean labels.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_IMAGEREGIME_H
#define LAP_RUNTIME_TRAIN_IMAGEREGIME_H

#include "dsl/Spec.h"
#include "runtime/data/ImageDatasets.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/ImageLoader.h"
#include "runtime/train/Regime.h"

#include <memory>

namespace lap::train {

/// The train and test splits the spec's `data` names: `format: idx` takes
/// path prefixes (PREFIX-images-idx3-ubyte[.gz],
/// PREFIX-labels-idx1-ubyte[.gz]), `cifar10`/`cifar100` the binary batch files
/// or their directory, and `imagefolder` the root of class directories. `val`
/// may be empty (then the test split is null).
struct ImageSplits {
  std::unique_ptr<data::ImageDataset> train, val;
};
ImageSplits openImageSplits(const dsl::DataSpec &data);
/// The test split alone, or the training split when there is none (what
/// an analysis reads, without loading the other).
std::unique_ptr<data::ImageDataset>
openAnalysisSplit(const dsl::DataSpec &data);

/// The evaluation transform of a model: resize and centre crop to its
/// image size, its channels, the default normalisation.
ImageTransform evaluationTransform(const dsl::ModelSpec &model);

/// `limit` image indices spread evenly over a set of `size` (all when limit
/// is 0 or beyond it): a subset that covers every class of a set stored
/// class by class (an ImageFolder).
std::vector<int64_t> evaluationImages(int64_t size, int64_t limit);

/// Evaluation inputs of the images `indices` [n] of `set`: their pixels
/// under `transform` into `images` [n, C, H, W], their labels appended to
/// `labels`.
void loadImages(const data::ImageDataset &set, const ImageTransform &transform,
                const int64_t *indices, int64_t n, float *images,
                std::vector<int32_t> &labels);

/// Top-1 and top-5 accuracy and mean clean cross-entropy of `model` over
/// evaluationImages(set.size(), limit), in batches of `batch`.
nlohmann::json evaluateImages(ModelCalls &calls, const float *params,
                              const data::ImageDataset &set,
                              const ImageTransform &transform, int64_t batch,
                              int64_t limit);

class ImageRegime final : public Regime {
public:
  /// Opens the spec's data; batches of `batch` images of `shard` (this
  /// rank's share); evaluation runs through `calls`, in the workspace
  /// training uses, with the parameters `params` (its device's memory).
  ImageRegime(const dsl::Spec &spec, ModelCalls &calls, const float *params,
              int64_t batch, uint64_t seed, std::FILE *log,
              DataShard shard = {});

  const char *unit() const override { return "img"; }
  const char *units() const override { return "images"; }
  std::string microBatchText(int64_t micro) const override {
    return std::to_string(micro) + " images";
  }
  /// Optimizer steps in one epoch with `accumulation` micro-batches a step.
  int64_t stepsPerEpoch(int64_t accumulation) const override;
  int64_t next(lap_batch &out) override;
  uint64_t position() const override { return loader->position(); }
  void seek(uint64_t position) override { loader->seek(position); }
  /// Without a test split there is nothing to evaluate.
  bool evaluates() const override { return bool(splits.val); }
  nlohmann::json evaluate() override {
    return evaluate(spec.train.eval.batches);
  }
  nlohmann::json evaluate(int64_t batches);

private:
  const dsl::Spec &spec;
  ModelCalls &calls;
  const float *params;
  int64_t batch;
  ImageSplits splits;
  std::unique_ptr<ImageLoader> loader;
  ImageBatch current;
  std::vector<const void *> pointers;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_IMAGEREGIME_H
