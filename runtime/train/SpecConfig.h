//===- SpecConfig.h - Optimizer and schedule settings of a spec -*- C++ -*-===//
//
// The spec's `train.optimizer` and `train.schedule` as the runtime's plain
// configurations (learning rates of the schedule become multipliers).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_SPECCONFIG_H
#define LAP_RUNTIME_TRAIN_SPECCONFIG_H

#include "dsl/Spec.h"
#include "runtime/train/Optimizer.h"
#include "runtime/train/Schedule.h"

namespace lap::train {

OptimizerConfig optimizerConfig(const dsl::Spec &spec);
ScheduleConfig scheduleConfig(const dsl::Spec &spec);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_SPECCONFIG_H
