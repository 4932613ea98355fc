//===- FmaPeak.h - This machine's measured FP32 peak ------------*- C++ -*-===//
//
// Benchmarks report the fraction of the peak of the machine they run on,
// measured, never assumed: machines differ (AVX-512 or only AVX2, clocks).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_BENCH_FMAPEAK_H
#define LAP_BENCH_FMAPEAK_H

#include <string>

namespace lap::bench {

/// FP32 GFLOP/s of `threads` threads running independent FMA chains (12
/// accumulators each, enough to fill two FMA pipes of latency 4 or more)
/// with the vectors of `isa`: "avx512" (16 floats) or "avx2" (8; also for
/// "generic", whose code is AVX2 on x86-64). Best of a few runs.
double fmaPeakGflops(const std::string &isa, int threads);

} // namespace lap::bench

#endif // LAP_BENCH_FMAPEAK_H
