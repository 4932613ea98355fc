//===- Draws.h - Random draws of the augmentations --------------*- C++ -*-===//
//
// Every random value the augmentations use comes from the caller's
// std::mt19937_64 through these draws (never std::*_distribution, whose
// results differ between standard libraries), so a seed gives the same
// images on every machine.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_DRAWS_H
#define LAP_RUNTIME_DATA_DRAWS_H

#include <cstdint>
#include <random>

namespace lap::data {

/// One rng() call: u = (rng() >> 11) * 2^-53, uniform on 53 bits in [0, 1);
/// returns lo + (hi - lo) * u (exactly lo when lo == hi).
double uniform(std::mt19937_64 &rng, double lo, double hi);

/// One rng() call: rng() % n, in [0, n) (bias below n / 2^64). n >= 1.
int64_t uniformIndex(std::mt19937_64 &rng, int64_t n);

/// Beta(a, b) as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b) drawn in that
/// order by Marsaglia-Tsang on polar-method normals; shapes below 1 use
/// Gamma(s + 1) * u^(1/s). The ratio is formed from log X and log Y, so
/// shapes small enough to underflow X and Y as doubles still give a value
/// in [0, 1] rather than 0 / 0. a, b > 0.
double sampleBeta(std::mt19937_64 &rng, double a, double b);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_DRAWS_H
