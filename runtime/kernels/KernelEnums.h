//===- KernelEnums.h - Enumerations in kernel interfaces --------*- C++ -*-===//
//
// The kinds that cross the line between generated code and kernels
// (runtime/kernels/Kernels.def): the compiler passes these values, the
// kernels switch on them, both from this header.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_KERNELENUMS_H
#define LAP_RUNTIME_KERNELS_KERNELENUMS_H

#include <stdint.h>

/// The losses of lap_*_row_loss_{forward,backward}.
enum lap_row_loss : int32_t {
  LAP_ROW_LOSS_SOFT_CROSS_ENTROPY = 0, ///< lap.soft_cross_entropy
  LAP_ROW_LOSS_BCE_WITH_LOGITS = 1,    ///< lap.bce_with_logits
  LAP_ROW_LOSS_DINO = 2,               ///< lap.dino_loss
};

/// How the GEMMs of the linear kernels take their operands
/// (train.matmul_precision): as given, or rounded to bf16 (to nearest, ties
/// to even) and multiplied with fp32 accumulation (the product of two bf16
/// values is exact in fp32). Inputs and outputs are fp32 either way.
enum lap_matmul : int32_t {
  LAP_MATMUL_FP32 = 0,
  LAP_MATMUL_BF16 = 1,
};

/// A bf16 value as its bits (the high half of an fp32's): the element of a
/// bf16 model's tensors.
typedef uint16_t lap_bf16;

#endif // LAP_RUNTIME_KERNELS_KERNELENUMS_H
