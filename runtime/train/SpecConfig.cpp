//===- SpecConfig.cpp - Optimizer and schedule settings of a spec -*- C++ -*-===//

#include "runtime/train/SpecConfig.h"

using namespace lap;
using namespace lap::train;

OptimizerConfig lap::train::optimizerConfig(const dsl::Spec &spec) {
  const dsl::OptimizerSpec &o = spec.train.optimizer;
  OptimizerConfig c;
  c.kind = o.type == dsl::OptimizerType::Muon ? OptimizerKind::Muon
                                              : OptimizerKind::AdamW;
  c.lr = o.lr;
  c.beta1 = o.beta1;
  c.beta2 = o.beta2;
  c.eps = o.eps;
  c.weightDecay = o.weightDecay;
  c.noDecay = o.noDecay;
  c.momentum = o.momentum;
  c.nesterov = o.nesterov;
  c.nsSteps = o.nsSteps;
  c.embeddingLr = o.embeddingLr;
  c.unembeddingLr = o.unembeddingLr;
  c.scalarLr = o.scalarLr;
  c.scaleLrByWidth = o.scaleLrByWidth;
  c.width = spec.model.width;
  return c;
}

ScheduleConfig lap::train::scheduleConfig(const dsl::Spec &spec) {
  const dsl::ScheduleSpec &s = spec.train.schedule;
  ScheduleConfig c;
  c.warmupSteps = s.warmupSteps;
  // The spec gives learning rates; the schedule works in multipliers.
  double peak = spec.train.optimizer.lr;
  c.warmupLr = peak > 0 ? s.warmupLr / peak : 0;
  c.minLr = peak > 0 ? s.minLr / peak : 0;
  c.decay = s.decay == dsl::Decay::Cosine   ? DecayKind::Cosine
            : s.decay == dsl::Decay::Linear ? DecayKind::Linear
                                            : DecayKind::None;
  c.decayFraction = s.decayFraction;
  return c;
}
