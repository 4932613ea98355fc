//===- CpuFeatures.h - What this CPU can run --------------------*- C++ -*-===//
//
// The instruction-set features of the CPU a process runs on, by LLVM's
// names ("avx2", "fma", "avx512f"), read from cpuid together with the
// operating system's support for the wider register files. lapc records
// the features a model.so needs in its manifest; lapc-run refuses a library
// that needs one this CPU lacks, before it runs a single instruction of it.
// Off x86-64 nothing is checkable yet: every list is empty.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_CPUFEATURES_H
#define LAP_RUNTIME_PLATFORM_CPUFEATURES_H

#include <string>
#include <vector>

namespace lap::platform {

/// Whether `feature` is one this code can check on the running CPU: an
/// instruction-set extension, not one of LLVM's tuning flags.
bool isCheckableFeature(const std::string &feature);

/// Whether the running CPU, and its OS, support `feature` (false for one
/// that is not checkable).
bool hostHasFeature(const std::string &feature);

/// The checkable features the running CPU has, sorted.
std::vector<std::string> hostFeatures();

/// Those of `required` the running CPU lacks, unknown ones included.
std::vector<std::string>
missingFeatures(const std::vector<std::string> &required);

/// The CPU's name as it gives it ("AMD EPYC 9R14 96-Core Processor"), or
/// "unknown".
std::string cpuModelName();

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_CPUFEATURES_H
