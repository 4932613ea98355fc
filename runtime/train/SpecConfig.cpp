//===- SpecConfig.cpp - Training settings of a compiled model's spec -*- C++ -*-===//

#include "runtime/train/SpecConfig.h"

#include "dsl/SpecParser.h"

#include <stdexcept>

using namespace lap;
using namespace lap::train;

dsl::Spec lap::train::specOf(const LoadedModel &model) {
  dsl::Diagnostics diags;
  std::optional<dsl::Spec> spec =
      dsl::parseSpec(model.manifest()["spec"].get<std::string>(),
                     model.path() + " (manifest)", diags);
  if (!spec)
    throw std::runtime_error(model.path() +
                             ": the manifest's spec does not parse");
  return std::move(*spec);
}

int64_t lap::train::microBatchSize(const dsl::Spec &spec) {
  return spec.train.microBatchSize ? spec.train.microBatchSize
                                   : spec.train.batchSize;
}

int64_t lap::train::sequenceLength(const dsl::Spec &spec) {
  return spec.train.seqLen ? spec.train.seqLen : spec.model.context;
}

lap_matmul lap::train::matmulPrecision(const dsl::Spec &spec) {
  return spec.train.precision == dsl::Precision::BF16 ||
                 spec.train.matmulPrecision == dsl::Precision::BF16
             ? LAP_MATMUL_BF16
             : LAP_MATMUL_FP32;
}

std::vector<TensorInfo>
lap::train::trainableTensorsOf(const LoadedModel &model) {
  std::vector<TensorInfo> tensors;
  for (const ParameterInfo &p : model.parameters())
    if (p.trainable)
      tensors.push_back(
          {p.name, p.shape, p.offset - model.trainableOffset(), p.elements});
  return tensors;
}

double lap::train::lrScale(const dsl::Spec &spec) {
  const dsl::OptimizerSpec &o = spec.train.optimizer;
  double batch = o.lrReferenceBatch > 0
                     ? double(spec.train.batchSize) / double(o.lrReferenceBatch)
                     : 1;
  return batch * o.initLrFrac;
}

OptimizerConfig lap::train::optimizerConfig(const dsl::Spec &spec) {
  const dsl::OptimizerSpec &o = spec.train.optimizer;
  OptimizerConfig c;
  c.kind = o.type == dsl::OptimizerType::Muon ? OptimizerKind::Muon
                                              : OptimizerKind::AdamW;
  double scale = lrScale(spec);
  c.lr = o.lr * scale;
  c.beta1 = o.beta1;
  c.beta2 = o.beta2;
  c.eps = o.eps;
  c.weightDecay = o.weightDecay;
  c.weightDecayEnd = o.weightDecayEnd;
  c.noDecay = o.noDecay;
  c.momentum = o.momentum;
  c.nesterov = o.nesterov;
  c.nsSteps = o.nsSteps;
  c.matmulPrecision = matmulPrecision(spec);
  c.embeddingLr = o.embeddingLr * scale;
  c.unembeddingLr = o.unembeddingLr * scale;
  c.scalarLr = o.scalarLr * scale;
  c.headCoefficientLr = o.headCoefficientLr * scale;
  c.scaleLrByWidth = o.scaleLrByWidth;
  c.width = spec.model.width;
  return c;
}

ScheduleConfig lap::train::scheduleConfig(const dsl::Spec &spec) {
  const dsl::ScheduleSpec &s = spec.train.schedule;
  ScheduleConfig c;
  c.warmupSteps = s.warmupSteps;
  // The spec gives learning rates; the schedule works in multipliers of the
  // peak, which lr_reference_batch and init_lr_frac scale (warmup_lr and
  // min_lr stay absolute, as DINO's min_lr).
  double peak = spec.train.optimizer.lr * lrScale(spec);
  c.warmupLr = peak > 0 ? s.warmupLr / peak : 0;
  c.minLr = peak > 0 ? s.minLr / peak : 0;
  c.decay = s.decay == dsl::Decay::Cosine   ? DecayKind::Cosine
            : s.decay == dsl::Decay::Linear ? DecayKind::Linear
                                            : DecayKind::None;
  c.decayFraction = s.decayFraction;
  return c;
}
