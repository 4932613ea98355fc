//===- Parallel.h - The one thread pool: GNU OpenMP -------------*- C++ -*-===//
//
// Kernels, generated loops and oneDNN's GEMMs all run on libgomp's pool
// (Debian's oneDNN uses it), so two pools never spin against each other.
// Clang's OpenMP lowering targets LLVM's libomp, so we call libgomp's entry
// point directly instead of using `#pragma omp`.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_CPU_PARALLEL_H
#define LAP_RUNTIME_KERNELS_CPU_PARALLEL_H

#include <algorithm>
#include <cstdint>

extern "C" {
void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                   unsigned flags);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_get_max_threads(void);
void omp_set_num_threads(int threads);

/// For generated code: calls body(ctx, begin, end) on disjoint chunks that
/// cover [0, n), in parallel when n >= 2 * grain.
void lap_cpu_parallel_for(int64_t n, int64_t grain,
                          void (*body)(void *, int64_t, int64_t), void *ctx);
}

namespace lap::cpu {

/// Starts the pool's threads now (libgomp starts them at the first
/// parallel region and keeps them), so a caller controls what they inherit.
inline void startThreadPool() {
  GOMP_parallel([](void *) {}, nullptr, 0, 0);
}

/// Rows per parallel chunk of rows `width` elements wide, so that a chunk
/// (about `elements` elements) is worth waking a thread for.
inline int64_t rowGrain(int64_t width, int64_t elements = int64_t(1) << 14) {
  return std::max<int64_t>(1, elements / std::max<int64_t>(1, width));
}

/// Calls f(begin, end) on contiguous chunks covering [0, n), one per thread
/// of the pool; serially when n < 2 * grain (not worth waking threads).
template <typename F> void parallelFor(int64_t n, int64_t grain, F &&f) {
  if (n <= 0)
    return;
  if (n < 2 * grain || omp_get_max_threads() == 1) {
    f(int64_t(0), n);
    return;
  }
  struct Job {
    F *f;
    int64_t n;
  } job{&f, n};
  GOMP_parallel(
      [](void *p) {
        auto *j = static_cast<Job *>(p);
        int64_t threads = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t chunk = (j->n + threads - 1) / threads;
        int64_t begin = std::min(j->n, id * chunk);
        int64_t end = std::min(j->n, begin + chunk);
        if (begin < end)
          (*j->f)(begin, end);
      },
      &job, 0, 0);
}

} // namespace lap::cpu

#endif // LAP_RUNTIME_KERNELS_CPU_PARALLEL_H
