//===- Kernels.h - CUDA kernels that generated model code calls -*- C++ -*-===//
//
// The CUDA kernel library: the same table as the CPU's (runtime/kernels/
// Kernels.def), declared as `lap_cuda_<name>`, called by the host code lapc
// generates for the CUDA target (compiler/Target/CUDA). C linkage and plain
// types only: the generated code calls these by symbol.
//
//  - Every pointer is device memory; scalars are host values.
//  - Kernels enqueue their work on the calling thread's stream
//    (Context.h: lap::cuda::stream()) and return without synchronising;
//    a failure is recorded (lap::cuda::fail) for the entry to report.
//  - Tensors are fp32 (bf16, as lap_bf16 bits, in the `_bf16` kernels) and
//    every sum accumulates in fp32.
//  - Dropout masks are the CPU's: a function of (seed, key, element).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CUDA_KERNELS_H
#define LAP_RUNTIME_KERNELS_CUDA_KERNELS_H

#include "runtime/kernels/KernelEnums.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LAP_KERNEL(name, parameters) void lap_cuda_##name parameters;
#include "runtime/kernels/Kernels.def"

#ifdef __cplusplus
}
#endif

#endif // LAP_RUNTIME_KERNELS_CUDA_KERNELS_H
