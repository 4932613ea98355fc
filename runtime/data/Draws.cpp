//===- Draws.cpp - Random draws of the augmentations ----------------------===//

#include "runtime/data/Draws.h"

#include "runtime/data/ImageChecks.h"
#include "runtime/platform/Errors.h"

#include <cmath>

using namespace lap::data;
using namespace lap::data::checks;
using lap::platform::fail;
using lap::platform::numberText;

namespace {

/// Marsaglia's polar method; the second normal of each pair is dropped so
/// that no state lives outside the caller's generator.
double standardNormal(std::mt19937_64 &rng) {
  for (;;) {
    double a = uniform(rng, -1, 1), b = uniform(rng, -1, 1);
    double s = a * a + b * b;
    if (s > 0 && s < 1)
      return a * std::sqrt(-2 * std::log(s) / s);
  }
}

/// The log of a Gamma(shape, 1) draw (Marsaglia & Tsang, 2000). Logs keep
/// shapes far below 1 from underflowing to 0.
double logGammaDraw(std::mt19937_64 &rng, double shape) {
  if (shape < 1) {
    double logBoosted = logGammaDraw(rng, shape + 1);
    double u = 1 - uniform(rng, 0, 1); // (0, 1], so the log is finite
    return logBoosted + std::log(u) / shape;
  }
  double d = shape - 1.0 / 3.0, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x, v;
    do {
      x = standardNormal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    double u = uniform(rng, 0, 1);
    if (u < 1 - 0.0331 * (x * x) * (x * x) ||
        std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v)))
      return std::log(d * v);
  }
}

} // namespace

double lap::data::uniform(std::mt19937_64 &rng, double lo, double hi) {
  double u = double(rng() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

int64_t lap::data::uniformIndex(std::mt19937_64 &rng, int64_t n) {
  checkSize("uniformIndex", "n", n);
  return int64_t(rng() % uint64_t(n));
}

double lap::data::sampleBeta(std::mt19937_64 &rng, double a, double b) {
  if (!(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b)))
    fail("sampleBeta", "shapes " + numberText(a) + ", " + numberText(b) +
                           " must be positive and finite");
  double logX = logGammaDraw(rng, a);
  double logY = logGammaDraw(rng, b);
  // X / (X + Y) = 1 / (1 + Y / X).
  return 1 / (1 + std::exp(logY - logX));
}
