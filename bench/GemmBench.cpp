//===- GemmBench.cpp - lap's GEMM paths at a step's shapes ------*- C++ -*-===//
//
// lap-gemm-bench [--profile FILE] [SHAPE...] [--iters N] [--cold]
//
// Times lap's fp32 GEMM (runtime/kernels/cpu/Gemm.h) on each of its paths
// (sgemm, padded, matmul, blocks) and OpenBLAS's cblas_sgemm (what Debian's
// PyTorch multiplies with), on as many threads as the kernels use, at the
// GEMM shapes of a --profile run's table (FILE: the stderr of a library
// built with `lapc --profile`) or at SHAPEs `TN:MxNxK[:lda,ldb,ldc]` (op(A)
// and op(B), 'N' or 'T'; leading dimensions default to the dense ones). Prints
// one JSON object: per shape each path's GFLOP/s (best of 5 runs of
// `iters` calls, after 0.2 s of warm-up), the path gemm() picks and the
// fastest; and per path the seconds of one pass over the shapes, each weighted
// by its calls in the profile, with the kernels' instruction set (LAP_CPU_ISA)
// and this machine's measured FP32 peak. With --cold each call reads
// operands that are in no cache, as a training step's are (each op's
// inputs were written a few tensors earlier, and a step's tensors span
// hundreds of MiB): consecutive calls cycle through copies of A, B and C
// that together span kColdBytes.
//
//===----------------------------------------------------------------------===//

#include "bench/FmaPeak.h"
#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/platform/CpuFeatures.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using lap::cpu::GemmPath;

struct Shape {
  char transa = 'N', transb = 'N';
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t calls = 1; // per profile, for the weighted totals
};

/// op(X) [rows, cols] stored as op reads it: its stored row count.
int64_t storedRows(char op, int64_t rows, int64_t cols) {
  return op == 'T' ? cols : rows;
}

/// A GEMM's A, B and C in one allocation, each starting at its own offset
/// within a 4 KiB page (0, 1 KiB + 64 and 2 KiB + 128 bytes), as tensors of
/// a memory plan do: matrices at equal page offsets (as separate large
/// allocations are: each mapped pages of its own) slow sgemm by up to 2x
/// through 4 KiB aliasing between their loads and stores.
struct Operands {
  std::vector<float> storage;
  float *a, *b, *c;

  Operands(int64_t aSize, int64_t bSize, int64_t cSize)
      : storage(size_t(aSize + bSize + cSize + 4 * 1024)) {
    float *base =
        storage.data() + (1024 - (uintptr_t(storage.data()) / 4) % 1024);
    a = base;
    b = a + aSize + (1024 - aSize % 1024) % 1024 + 272;
    c = b + bSize + (1024 - (bSize + 272) % 1024) % 1024 + 544;
  }
  // a, b and c point into storage: a move keeps them valid, a copy would not.
  Operands(Operands &&) = default;
  Operands(const Operands &) = delete;
};

/// What --cold's copies of a shape's operands span at least: more than
/// the last-level caches of the CPUs this runs on.
constexpr int64_t kColdBytes = int64_t(256) << 20;

/// `TN:MxNxK[:lda,ldb,ldc]`.
Shape parseShape(const std::string &text) {
  static const std::regex form(
      R"(([NT])([NT]):(\d+)x(\d+)x(\d+)(?::(\d+),(\d+),(\d+))?)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw std::runtime_error("'" + text +
                             "' is no shape: TN:MxNxK[:lda,ldb,ldc], op(A) and "
                             "op(B) each N or T");
  Shape s;
  s.transa = m[1].str()[0];
  s.transb = m[2].str()[0];
  s.M = std::stoll(m[3]);
  s.N = std::stoll(m[4]);
  s.K = std::stoll(m[5]);
  s.lda = m[6].matched ? std::stoll(m[6]) : (s.transa == 'T' ? s.M : s.K);
  s.ldb = m[7].matched ? std::stoll(m[7]) : (s.transb == 'T' ? s.K : s.N);
  s.ldc = m[8].matched ? std::stoll(m[8]) : s.N;
  return s;
}

/// The fp32 GEMM rows of a --profile table ("  TN   sgemm   M x N x K
/// lda ldb ldc  seconds  share  calls ...").
std::vector<Shape> profileShapes(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot open");
  static const std::regex row(
      R"(\s+([NT])([NT])\s+(sgemm|padded|matmul|blocks)\s+(\d+) x (\d+) x (\d+))"
      R"(\s+(\d+) (\d+) (\d+)\s+\S+\s+\S+%\s+(\d+)\s.*)");
  std::vector<Shape> shapes;
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, row))
      shapes.push_back({m[1].str()[0], m[2].str()[0], std::stoll(m[4]),
                        std::stoll(m[5]), std::stoll(m[6]), std::stoll(m[7]),
                        std::stoll(m[8]), std::stoll(m[9]), std::stoll(m[10])});
  if (shapes.empty())
    throw std::runtime_error(path +
                             ": no fp32 GEMM table (the stderr of a library "
                             "built with lapc --profile)");
  return shapes;
}

using Cblas = void (*)(int, int, int, int, int, int, float, const float *, int,
                       const float *, int, float, float *, int);

/// OpenBLAS's cblas_sgemm, where its library is installed (Debian's
/// libopenblas0-pthread), else null.
Cblas openblas() {
  for (const char *name :
       {"libopenblas.so.0",
        "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"})
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return reinterpret_cast<Cblas>(dlsym(handle, "cblas_sgemm"));
  return nullptr;
}

/// GFLOP/s of `run`, one GEMM of `flops`: best of 5 runs of `iters` calls,
/// after 0.2 s of warm-up calls (the first GEMMs of a process run at half
/// speed for a while: oneDNN makes its kernels, clocks rise).
double gflopsOf(const std::function<void()> &run, double flops, int64_t iters) {
  const auto warm = std::chrono::steady_clock::now();
  do
    run();
  while (std::chrono::steady_clock::now() - warm <
         std::chrono::milliseconds(200));
  double best = 1e300;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i)
      run();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                                  .count() /
                              double(iters));
  }
  return flops / best / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::vector<Shape> shapes;
    int64_t iters = 5;
    bool cold = false;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if ((arg == "--profile" || arg == "--iters") && i + 1 == argc)
        throw std::runtime_error(arg + " needs a value");
      if (arg == "--profile") {
        for (const Shape &s : profileShapes(argv[++i]))
          shapes.push_back(s);
      } else if (arg == "--iters") {
        iters = std::max<int64_t>(1, std::atoll(argv[++i]));
      } else if (arg == "--cold") {
        cold = true;
      } else {
        shapes.push_back(parseShape(arg));
      }
    }
    if (shapes.empty()) {
      std::cerr << "usage: lap-gemm-bench [--profile FILE] [SHAPE...] "
                   "[--iters N] [--cold]   SHAPE: TN:MxNxK[:lda,ldb,ldc]\n";
      return 2;
    }
    if (const char *error = lap_cpu_isa_error())
      throw std::runtime_error(error);
    const std::string isa = lap_cpu_isa();
    const int threads = omp_get_max_threads();
    const double peak = lap::bench::fmaPeakGflops(isa, threads);
    const Cblas cblas = openblas();

    const std::vector<std::pair<const char *, GemmPath>> paths = {
        {"sgemm", GemmPath::Sgemm},
        {"padded", GemmPath::Padded},
        {"matmul", GemmPath::Matmul},
        {"blocks", GemmPath::ColumnBlocks}};
    nlohmann::json rows = nlohmann::json::array(),
                   totals = nlohmann::json::object();
    std::mt19937 random(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (const Shape &s : shapes) {
      const int64_t aSize = storedRows(s.transa, s.M, s.K) * s.lda,
                    bSize = storedRows(s.transb, s.K, s.N) * s.ldb;
      const int64_t setBytes = 4 * (aSize + bSize + s.M * s.ldc);
      const int64_t copies =
          cold ? std::max<int64_t>(2, (kColdBytes + setBytes - 1) / setBytes)
               : 1;
      std::vector<Operands> sets;
      sets.reserve(size_t(copies));
      for (int64_t i = 0; i < copies; ++i)
        sets.emplace_back(aSize, bSize, s.M * s.ldc);
      for (int64_t i = 0; i < aSize; ++i)
        sets[0].a[i] = uniform(random);
      for (int64_t i = 0; i < bSize; ++i)
        sets[0].b[i] = uniform(random);
      for (size_t i = 1; i < sets.size(); ++i) {
        std::copy(sets[0].a, sets[0].a + aSize, sets[i].a);
        std::copy(sets[0].b, sets[0].b + bSize, sets[i].b);
      }
      // The operands of the next call.
      size_t next = 0;
      auto operands = [&]() -> const Operands & {
        next = (next + 1) % sets.size();
        return sets[next];
      };
      const double flops = 2.0 * double(s.M) * double(s.N) * double(s.K);
      nlohmann::json gflops;
      auto record = [&](const std::string &name, double g) {
        gflops[name] = g;
        totals[name] =
            totals.value(name, 0.0) + double(s.calls) * flops / g / 1e9;
      };
      for (auto [name, path] : paths)
        record(name, gflopsOf(
                         [&, path = path] {
                           const Operands &o = operands();
                           lap::cpu::gemm(path, s.transa, s.transb, s.M, s.N,
                                          s.K, lap::cpu::fp32(o.a, s.lda),
                                          lap::cpu::fp32(o.b, s.ldb), 0.0f, o.c,
                                          s.ldc);
                         },
                         flops, iters));
      if (cblas)
        record("openblas", gflopsOf(
                               [&] {
                                 const Operands &o = operands();
                                 cblas(101, s.transa == 'T' ? 112 : 111,
                                       s.transb == 'T' ? 112 : 111, int(s.M),
                                       int(s.N), int(s.K), 1.0f, o.a,
                                       int(s.lda), o.b, int(s.ldb), 0.0f, o.c,
                                       int(s.ldc));
                               },
                               flops, iters));
      const GemmPath chosen =
          lap::cpu::gemmPath(s.transa, s.transb, s.N, s.lda, s.ldb);
      std::string fastest = "sgemm";
      for (auto [name, path] : paths)
        if (gflops[name] > gflops[fastest])
          fastest = name;
      rows.push_back({{"gemm", std::string{s.transa, s.transb}},
                      {"M", s.M},
                      {"N", s.N},
                      {"K", s.K},
                      {"lda", s.lda},
                      {"ldb", s.ldb},
                      {"ldc", s.ldc},
                      {"calls", s.calls},
                      {"gflops", gflops},
                      {"chosen", paths[size_t(chosen)].first},
                      {"fastest", fastest}});
      // The chosen path's seconds, weighted like the others.
      totals["chosen"] = totals.value("chosen", 0.0) +
                         double(s.calls) * flops /
                             double(gflops[paths[size_t(chosen)].first]) / 1e9;
    }
    nlohmann::json out{{"cpu", lap::platform::cpuModelName()},
                       {"isa", isa},
                       {"threads", threads},
                       {"peak_gflops", peak},
                       {"openblas", cblas != nullptr},
                       {"cold", cold},
                       {"shapes", rows},
                       {"weighted_seconds", totals}};
    std::cout << out.dump(1) << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "lap-gemm-bench: error: " << e.what() << "\n";
    return 2;
  }
}
