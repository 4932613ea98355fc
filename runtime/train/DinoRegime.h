//===- DinoRegime.h - DINO self-distillation --------------------*- C++ -*-===//
//
// facebookresearch/dino's training around one model library: the student
// is the trained parameters, the teacher a second copy of them that only
// runs forward (on the global views) and follows the student by an
// exponential moving average. Each micro-batch: multi-crop views of every
// image, the teacher's centred and sharpened probabilities of its global
// views, and one student train step per view against the mean of the
// teacher's other global views, weighted so that the sum is DINO's loss
// over every (teacher view, other student view) pair (Dino.h). Local views
// run the library's @train_step_local. The last layer is frozen for the
// first epochs, its magnitude always under norm_last_layer; gradients are
// clipped per tensor, as DINO's clip_gradients.
//
// Evaluation reads the teacher's backbone features (lap_model_embed) of a
// labelled split: DINO's weighted k-NN and a linear probe. The teacher, the
// gradients and the updates live where the model runs (its device::Device);
// views, the teacher's logits and the centre are small and stay on the
// host.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_DINOREGIME_H
#define LAP_RUNTIME_TRAIN_DINOREGIME_H

#include "dsl/Spec.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Dino.h"
#include "runtime/train/ImageLoader.h"
#include "runtime/train/ImageRegime.h"
#include "runtime/train/Regime.h"

#include <memory>

namespace lap::train {

/// Bank images per query image of evaluateEmbeddings.
constexpr int64_t kBankPerQuery = 10;

/// k-NN (k = 20, T = 0.07) and linear-probe accuracy of the model's
/// embedding (parameters `params`, on its device): the queries are up to
/// `queryImages` images of `queries`, the bank (and the probe's training
/// set) kBankPerQuery times as many of `bank`, spread evenly over each set
/// (0: all).
nlohmann::json evaluateEmbeddings(ModelCalls &calls, const float *params,
                                  const data::ImageDataset &bank,
                                  const data::ImageDataset &queries,
                                  const ImageTransform &transform,
                                  int64_t batch, int64_t queryImages);

/// The teacher's parameters of a dino run's checkpoint into `teacher`
/// (`device` memory); throws naming the file when it has none (a
/// checkpoint of another regime).
void restoreTeacher(const LoadedModel &model,
                    const LoadedCheckpoint &checkpoint, float *teacher,
                    device::Device &device = device::host());

class DinoRegime final : public Regime {
public:
  /// Opens the spec's data; the teacher starts as a copy of `params`
  /// (`device` memory, where `calls` runs the model). With several ranks
  /// (`ranks`, null: this process alone), each draws its `shard` of every
  /// step's images, and the teacher's centre and monitors sum over all.
  DinoRegime(const dsl::Spec &spec, ModelCalls &calls, device::Device &device,
             const float *params, int64_t batch, uint64_t seed, std::FILE *log,
             DataShard shard = {}, comm::Communicator *ranks = nullptr);

  const char *unit() const override { return "img"; }
  const char *units() const override { return "images"; }
  std::string microBatchText(int64_t micro) const override {
    return std::to_string(micro) + " images";
  }
  int64_t stepsPerEpoch(int64_t accumulation) const override;
  /// The run's length, for the momentum, temperature and freezing
  /// schedules; before training starts.
  void setSteps(int64_t steps, int64_t stepsPerEpoch) override;
  bool clipsEachTensor() const override { return true; }

  uint64_t position() const override { return loader->position(); }
  void seek(uint64_t position) override { loader->seek(position); }

  bool evaluates() const override { return bool(splits.val); }
  nlohmann::json evaluate() override { return evaluate(false); }
  /// k-NN and linear probe of the teacher's features (or, `student`, of the
  /// trained parameters').
  nlohmann::json evaluate(bool student);
  bool evaluatesInitialModel() const override { return true; }

  bool ownsStep() const override { return true; }
  int64_t trainStep(const float *params, float *grads, uint64_t seed,
                    float &loss) override;
  bool frozen(const std::string &name, int64_t step) const override;
  void afterUpdate(const float *params, int64_t step) override;
  nlohmann::json stepMetrics() const override { return lastMetrics; }
  std::vector<TensorRef> state() override;
  void restore(const LoadedCheckpoint &checkpoint) override;

private:
  /// The teacher's temperature in the epoch of (0-based) `step`.
  double teacherTemperature(int64_t step) const;

  const dsl::Spec &spec;
  const dsl::DinoSpec &dino;
  ModelCalls &calls;
  const LoadedModel &model;
  device::Device &device;
  const float *params;
  std::FILE *log;
  comm::Communicator *ranks;
  int64_t batch, globalViews, views, prototypes, localTokens = 0;
  int64_t steps = 0, epochSteps = 1, freezeSteps = 0;
  ImageSplits splits;
  std::unique_ptr<ImageLoader> loader;
  device::Array teacher, viewGrads;
  std::vector<float> teacherOnHost; ///< for a checkpoint (a GPU's teacher)
  /// Per student view: its teachers and its weight in the loss.
  std::vector<dino::ViewTerm> terms;

  std::vector<float> center; ///< [prototypes]
  // Per step: the teacher's logits summed by column, their rows, and the
  // monitors, reset after each update.
  std::vector<double> centerSums;
  int64_t centerRows = 0, microBatches = 0;
  double entropySum = 0, klSum = 0;
  nlohmann::json lastMetrics = nlohmann::json::object();
  bool collapsed = false;
  int64_t currentStep = 0; ///< the step trainStep's micro-batches belong to

  // Buffers of one micro-batch.
  ImageBatch current;
  std::vector<std::vector<float>> teacherProbabilities;
  std::vector<float> logits, zeros, target;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_DINOREGIME_H
