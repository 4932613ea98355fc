//===- StepArgs.h - What the step benchmarks share --------------*- C++ -*-===//
//
// lap-step-bench (the CPU) and lap-gpu-step-bench read the same flags and
// count a training step's work the same way.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_BENCH_STEPARGS_H
#define LAP_BENCH_STEPARGS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace lap::bench {

/// The value after `--name` on the command line, or "".
inline std::string option(int argc, char **argv, const std::string &name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name)
      return argv[i + 1];
  return "";
}

/// The integer after `--name`, or `fallback`.
inline int64_t flag(int argc, char **argv, const std::string &name,
                    int64_t fallback) {
  std::string value = option(argc, argv, name);
  return value.empty() ? fallback : std::atoll(value.c_str());
}

/// FLOPs of one training step of `batch` samples: per token (gpt, at
/// sequence `seq`) or per image, from the manifest's derived values.
inline double trainStepFlops(const nlohmann::json &manifest, int64_t batch,
                             int64_t seq) {
  const auto &derived = manifest["derived"];
  bool text = derived.contains("flops_per_token.train_step");
  double perSample =
      text ? double(derived["flops_per_token.train_step"]) * double(seq)
           : double(derived["flops_per_image.train_step"]);
  return perSample * double(batch);
}

} // namespace lap::bench

#endif // LAP_BENCH_STEPARGS_H
