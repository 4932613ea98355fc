//===- ParameterInit.h - Reproducible parameter initialisation --*- C++ -*-===//
//
// Values are a function of (seed, parameter index, element index) through a
// counter-based generator, so they do not depend on the thread count, the
// standard library or the order parameters are filled in.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ABI_PARAMETERINIT_H
#define LAP_RUNTIME_ABI_PARAMETERINIT_H

#include <cstdint>
#include <string>
#include <vector>

namespace lap::model {

enum class InitKind { Constant, Normal, TruncNormal, Uniform, Values };

/// A parameter of the manifest: where it lives and how it starts.
struct ParameterSpec {
  int64_t offset = 0, elements = 0;
  InitKind kind = InitKind::Constant;
  double value = 0;           ///< the constant, or the standard deviation
  std::vector<double> values; ///< Values: one per element
  bool trainable = true;      ///< has a gradient (train.lora: adapters only)
};

/// The manifest's spelling: constant, normal, trunc_normal, uniform, values.
InitKind parseInitKind(const std::string &name);

/// Fills params[p.offset ..] for parameter number `index`.
void initParameter(float *params, const ParameterSpec &p, uint64_t seed,
                   uint64_t index);

} // namespace lap::model

#endif // LAP_RUNTIME_ABI_PARAMETERINIT_H
