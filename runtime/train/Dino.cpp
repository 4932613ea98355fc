//===- Dino.cpp - The arithmetic of DINO self-distillation ------*- C++ -*-===//

#include "runtime/train/Dino.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace lap::train::dino {

double teacherMomentum(int64_t step, int64_t steps, double base, double end) {
  const double pi = std::acos(-1.0);
  return end +
         0.5 * (base - end) * (1 + std::cos(pi * double(step) / double(steps)));
}

double teacherTemperature(int64_t epoch, double warmup, double final,
                          int64_t warmupEpochs) {
  if (epoch >= warmupEpochs)
    return final;
  if (warmupEpochs == 1)
    return warmup;
  return warmup + (final - warmup) * double(epoch) / double(warmupEpochs - 1);
}

void sharpen(const float *logits, const float *center, int64_t rows, int64_t k,
             double temperature, float *probabilities) {
  std::vector<double> z(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    const float *l = logits + r * k;
    double top = -INFINITY;
    for (int64_t j = 0; j < k; ++j) {
      z[size_t(j)] = (double(l[j]) - center[j]) / temperature;
      top = std::max(top, z[size_t(j)]);
    }
    double sum = 0;
    for (double &v : z)
      sum += (v = std::exp(v - top));
    for (int64_t j = 0; j < k; ++j)
      probabilities[r * k + j] = float(z[size_t(j)] / sum);
  }
}

double meanEntropy(const float *probabilities, int64_t rows, int64_t k) {
  double total = 0;
  for (int64_t i = 0; i < rows * k; ++i)
    if (probabilities[i] > 0)
      total -= double(probabilities[i]) * std::log(double(probabilities[i]));
  return rows > 0 ? total / double(rows) : 0;
}

void updateCenter(std::vector<float> &center, const std::vector<double> &sums,
                  int64_t rows, double momentum) {
  for (size_t j = 0; j < center.size(); ++j)
    center[j] = float(double(center[j]) * momentum +
                      sums[j] / double(rows) * (1 - momentum));
}

void movingAverage(device::Device &device, float *teacher, const float *student,
                   int64_t n, double momentum) {
  // teacher × m − (−w) × student: the same float operations.
  device.applyUpdate(teacher, student, n, float(momentum),
                     -float(1 - momentum));
}

std::vector<ViewTerm> viewTerms(int64_t globalViews, int64_t views) {
  if (globalViews < 1 || views < globalViews)
    throw std::runtime_error("DINO needs at least one global view and no "
                             "fewer views than global ones (got " +
                             std::to_string(globalViews) + " of " +
                             std::to_string(views) + ")");
  std::vector<ViewTerm> terms(static_cast<size_t>(views));
  int64_t pairs = 0;
  for (int64_t v = 0; v < views; ++v)
    for (int64_t g = 0; g < globalViews; ++g)
      if (g != v) {
        terms[size_t(v)].teachers.push_back(g);
        ++pairs;
      }
  if (pairs == 0)
    throw std::runtime_error("DINO with one view has no (teacher, student) "
                             "pair to learn from: add a view");
  for (ViewTerm &t : terms)
    t.weight = double(t.teachers.size()) / double(pairs);
  return terms;
}

void viewTarget(const std::vector<std::vector<float>> &probabilities,
                const std::vector<int64_t> &teachers, std::vector<float> &out) {
  const size_t n = probabilities[size_t(teachers.front())].size();
  out.assign(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t g : teachers)
      sum += probabilities[size_t(g)][i];
    out[i] = float(sum / double(teachers.size()));
  }
}

} // namespace lap::train::dino
