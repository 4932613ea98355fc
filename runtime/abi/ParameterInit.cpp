//===- ParameterInit.cpp - Reproducible parameter initialisation -*- C++ -*-===//

#include "runtime/abi/ParameterInit.h"

#include "runtime/platform/Random.h"

#include <cmath>
#include <stdexcept>

using namespace lap::model;

namespace {

using lap::splitMix;

/// Uniform in (0, 1) from a 64-bit hash: 53 bits, never 0.
double uniform(uint64_t bits) { return ((bits >> 11) + 0.5) * 0x1p-53; }

/// A standard normal for counter `i` of stream `stream` (Box-Muller).
double normal(uint64_t stream, uint64_t i) {
  double u1 = uniform(splitMix(stream + 2 * i)),
         u2 = uniform(splitMix(stream + 2 * i + 1));
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

} // namespace

InitKind lap::model::parseInitKind(const std::string &name) {
  if (name == "constant")
    return InitKind::Constant;
  if (name == "normal")
    return InitKind::Normal;
  if (name == "trunc_normal")
    return InitKind::TruncNormal;
  if (name == "uniform")
    return InitKind::Uniform;
  if (name == "values")
    return InitKind::Values;
  throw std::runtime_error("unknown init kind '" + name + "'");
}

void lap::model::initParameter(float *params, const ParameterSpec &p,
                               uint64_t seed, uint64_t index) {
  float *out = params + p.offset;
  uint64_t stream = splitMix(splitMix(seed) ^ splitMix(index + 1)) << 20;
  for (int64_t i = 0; i < p.elements; ++i) {
    double v = p.value;
    switch (p.kind) {
    case InitKind::Constant:
      break;
    case InitKind::Normal:
      v = p.value * normal(stream, uint64_t(i));
      break;
    case InitKind::TruncNormal: {
      // Redraw outside 2 std (timm's trunc_normal_ bounds), each redraw
      // from a fresh counter of the same element.
      double z = normal(stream, uint64_t(i));
      for (uint64_t k = 1; std::abs(z) > 2; ++k)
        z = normal(stream ^ (k << 58), uint64_t(i));
      v = p.value * z;
      break;
    }
    case InitKind::Uniform:
      v = p.value * std::sqrt(3.0) *
          (2 * uniform(splitMix(stream + uint64_t(i))) - 1);
      break;
    case InitKind::Values:
      v = p.values[size_t(i)];
      break;
    }
    out[i] = float(v);
  }
}
