//===- FmaPeak.cpp - This machine's measured FP32 peak ----------*- C++ -*-===//

#include "bench/FmaPeak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;
constexpr long kIterations = 100'000'000;

/// Returns FLOPs done; the sum keeps the chains alive.
__attribute__((target("avx512f"))) double fma512(float *sink) {
  __m512 acc[kChains];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_ps(float(i));
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  *sink = _mm512_reduce_add_ps(sum);
  return 2.0 * 16 * kChains * double(kIterations);
}

__attribute__((target("avx2,fma"))) double fma256(float *sink) {
  __m256 acc[kChains];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm256_set1_ps(float(i));
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  *sink = lanes[0];
  return 2.0 * 8 * kChains * double(kIterations);
}

} // namespace

double lap::bench::fmaPeakGflops(const std::string &isa, int threads) {
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    std::vector<float> sinks(size_t(threads) * 16);
    std::vector<double> flops(static_cast<size_t>(threads), 0.0);
    std::vector<std::thread> workers;
    auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        flops[t] =
            isa == "avx512" ? fma512(&sinks[t * 16]) : fma256(&sinks[t * 16]);
      });
    for (std::thread &w : workers)
      w.join();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double total = 0;
    for (double f : flops)
      total += f;
    best = std::max(best, total / seconds / 1e9);
  }
  return best;
}
