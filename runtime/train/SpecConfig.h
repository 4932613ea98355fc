//===- SpecConfig.h - Training settings of a compiled model's spec -*- C++ -*-===//
//
// A model library carries its resolved spec in the manifest; these read it
// and turn `train.optimizer` and `train.schedule` into the runtime's plain
// configurations (learning rates of the schedule become multipliers).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_SPECCONFIG_H
#define LAP_RUNTIME_TRAIN_SPECCONFIG_H

#include "dsl/Spec.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/train/Optimizer.h"
#include "runtime/train/Schedule.h"

namespace lap::train {

/// The spec in `model`'s manifest; throws naming the library if it does not
/// parse.
dsl::Spec specOf(const LoadedModel &model);

/// Sequences per forward pass (micro_batch_size, else batch_size) and
/// tokens per sequence (seq_len, else context).
int64_t microBatchSize(const dsl::Spec &spec);
int64_t sequenceLength(const dsl::Spec &spec);

/// The trainable parameters as the optimizer sees them: offsets from the
/// first of them (model.trainableOffset()), the layout of the gradients.
std::vector<TensorInfo> trainableTensorsOf(const LoadedModel &model);

/// The factor on every learning rate: batch_size / lr_reference_batch
/// (DINO's and DeiT's linear scaling rule; 1 when off) times init_lr_frac
/// (nanochat's fine-tuning fraction of the pretraining rates).
double lrScale(const dsl::Spec &spec);

/// What the model's matrix products multiply: bf16 operands in a bf16 model
/// and with train.matmul_precision: bf16, else fp32.
lap_matmul matmulPrecision(const dsl::Spec &spec);

/// The spec's optimizer with its learning rates scaled by lrScale.
OptimizerConfig optimizerConfig(const dsl::Spec &spec);
ScheduleConfig scheduleConfig(const dsl::Spec &spec);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_SPECCONFIG_H
