//===- Profile.cpp - Time per op for `lapc --profile` builds ----*- C++ -*-===//
//
// Generated code compiled with --profile brackets every op with these calls;
// at exit the process prints where the time went, per op kind and for the
// slowest single ops, on stderr.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

struct Entry {
  double seconds = 0;
  int64_t calls = 0;
};

struct Profile {
  std::map<const char *, Entry> ops;
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
  }
};

Profile profile;

} // namespace

extern "C" void lap_cpu_profile_begin(const char *) {
  profile.start = std::chrono::steady_clock::now();
}

extern "C" void lap_cpu_profile_end(const char *label) {
  Entry &e = profile.ops[label];
  e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             profile.start)
                   .count();
  ++e.calls;
}
