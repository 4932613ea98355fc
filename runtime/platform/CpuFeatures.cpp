//===- CpuFeatures.cpp - What this CPU can run ------------------*- C++ -*-===//

#include "runtime/platform/CpuFeatures.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace {

#if defined(__x86_64__)

enum Reg { EAX, EBX, ECX, EDX };
/// Register state the OS must save for a feature's instructions to work.
enum State { Plain, Ymm, Zmm };

struct Feature {
  const char *name; ///< LLVM's name
  unsigned leaf, subleaf;
  Reg reg;
  int bit;
  State state;
};

/// The x86 extensions LLVM can generate code for, where cpuid reports them.
constexpr Feature kFeatures[] = {
    {"sse", 1, 0, EDX, 25, Plain},
    {"sse2", 1, 0, EDX, 26, Plain},
    {"sse3", 1, 0, ECX, 0, Plain},
    {"pclmul", 1, 0, ECX, 1, Plain},
    {"ssse3", 1, 0, ECX, 9, Plain},
    {"fma", 1, 0, ECX, 12, Ymm},
    {"cx16", 1, 0, ECX, 13, Plain},
    {"sse4.1", 1, 0, ECX, 19, Plain},
    {"sse4.2", 1, 0, ECX, 20, Plain},
    {"movbe", 1, 0, ECX, 22, Plain},
    {"popcnt", 1, 0, ECX, 23, Plain},
    {"aes", 1, 0, ECX, 25, Plain},
    {"xsave", 1, 0, ECX, 26, Plain},
    {"avx", 1, 0, ECX, 28, Ymm},
    {"f16c", 1, 0, ECX, 29, Ymm},
    {"rdrnd", 1, 0, ECX, 30, Plain},
    {"bmi", 7, 0, EBX, 3, Plain},
    {"avx2", 7, 0, EBX, 5, Ymm},
    {"bmi2", 7, 0, EBX, 8, Plain},
    {"avx512f", 7, 0, EBX, 16, Zmm},
    {"avx512dq", 7, 0, EBX, 17, Zmm},
    {"rdseed", 7, 0, EBX, 18, Plain},
    {"adx", 7, 0, EBX, 19, Plain},
    {"avx512ifma", 7, 0, EBX, 21, Zmm},
    {"avx512cd", 7, 0, EBX, 28, Zmm},
    {"sha", 7, 0, EBX, 29, Plain},
    {"avx512bw", 7, 0, EBX, 30, Zmm},
    {"avx512vl", 7, 0, EBX, 31, Zmm},
    {"avx512vbmi", 7, 0, ECX, 1, Zmm},
    {"avx512vbmi2", 7, 0, ECX, 6, Zmm},
    {"gfni", 7, 0, ECX, 8, Plain},
    {"vaes", 7, 0, ECX, 9, Ymm},
    {"vpclmulqdq", 7, 0, ECX, 10, Ymm},
    {"avx512vnni", 7, 0, ECX, 11, Zmm},
    {"avx512bitalg", 7, 0, ECX, 12, Zmm},
    {"avx512vpopcntdq", 7, 0, ECX, 14, Zmm},
    {"avx512fp16", 7, 0, EDX, 23, Zmm},
    {"avxvnni", 7, 1, EAX, 4, Ymm},
    {"avx512bf16", 7, 1, EAX, 5, Zmm},
    {"sahf", 0x80000001, 0, ECX, 0, Plain},
    {"lzcnt", 0x80000001, 0, ECX, 5, Plain},
    {"prfchw", 0x80000001, 0, ECX, 8, Plain},
};

const Feature *find(const std::string &name) {
  for (const Feature &f : kFeatures)
    if (name == f.name)
      return &f;
  return nullptr;
}

/// The register state the OS saves on context switches (XCR0), 0 without
/// OSXSAVE.
uint64_t osState() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
    return 0;
  uint32_t lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool has(const Feature &f) {
  unsigned r[4];
  if (!__get_cpuid_count(f.leaf, f.subleaf, &r[EAX], &r[EBX], &r[ECX], &r[EDX]))
    return false;
  if (!(r[f.reg] & (1u << f.bit)))
    return false;
  const uint64_t xcr0 = osState();
  switch (f.state) {
  case Ymm: // SSE and AVX state
    return (xcr0 & 0x6) == 0x6;
  case Zmm: // and the opmask and upper ZMM state
    return (xcr0 & 0xe6) == 0xe6;
  default:
    return true;
  }
}

#endif

} // namespace

bool lap::platform::isCheckableFeature(const std::string &feature) {
#if defined(__x86_64__)
  return find(feature) != nullptr;
#else
  (void)feature;
  return false;
#endif
}

bool lap::platform::hostHasFeature(const std::string &feature) {
#if defined(__x86_64__)
  const Feature *f = find(feature);
  return f && has(*f);
#else
  (void)feature;
  return false;
#endif
}

std::vector<std::string> lap::platform::hostFeatures() {
  std::vector<std::string> names;
#if defined(__x86_64__)
  for (const Feature &f : kFeatures)
    if (has(f))
      names.push_back(f.name);
#endif
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string>
lap::platform::missingFeatures(const std::vector<std::string> &required) {
  std::vector<std::string> missing;
  for (const std::string &f : required)
    if (!hostHasFeature(f))
      missing.push_back(f);
  return missing;
}

std::string lap::platform::cpuModelName() {
#if defined(__x86_64__)
  unsigned top, b, c, d;
  if (__get_cpuid(0x80000000, &top, &b, &c, &d) && top >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      unsigned *r = reinterpret_cast<unsigned *>(brand + 16 * i);
      __get_cpuid(0x80000002 + i, &r[0], &r[1], &r[2], &r[3]);
    }
    std::string name(brand);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty())
      return name;
  }
#endif
  return "unknown";
}
