//===- Completions.cpp - Generated answers to score -----------------------===//

#include "runtime/evals/Completions.h"

#include "runtime/data/JsonLines.h"

#include <stdexcept>
#include <unordered_map>

namespace lap::evals {

std::vector<Completion> readCompletions(const std::string &path) {
  std::vector<Completion> completions;
  data::readJsonLines(
      path, "completions", [&](const nlohmann::json &j, int line) {
        if (!j.contains("task_id") || !j.contains("completion"))
          throw std::invalid_argument("needs \"task_id\" and \"completion\"");
        const nlohmann::json &id = j["task_id"];
        if (!id.is_string() && !id.is_number_unsigned())
          throw std::invalid_argument(
              "\"task_id\" must be a string or a problem's index");
        completions.push_back({id.is_string()
                                   ? id.get<std::string>()
                                   : std::to_string(id.get<size_t>()),
                               j["completion"].get<std::string>(), line});
      });
  return completions;
}

std::vector<std::vector<const Completion *>>
completionsByProblem(const std::vector<std::string> &problemIds,
                     const std::vector<Completion> &completions,
                     const std::string &path) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < problemIds.size(); ++i)
    index.emplace(problemIds[i], i);
  std::vector<std::vector<const Completion *>> byProblem(problemIds.size());
  for (const Completion &c : completions) {
    auto it = index.find(c.taskId);
    size_t problem = it != index.end() ? it->second : problemIds.size();
    if (it == index.end() && !c.taskId.empty() &&
        c.taskId.find_first_not_of("0123456789") == std::string::npos &&
        c.taskId.size() < 10)
      problem = std::stoul(c.taskId);
    if (problem >= problemIds.size())
      throw std::runtime_error(
          path + ":" + std::to_string(c.line) + ": task_id \"" + c.taskId +
          "\" is no problem of the data (ids like \"" + problemIds.front() +
          "\", or indices 0 to " + std::to_string(problemIds.size() - 1) + ")");
    byProblem[problem].push_back(&c);
  }
  size_t missing = 0, first = 0;
  for (size_t i = byProblem.size(); i-- > 0;)
    if (byProblem[i].empty()) {
      ++missing;
      first = i;
    }
  if (missing)
    throw std::runtime_error(
        path + ": no completion for \"" + problemIds[first] + "\"" +
        (missing > 1 ? " nor " + std::to_string(missing - 1) + " other " +
                           (missing > 2 ? "problems" : "problem")
                     : std::string()) +
        " (every problem of the data needs one)");
  return byProblem;
}

} // namespace lap::evals
