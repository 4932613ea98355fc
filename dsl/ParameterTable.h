//===- ParameterTable.h - Every parameter of a model, by name ---*- C++ -*-===//
//
// The parameters a spec declares, in a fixed order, with the names
// checkpoints use ("blocks.3.attn.qkv.weight") and PyTorch's layouts (a
// linear weight is [out, in]); learned head coefficients
// ("blocks.3.attn.coefficients") come after them. Under train.lora the
// frozen parameters come first, then the modules lora.train names, then the
// adapters ("blocks.3.attn.qkv.lora_A.weight" [rank, in], "lora_B.weight"
// [out, rank], PEFT's names and layouts): the trainable parameters are
// always a suffix of the table. The compiler's functions take
// them in this order; Derived.cpp's parameter count is checked against this
// table.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_PARAMETERTABLE_H
#define LAP_DSL_PARAMETERTABLE_H

#include "dsl/Spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lap::dsl {

/// How a parameter starts (model.init in the spec).
struct ParameterInit {
  enum Kind { Constant, Normal, TruncNormal, Uniform, Values };
  Kind kind = Constant;
  /// Constant: the value; the distributions: the standard deviation (a
  /// uniform one is U(-a, a) with a = std sqrt 3; a truncated normal is cut
  /// at 2 std, as timm's trunc_normal_).
  double value = 0;
  /// Values: one per element (learned head coefficients).
  std::vector<double> values;
};

/// One parameter tensor.
struct Parameter {
  std::string name;
  std::vector<int64_t> shape;
  ParameterInit init;
  /// Updated by training; under train.lora only the adapters are.
  bool trainable = true;
  int64_t elements() const;
};

/// The name of an init kind in manifests: constant, normal, trunc_normal,
/// uniform, values.
const char *initKindName(ParameterInit::Kind kind);

/// Whether parameter `name` belongs to `module` of train.lora.train:
/// "embedding" (wte, patch_embed) or "head" (lm_head, a classifier's head).
bool inModule(const std::string &name, const std::string &module);

/// The suffixes of a layer's LoRA adapters A and B (PEFT's names).
inline constexpr const char *kLoraDown = ".lora_A.weight";
inline constexpr const char *kLoraUp = ".lora_B.weight";

/// The layer whose adapter `name` is ("blocks.0.attn.qkv" for
/// "blocks.0.attn.qkv.lora_A.weight" or its lora_B), or "" for a name of no
/// adapter.
std::string loraLayerOf(const std::string &name);

/// Whether `name` is a LoRA adapter's.
inline bool isLoraAdapter(const std::string &name) {
  return !loraLayerOf(name).empty();
}

/// The parameters of `spec`'s model, in declaration order.
std::vector<Parameter> parameterTable(const Spec &spec);

} // namespace lap::dsl

#endif // LAP_DSL_PARAMETERTABLE_H
