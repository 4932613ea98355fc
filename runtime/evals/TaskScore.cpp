//===- TaskScore.cpp - A generative task's score --------------------------===//

#include "runtime/evals/TaskScore.h"

namespace lap::evals {

size_t TaskScore::passed() const {
  size_t n = 0;
  for (const SampleScore &s : samples)
    n += s.passed;
  return n;
}

double TaskScore::passAt1() const {
  std::vector<double> tried(problems), passed(problems);
  for (const SampleScore &s : samples) {
    tried[s.problem] += 1;
    passed[s.problem] += s.passed;
  }
  double sum = 0;
  size_t counted = 0;
  for (size_t p = 0; p < problems; ++p)
    if (tried[p] > 0) {
      sum += passed[p] / tried[p];
      ++counted;
    }
  return counted ? sum / double(counted) : 0;
}

nlohmann::json TaskScore::toJson() const {
  nlohmann::json results = nlohmann::json::array();
  for (const SampleScore &s : samples) {
    nlohmann::json r = {{"task_id", s.taskId},
                        {"passed", s.passed},
                        {"detail", s.detail},
                        {"completion", s.completion}};
    if (!s.log.empty())
      r["stderr"] = s.log;
    results.push_back(std::move(r));
  }
  return {
      {"task", task},       {"problems", problems}, {"samples", samples.size()},
      {"passed", passed()}, {"pass@1", passAt1()},  {"centred", centred()},
      {"results", results}};
}

} // namespace lap::evals
