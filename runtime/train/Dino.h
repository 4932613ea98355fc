//===- Dino.h - The arithmetic of DINO self-distillation --------*- C++ -*-===//
//
// What facebookresearch/dino's main_dino.py computes around the model, as
// plain functions: the schedules (teacher momentum, teacher temperature),
// the teacher's centring and sharpening, the exponential moving average,
// and how the loss over (teacher view, student view) pairs becomes one
// target and one weight per student view, so that the compiled loss
// -sum_k t_k log softmax(s / student_temp)_k, linear in t, computes it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_DINO_H
#define LAP_RUNTIME_TRAIN_DINO_H

#include "runtime/device/Device.h"

#include <cstdint>
#include <vector>

namespace lap::train::dino {

/// DINO's cosine_scheduler for the teacher momentum at (0-based) `step` of
/// `steps`: end + (base - end) (1 + cos(pi step / steps)) / 2.
double teacherMomentum(int64_t step, int64_t steps, double base, double end);

/// DINO's teacher temperature in `epoch`: np.linspace(warmup, final,
/// warmupEpochs)[epoch] during the warm-up, then `final`.
double teacherTemperature(int64_t epoch, double warmup, double final,
                          int64_t warmupEpochs);

/// The teacher's targets: softmax((logits - center) / temperature) per row
/// of `rows` x `k` (computed in double, written as float).
void sharpen(const float *logits, const float *center, int64_t rows, int64_t k,
             double temperature, float *probabilities);

/// The mean over rows of -sum_k p_k log p_k (nats; 0 log 0 = 0).
double meanEntropy(const float *probabilities, int64_t rows, int64_t k);

/// center = center * momentum + mean * (1 - momentum), with mean =
/// sums / rows: DINO's update_center over the teacher's logits of a step.
void updateCenter(std::vector<float> &center, const std::vector<double> &sums,
                  int64_t rows, double momentum);

/// teacher = teacher * momentum + student * (1 - momentum), elementwise,
/// in float, on the device that holds them.
void movingAverage(device::Device &device, float *teacher, const float *student,
                   int64_t n, double momentum);

/// The loss sums, over every global (teacher) view g and every view v != g
/// of the student, the mean over the batch of the cross-entropy of the
/// teacher's probabilities of g against the student's of v, divided by the
/// number of such pairs. Per student view: the teacher views it is paired
/// with, and its weight (their count over the pairs).
struct ViewTerm {
  std::vector<int64_t> teachers;
  double weight = 0;
};
std::vector<ViewTerm> viewTerms(int64_t globalViews, int64_t views);

/// The target of a student view: the mean of the teachers' probabilities
/// [rows, k] (`teachers` indexes `probabilities`).
void viewTarget(const std::vector<std::vector<float>> &probabilities,
                const std::vector<int64_t> &teachers, std::vector<float> &out);

} // namespace lap::train::dino

#endif // LAP_RUNTIME_TRAIN_DINO_H
