//===- Profile.cpp - Time per op for `lapc --profile` builds ----*- C++ -*-===//
//
// Generated code compiled with --profile brackets every op with these calls;
// at exit the process prints where the time went, per op kind, and then
// per GEMM shape (Profile.h), on stderr.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct Entry {
  double seconds = 0;
  int64_t calls = 0;
};

/// A GEMM's shape and path, as the table prints it.
using GemmKey = std::tuple<const char *, char, char, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t>;

struct Profile {
  std::map<const char *, Entry> ops;
  std::map<GemmKey, std::vector<double>> gemms; // each call's seconds
  std::chrono::steady_clock::time_point start;

  ~Profile() {
    if (ops.empty())
      return;
    std::map<std::string, Entry> kinds;
    double total = 0;
    for (auto &[label, e] : ops) {
      std::string kind(
          label,
          std::find(label, label + std::char_traits<char>::length(label), ' '));
      kinds[kind].seconds += e.seconds;
      kinds[kind].calls += e.calls;
      total += e.seconds;
    }
    std::vector<std::pair<std::string, Entry>> sorted(kinds.begin(),
                                                      kinds.end());
    std::sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) {
      return a.second.seconds > b.second.seconds;
    });
    std::fprintf(stderr, "\nprofile: %.3f s in generated code and kernels\n",
                 total);
    std::fprintf(stderr, "  %-28s %10s %7s %8s\n", "op", "seconds", "share",
                 "calls");
    for (auto &[kind, e] : sorted)
      std::fprintf(stderr, "  %-28s %10.4f %6.1f%% %8lld\n", kind.c_str(),
                   e.seconds, 100 * e.seconds / total, (long long)e.calls);
    printGemms(total);
  }

  /// Each GEMM shape: its share of the profiled time, and its GFLOP/s over
  /// all calls and in its median call (the first calls, which make
  /// oneDNN's kernels and fault in pages, weigh on the former only).
  void printGemms(double total) const {
    if (gemms.empty())
      return;
    struct Row {
      GemmKey key;
      double seconds;
      std::vector<double> calls;
    };
    std::vector<Row> sorted;
    for (auto &[key, calls] : gemms)
      sorted.push_back(
          {key, std::accumulate(calls.begin(), calls.end(), 0.0), calls});
    std::sort(sorted.begin(), sorted.end(),
              [](auto &a, auto &b) { return a.seconds > b.seconds; });
    std::fprintf(stderr, "\n  %-4s %-7s %-22s %-16s %10s %7s %8s %8s %8s\n",
                 "gemm", "path", "M x N x K", "lda ldb ldc", "seconds", "share",
                 "calls", "GFLOP/s", "median");
    for (auto &[key, seconds, calls] : sorted) {
      auto [path, transa, transb, M, N, K, lda, ldb, ldc] = key;
      std::nth_element(calls.begin(), calls.begin() + calls.size() / 2,
                       calls.end());
      const double median = calls[calls.size() / 2];
      const double flops = 2.0 * double(M) * double(N) * double(K);
      const std::string shape = std::to_string(M) + " x " + std::to_string(N) +
                                " x " + std::to_string(K);
      const std::string lds = std::to_string(lda) + " " + std::to_string(ldb) +
                              " " + std::to_string(ldc);
      std::fprintf(stderr,
                   "  %c%c   %-7s %-22s %-16s %10.4f %6.1f%% %8lld %8.0f "
                   "%8.0f\n",
                   transa, transb, path, shape.c_str(), lds.c_str(), seconds,
                   100 * seconds / total, (long long)calls.size(),
                   flops * double(calls.size()) / seconds / 1e9,
                   flops / median / 1e9);
    }
  }
};

/// Made at the first op of a --profile build, never in others: a global
/// would be constructed as the library loads, before hosts check that the
/// CPU runs its code, and its constructor may use AVX.
Profile &profile() {
  static Profile made;
  return made;
}

/// Whether an op has begun: constant-initialised.
bool active = false;

} // namespace

bool lap::cpu::profiling() { return active; }

void lap::cpu::recordGemm(const char *path, char transa, char transb, int64_t M,
                          int64_t N, int64_t K, int64_t lda, int64_t ldb,
                          int64_t ldc, double seconds) {
  profile().gemms[{path, transa, transb, M, N, K, lda, ldb, ldc}].push_back(
      seconds);
}

extern "C" void lap_cpu_profile_begin(const char *) {
  active = true;
  profile().start = std::chrono::steady_clock::now();
}

extern "C" void lap_cpu_profile_end(const char *label) {
  Profile &p = profile();
  Entry &e = p.ops[label];
  e.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start)
          .count();
  ++e.calls;
}
