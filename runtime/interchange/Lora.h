//===- Lora.h - LoRA adapters folded into their layers ----------*- C++ -*-===//
//
// A model trained under train.lora holds, beside each adapted layer's frozen
// weight W [out, in], the adapters A [rank, in] ("<layer>.lora_A.weight")
// and B [out, rank] ("<layer>.lora_B.weight"), and computes
// x W^T + (x A^T) B^T scale. Folding W + scale B A into the weight gives the
// base model's parameters, which compute the same (`lapc-run merge`,
// `lapc-run export`).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_INTERCHANGE_LORA_H
#define LAP_RUNTIME_INTERCHANGE_LORA_H

#include "dsl/ParameterTable.h"
#include "runtime/interchange/Interchange.h"

#include <string>
#include <vector>

namespace lap::interchange {

/// `tensors`, a model's parameters, with each adapted weight W replaced by
/// W + scale B A (summed in double) and the adapters left out, in order.
/// Throws naming a tensor when an adapter lacks its pair or its layer, or
/// their shapes do not chain.
std::vector<NamedTensor> mergeLora(const std::vector<NamedTensor> &tensors,
                                   double scale);

/// The adapters of `tensors` alone, in order.
std::vector<NamedTensor> loraAdapters(const std::vector<NamedTensor> &tensors);

} // namespace lap::interchange

#endif // LAP_RUNTIME_INTERCHANGE_LORA_H
