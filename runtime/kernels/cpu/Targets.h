//===- Targets.h - The instruction sets kernels are compiled for -*- C++ -*-===//
//
// Included before any Highway header by every file that dispatches. On
// x86-64: AVX-512, AVX2 (the baseline, x86-64-v3) and `generic`, the
// portable code without hand-written SIMD that CPUs of other architectures
// run too, so that it is tested here. Elsewhere Highway's defaults.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_TARGETS_H
#define LAP_RUNTIME_KERNELS_CPU_TARGETS_H

// x86-64-v3 does not promise AES and PCLMUL; Highway's AVX2 target would.
#define HWY_DISABLE_PCLMUL_AES 1
#if defined(__x86_64__)
// All attainable targets (EMU128 among them) but those below the baseline.
#define HWY_COMPILE_ALL_ATTAINABLE 1
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#endif // LAP_RUNTIME_KERNELS_CPU_TARGETS_H
