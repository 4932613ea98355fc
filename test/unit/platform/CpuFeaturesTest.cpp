//===- CpuFeaturesTest.cpp - cpuid against the kernel's view of the CPU ---===//
//
// The feature table reads cpuid bit by bit; Linux reads the same bits and
// lists them in /proc/cpuinfo under its own names. The two must agree for
// every feature both know, on whatever CPU runs the test.
//
//===----------------------------------------------------------------------===//

#include "runtime/platform/CpuFeatures.h"

#include <gtest/gtest.h>

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

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  std::set<std::string> flags = cpuinfoFlags();
  if (flags.empty())
    GTEST_SKIP() << "no /proc/cpuinfo flags to compare with";
  const std::vector<std::string> host = hostFeatures();
  ASSERT_FALSE(host.empty());
  for (const char *name :
       {"sse2",       "avx",     "avx2",     "fma",      "f16c",
        "bmi",        "bmi2",    "lzcnt",    "movbe",    "popcnt",
        "sse4.2",     "avx512f", "avx512bw", "avx512vl", "avx512vnni",
        "avx512bf16", "vaes",    "gfni",     "sha",      "avxvnni"}) {
    ASSERT_TRUE(isCheckableFeature(name)) << name;
    auto linuxName =
        kLinuxNames.count(name) ? kLinuxNames.at(name) : std::string(name);
    EXPECT_EQ(hostHasFeature(name), flags.count(linuxName) == 1)
        << name << " (/proc/cpuinfo: " << linuxName << ")";
  }
}

TEST(CpuFeatures, UnknownFeaturesAreMissing) {
  EXPECT_FALSE(isCheckableFeature("slow-3ops-lea")); // an LLVM tuning flag
  EXPECT_FALSE(hostHasFeature("avx9000"));
  std::vector<std::string> missing = missingFeatures({"sse2", "avx9000"});
  EXPECT_EQ(missing, std::vector<std::string>{"avx9000"});
  EXPECT_NE(cpuModelName(), "");
}

} // namespace
