//===- Schedule.cpp - Learning-rate and momentum schedules ------*- C++ -*-===//

#include "runtime/train/Schedule.h"

#include <algorithm>
#include <cmath>

namespace lap::train {

double learningRateMultiplier(int64_t step, int64_t totalSteps,
                              const ScheduleConfig &c) {
  step = std::max<int64_t>(step, 0);
  if (step < c.warmupSteps)
    return c.warmupLr + (1 - c.warmupLr) * double(step) / c.warmupSteps;
  if (c.decay == DecayKind::None || totalSteps <= 0)
    return 1;
  double fraction = std::clamp(c.decayFraction, 0.0, 1.0);
  int64_t decaySteps = int64_t(std::llround(fraction * totalSteps));
  int64_t start = std::max(c.warmupSteps, totalSteps - decaySteps);
  if (step < start)
    return 1;
  if (start >= totalSteps)
    return c.minLr;
  double progress =
      std::min(1.0, double(step - start) / double(totalSteps - start));
  double shape = c.decay == DecayKind::Cosine
                     ? 0.5 * (1 + std::cos(M_PI * progress))
                     : 1 - progress;
  return c.minLr + (1 - c.minLr) * shape;
}

double muonMomentum(int64_t step, double start, double end,
                    int64_t warmupSteps) {
  if (warmupSteps <= 0)
    return end;
  double frac = std::clamp(double(step) / double(warmupSteps), 0.0, 1.0);
  return (1 - frac) * start + frac * end;
}

double cosineValue(int64_t step, int64_t totalSteps, double start, double end) {
  if (totalSteps <= 0)
    return end;
  double progress = std::clamp(double(step) / double(totalSteps), 0.0, 1.0);
  return end + (start - end) * 0.5 * (1 + std::cos(M_PI * progress));
}

double weightDecayMultiplier(int64_t step, int64_t totalSteps,
                             double weightDecay, double weightDecayEnd) {
  if (weightDecayEnd < 0 || weightDecay <= 0)
    return 1;
  return cosineValue(step, totalSteps, weightDecay, weightDecayEnd) /
         weightDecay;
}

} // namespace lap::train
