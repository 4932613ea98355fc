//===- CpuFeaturesTest.cpp - cpuid against the kernel's view of the CPU ---===//
//
// The feature table reads cpuid bit by bit; Linux reads the same bits and
// lists them in /proc/cpuinfo under its own names. A flag the kernel lists
// must be one cpuid reports, on whatever CPU runs the test. The converse
// need not hold: hypervisors hide flags from the guest kernel's list while
// cpuid still reports them (lzcnt without `abm` on some AMD EPYC guests),
// so a feature cpuid alone reports is named, not failed.
//
//===----------------------------------------------------------------------===//

#include "runtime/platform/CpuFeatures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

using namespace lap::platform;

namespace {

/// The flags of the first processor in /proc/cpuinfo.
std::set<std::string> cpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      return {std::istream_iterator<std::string>(words), {}};
    }
  return {};
}

/// LLVM's names where Linux spells a feature differently.
const std::map<std::string, std::string> kLinuxNames = {
    {"sse3", "pni"},
    {"pclmul", "pclmulqdq"},
    {"sha", "sha_ni"},
    {"sse4.1", "sse4_1"},
    {"sse4.2", "sse4_2"},
    {"bmi", "bmi1"},
    {"rdrnd", "rdrand"},
    {"sahf", "lahf_lm"},
    {"lzcnt", "abm"},
    {"prfchw", "3dnowprefetch"},
    {"avxvnni", "avx_vnni"},
    {"avx512vnni", "avx512_vnni"},
    {"avx512bf16", "avx512_bf16"},
    {"avx512vbmi2", "avx512_vbmi2"},
    {"avx512bitalg", "avx512_bitalg"},
    {"avx512vpopcntdq", "avx512_vpopcntdq"},
    {"avx512fp16", "avx512_fp16"},
};

struct Comparison {
  std::vector<std::string> contradicted; ///< listed by the kernel, not cpuid
  std::vector<std::string> masked;       ///< reported by cpuid, not listed
};

/// The features lap checks, cpuid's answer against the kernel's `flags`.
Comparison compareWithKernel(const std::set<std::string> &flags) {
  Comparison c;
  for (const char *name :
       {"sse2",       "avx",     "avx2",     "fma",      "f16c",
        "bmi",        "bmi2",    "lzcnt",    "movbe",    "popcnt",
        "sse4.2",     "avx512f", "avx512bw", "avx512vl", "avx512vnni",
        "avx512bf16", "vaes",    "gfni",     "sha",      "avxvnni"}) {
    EXPECT_TRUE(isCheckableFeature(name)) << name;
    auto linuxName =
        kLinuxNames.count(name) ? kLinuxNames.at(name) : std::string(name);
    std::string both = name + std::string(" (") + linuxName + ")";
    bool listed = flags.count(linuxName) == 1;
    if (listed && !hostHasFeature(name))
      c.contradicted.push_back(both);
    else if (!listed && hostHasFeature(name))
      c.masked.push_back(both);
  }
  return c;
}

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  std::set<std::string> flags = cpuinfoFlags();
  if (flags.empty())
    GTEST_SKIP() << "no /proc/cpuinfo flags to compare with";
  ASSERT_FALSE(hostFeatures().empty());
  Comparison c = compareWithKernel(flags);
  EXPECT_TRUE(c.contradicted.empty())
      << "/proc/cpuinfo lists what cpuid does not report: "
      << ::testing::PrintToString(c.contradicted);
  for (const std::string &name : c.masked)
    std::printf("note: cpuid reports %s, which /proc/cpuinfo does not list "
                "(a hypervisor masks it)\n",
                name.c_str());
}

// A guest kernel that lists fewer flags than cpuid reports (here every
// feature the test knows hidden from it) is no failure, only a note.
TEST(CpuFeatures, FlagsHiddenFromTheKernelAreNoFailure) {
  std::set<std::string> flags = cpuinfoFlags();
  if (flags.empty())
    GTEST_SKIP() << "no /proc/cpuinfo flags to compare with";
  for (const auto &[llvmName, linuxName] : kLinuxNames)
    flags.erase(linuxName);
  for (const char *name : {"sse2", "avx", "avx2", "fma", "avx512f"})
    flags.erase(name);
  Comparison c = compareWithKernel(flags);
  EXPECT_TRUE(c.contradicted.empty());
  EXPECT_TRUE(hostHasFeature("sse2"));
  EXPECT_NE(std::find(c.masked.begin(), c.masked.end(), "sse2 (sse2)"),
            c.masked.end());
  if (hostHasFeature("lzcnt"))
    EXPECT_NE(std::find(c.masked.begin(), c.masked.end(), "lzcnt (abm)"),
              c.masked.end());
}

TEST(CpuFeatures, UnknownFeaturesAreMissing) {
  EXPECT_FALSE(isCheckableFeature("slow-3ops-lea")); // an LLVM tuning flag
  EXPECT_FALSE(hostHasFeature("avx9000"));
  std::vector<std::string> missing = missingFeatures({"sse2", "avx9000"});
  EXPECT_EQ(missing, std::vector<std::string>{"avx9000"});
  EXPECT_NE(cpuModelName(), "");
}

} // namespace
