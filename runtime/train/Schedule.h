//===- Schedule.h - Learning-rate and momentum schedules --------*- C++ -*-===//
//
// The learning rate is the optimizer's peak lr times a multiplier of the step:
// a linear warmup, a constant stretch, then a cosine decay or nanochat's
// linear warmdown over the final fraction of training. Every group follows
// the same multiplier (nanochat scales Muon's and AdamW's lrs alike).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_SCHEDULE_H
#define LAP_RUNTIME_TRAIN_SCHEDULE_H

#include <cstdint>

namespace lap::train {

enum class DecayKind {
  None,   ///< constant after the warmup (the spec's `constant`)
  Cosine, ///< half a cosine from 1 to minLr
  Linear, ///< straight line from 1 to minLr (nanochat's warmdown)
};

/// `train.schedule` with the rates as fractions of the peak lr: the spec's
/// absolute warmup_lr and min_lr divided by optimizer.lr.
struct ScheduleConfig {
  int64_t warmupSteps = 0; ///< warmup_steps (warmup_epochs × steps/epoch)
  double warmupLr = 0;     ///< multiplier at step 0
  DecayKind decay = DecayKind::Cosine;
  double decayFraction = 1; ///< decay over this final fraction of the steps
  double minLr = 0;         ///< multiplier at step totalSteps
};

/// The lr multiplier at `step` of `totalSteps`:
///  - step < warmupSteps: warmupLr + (1 - warmupLr) * step / warmupSteps;
///  - then 1 until the decay starts at
///    max(warmupSteps, totalSteps - round(decayFraction * totalSteps));
///  - then from 1 down to minLr, reached at step == totalSteps (so the last
///    trained step, totalSteps - 1, is one step short of it, as in nanochat).
double learningRateMultiplier(int64_t step, int64_t totalSteps,
                              const ScheduleConfig &config);

/// Muon's momentum warmup (nanochat): linear from `start` to `end` over the
/// first `warmupSteps` steps, then `end`; `end` throughout when warmupSteps
/// is 0.
double muonMomentum(int64_t step, double start, double end,
                    int64_t warmupSteps);

/// Half a cosine from `start` at step 0 to `end` at totalSteps (DINO's
/// weight_decay_end and teacher-momentum schedules).
double cosineValue(int64_t step, int64_t totalSteps, double start, double end);

/// The factor on `weightDecay` at `step` of `totalSteps` for the spec's
/// weight_decay_end: the cosine from weightDecay to weightDecayEnd, as a
/// fraction of weightDecay; 1 when weightDecayEnd < 0 (constant decay) or
/// weightDecay is 0 (the spec refuses a schedule from 0).
double weightDecayMultiplier(int64_t step, int64_t totalSteps,
                             double weightDecay, double weightDecayEnd);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_SCHEDULE_H
