//===- Kernels.h - CPU kernels that generated model code calls --*- C++ -*-===//
//
// llm.c-style kernels, one per lap op (`<op>_forward` / `<op>_backward`),
// called by the code lapc generates for the CPU (compiler/Target/CPU). C
// linkage and plain types only: the generated code calls these by symbol.
// Their interfaces, and the conventions, are in runtime/kernels/Kernels.def.
//
//  - Tensors are fp32 (bf16, as lap_bf16 bits, in the `_bf16` kernels).
//  - Kernels parallelise with OpenMP (GNU libgomp, the runtime oneDNN uses),
//    so generated code, kernels and GEMMs share one thread pool.
//  - Dropout masks are a function of (seed, key, element): lap_cpu_keep.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_KERNELS_H
#define LAP_RUNTIME_KERNELS_CPU_KERNELS_H

#include "runtime/kernels/KernelEnums.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//--- Instruction sets (Isa.cpp) ---------------------------------------------
// Kernels with hand-written SIMD are compiled for several instruction sets
// ("avx2", "avx512" on x86-64) and run the best one this CPU has, chosen
// once, before the first such call; the environment variable LAP_CPU_ISA
// names another. Everything else targets the library's baseline
// (x86-64-v3: AVX2 and FMA).
// Null, or why the kernels cannot run here: LAP_CPU_ISA names an instruction
// set that is unknown, not compiled in or missing on this CPU (a dispatched
// kernel called regardless aborts with this message).
const char *lap_cpu_isa_error(void);
// The instruction set in use ("avx2"), or "none" when lap_cpu_isa_error().
const char *lap_cpu_isa(void);
// Those compiled in that this CPU runs, best first, separated by spaces.
const char *lap_cpu_isas(void);

//--- Dropout masks (Dropout.cpp) ---------------------------------------------
// Whether element `index` survives under (seed, key) with drop probability
// rate. With mix = splitmix64's finaliser
//   mix(z): z += 0x9E3779B97F4A7C15; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9;
//           z = (z ^ z >> 27) * 0x94D049BB133111EB; return z ^ z >> 31;
// u = mix(mix(seed ^ (key * 0xD1B54A32D192ED03)) + index) and the element
// survives when (u >> 40) * 2^-24 >= rate. Generated code computes the same.
int32_t lap_cpu_keep(uint64_t seed, int64_t key, int64_t index, float rate);

//--- The kernels generated code calls ----------------------------------------
// lap_cpu_<name> for every entry of runtime/kernels/Kernels.def, which
// documents each one.
#define LAP_KERNEL(name, parameters) void lap_cpu_##name parameters;
#include "runtime/kernels/Kernels.def"

#ifdef __cplusplus
}
#endif

#endif // LAP_RUNTIME_KERNELS_CPU_KERNELS_H
