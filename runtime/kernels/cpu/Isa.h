//===- Isa.h - Dispatch of the kernels to the CPU's instruction set -*- C++ -*-===//
//
// The C entry points (lap_cpu_isa, lap_cpu_isas, lap_cpu_isa_error) are
// declared in Kernels.h; this header is for the kernels' dispatchers.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_ISA_H
#define LAP_RUNTIME_KERNELS_CPU_ISA_H

namespace lap::cpu {

/// Applies LAP_CPU_ISA before a dispatched kernel's first call. Every
/// dispatcher calls it; after the first call it is one load and a branch.
void useChosenIsa();

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_ISA_H
