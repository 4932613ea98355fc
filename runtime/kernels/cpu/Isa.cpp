//===- Isa.cpp - The instruction set the dispatched kernels use -*- C++ -*-===//
//
// The kernels with hand-written SIMD are compiled once per Highway target
// (Targets.h: AVX-512, AVX2 and generic on x86-64) and dispatched at
// their first call to the best target this CPU has. LAP_CPU_ISA names
// another one, so that every path can be exercised on one machine (below
// the best one, oneDNN's GEMMs are limited to AVX2 as well); a name that is
// not compiled in, or that this CPU lacks, is an error, never a SIGILL.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Targets.h"

#include "runtime/kernels/cpu/Isa.h"
#include "runtime/kernels/cpu/Kernels.h"

#include <hwy/highway.h>
#include <hwy/targets.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Target {
  int64_t bit;
  const char *name;
};

/// The user-facing names of Highway's targets.
constexpr Target kTargets[] = {
#if HWY_ARCH_X86
    {HWY_AVX3, "avx512"},
    {HWY_AVX2, "avx2"},
#elif HWY_ARCH_ARM
    {HWY_SVE2_128, "sve2_128"}, {HWY_SVE_256, "sve_256"}, {HWY_SVE2, "sve2"},
    {HWY_SVE, "sve"},           {HWY_NEON, "neon"},
#endif
    {HWY_EMU128, "generic"},
    {HWY_SCALAR, "scalar"},
};

const char *nameOf(int64_t bit) {
  for (const Target &t : kTargets)
    if (t.bit == bit)
      return t.name;
  return hwy::TargetName(bit);
}

/// Names of the targets in `mask`, best first, separated by spaces.
std::string namesOf(int64_t mask) {
  std::string names;
  for (const Target &t : kTargets)
    if (mask & t.bit)
      names += (names.empty() ? "" : " ") + std::string(t.name);
  return names;
}

/// Below the best target, oneDNN's GEMMs keep to AVX2 too (the kernels'
/// baseline), so that a forced AVX2 run is the whole library as an
/// AVX2-only CPU runs it, not AVX2 kernels next to AVX-512 GEMMs. Called
/// before any GEMM: hosts check the choice before a model computes.
void limitGemms(int64_t chosen, int64_t usable) {
#if HWY_ARCH_X86
  if (chosen != (usable & -usable) &&
      dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2) != dnnl_success)
    std::fprintf(stderr, "lap: oneDNN is already in use; its GEMMs keep to "
                         "the best instruction set of this CPU\n");
#else
  (void)chosen;
  (void)usable;
#endif
}

/// The targets compiled in that this CPU can run (Highway reads cpuid).
int64_t runnable() { return hwy::SupportedTargets() & HWY_TARGETS; }

struct Choice {
  int64_t target = 0;
  std::string error;
  std::string available;
};

Choice choose() {
  Choice c;
  const int64_t usable = runnable();
  c.available = namesOf(usable);
  if (usable == 0) {
    c.error = "this CPU has none of the instruction sets the kernels are "
              "compiled for (" +
              namesOf(HWY_TARGETS) + ")";
    return c;
  }
  const char *requested = std::getenv("LAP_CPU_ISA");
  if (!requested || !*requested) {
    c.target = usable & -usable; // the best: the lowest bit
    return c;
  }
  for (const Target &t : kTargets) {
    if (std::string(requested) != t.name)
      continue;
    if (!(HWY_TARGETS & t.bit)) {
      c.error = "LAP_CPU_ISA=" + std::string(requested) +
                ": the kernels are not compiled for it (they are for: " +
                namesOf(HWY_TARGETS) + ")";
    } else if (!(usable & t.bit)) {
      c.error = "LAP_CPU_ISA=" + std::string(requested) +
                ": this CPU cannot run it (it runs: " + c.available + ")";
    } else {
      c.target = t.bit;
      // Dispatch picks the best enabled target: disable the better ones.
      hwy::DisableTargets(HWY_TARGETS & (t.bit - 1));
      limitGemms(t.bit, usable);
    }
    return c;
  }
  c.error = "LAP_CPU_ISA=" + std::string(requested) +
            ": unknown instruction set (this CPU runs: " + c.available + ")";
  return c;
}

const Choice &choice() {
  static const Choice c = choose();
  return c;
}

} // namespace

void lap::cpu::useChosenIsa() {
  const Choice &c = choice();
  if (c.error.empty())
    return;
  // Hosts check lap_cpu_isa_error() first (model.so's entry points do);
  // a kernel called regardless must not run code the CPU lacks.
  std::fprintf(stderr, "lap kernels: %s\n", c.error.c_str());
  std::abort();
}

extern "C" const char *lap_cpu_isa_error(void) {
  const Choice &c = choice();
  return c.error.empty() ? nullptr : c.error.c_str();
}

extern "C" const char *lap_cpu_isa(void) {
  const Choice &c = choice();
  return c.error.empty() ? nameOf(c.target) : "none";
}

extern "C" const char *lap_cpu_isas(void) { return choice().available.c_str(); }
