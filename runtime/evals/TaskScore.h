//===- TaskScore.h - A generative task's score ------------------*- C++ -*-===//
//
// What a task's evaluation reports: each sample's verdict and pass@1, the
// mean over problems of the fraction of their samples that passed (the
// unbiased pass@k estimate of Chen et al. 2021 at k = 1; a categorical
// task's accuracy), and nanochat's centred score, (pass@1 - baseline) /
// (1 - baseline), whose mean over tasks is its ChatCORE.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_EVALS_TASKSCORE_H
#define LAP_RUNTIME_EVALS_TASKSCORE_H

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace lap::evals {

struct SampleScore {
  std::string taskId;
  size_t problem = 0; ///< index in the data
  bool passed = false;
  std::string detail; ///< "answer 18, expected 18", "exit 1: NameError: ..."
  std::string log;    ///< the end of what a program wrote to stderr
  std::string completion; ///< what was scored
};

struct TaskScore {
  std::string task; ///< "gsm8k", "humaneval", "arc", "mmlu", or its name
                    ///< in a ChatCORE ("arc-easy")
  size_t problems = 0;
  double baseline = 0; ///< chance: 0.25 for ARC and MMLU, 0 generative
  std::vector<SampleScore> samples;

  size_t passed() const;
  /// The mean over problems of passed samples / samples.
  double passAt1() const;
  double centred() const { return (passAt1() - baseline) / (1 - baseline); }
  /// {"task", "problems", "samples", "passed", "pass@1", "centred",
  /// "results": [...]}.
  nlohmann::json toJson() const;
};

} // namespace lap::evals

#endif // LAP_RUNTIME_EVALS_TASKSCORE_H
