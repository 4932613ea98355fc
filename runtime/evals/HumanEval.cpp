//===- HumanEval.cpp - Writing Python functions from docstrings -----------===//

#include "runtime/evals/HumanEval.h"

#include "runtime/data/JsonLines.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <thread>

namespace lap::evals {

namespace {

std::string_view strip(std::string_view s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos)
    return {};
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

/// The import lines at the top of a prompt, before its first line that is
/// neither an import nor a comment (nanochat's extract_imports).
std::string promptImports(std::string_view prompt) {
  std::string imports;
  for (size_t start = 0; start <= prompt.size();) {
    size_t end = std::min(prompt.find('\n', start), prompt.size());
    std::string_view line = strip(prompt.substr(start, end - start));
    start = end + 1;
    if (line.substr(0, 7) == "import " || line.substr(0, 5) == "from ") {
      imports += (imports.empty() ? "" : "\n") + std::string(line);
    } else if (!line.empty() && line[0] != '#') {
      break;
    }
  }
  return imports;
}

/// The last `max` bytes of `text`, for a sample's detail.
std::string tail(const std::string &text, size_t max = 400) {
  std::string_view s = strip(text);
  return std::string(s.size() > max ? s.substr(s.size() - max) : s);
}

} // namespace

std::vector<CodingProblem> readHumanEval(const std::string &path) {
  std::vector<CodingProblem> problems;
  data::readJsonLines(path, "problems", [&](const nlohmann::json &j, int) {
    for (const char *field : {"task_id", "prompt", "entry_point", "test"})
      if (!j.contains(field))
        throw std::invalid_argument(
            "needs \"task_id\", \"prompt\", \"entry_point\" and \"test\" "
            "(HumanEval's layout)");
    static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
    if (!std::regex_match(j["entry_point"].get<std::string>(), identifier))
      throw std::invalid_argument("\"entry_point\" is not a Python name");
    problems.push_back(
        {j["task_id"].get<std::string>(), j["prompt"].get<std::string>(),
         j["entry_point"].get<std::string>(), j["test"].get<std::string>()});
  });
  return problems;
}

std::string completionCode(std::string_view completion) {
  static const std::regex block(R"(```(?:python)?[ \t\r]*\n([\s\S]*?)\n```)");
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(completion.begin(), completion.end(), match, block))
    return std::string(
        strip(completion.substr(size_t(match[1].first - completion.begin()),
                                size_t(match[1].length()))));
  return std::string(strip(completion));
}

std::string humanEvalProgram(const CodingProblem &problem,
                             std::string_view completion) {
  std::string check = "check(" + problem.entryPoint + ")";
  std::string code = completionCode(completion);
  bool defines =
      std::regex_search(code, std::regex("(^|\\n)[ \\t]*def[ \\t]+" +
                                         problem.entryPoint + "[ \\t]*\\("));
  if (defines)
    return promptImports(problem.prompt) + "\n\n" + code + "\n\n" +
           problem.test + "\n" + check;
  return problem.prompt + std::string(completion) + "\n" + problem.test + "\n" +
         check;
}

TaskScore scoreHumanEval(const std::vector<CodingProblem> &problems,
                         const std::vector<Completion> &completions,
                         const std::string &completionsPath,
                         const sandbox::Sandbox &sandbox, int jobs) {
  std::vector<std::string> ids;
  for (const CodingProblem &p : problems)
    ids.push_back(p.id);
  auto byProblem = completionsByProblem(ids, completions, completionsPath);
  TaskScore score{"humaneval", problems.size(), 0, {}};
  std::vector<std::pair<size_t, const Completion *>> work;
  for (size_t p = 0; p < problems.size(); ++p)
    for (const Completion *c : byProblem[p]) {
      work.emplace_back(p, c);
      SampleScore s;
      s.taskId = problems[p].id;
      s.problem = p;
      s.completion = c->text;
      score.samples.push_back(std::move(s));
    }

  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failureLock;
  auto worker = [&] {
    for (size_t i; (i = next++) < work.size();) {
      auto [p, completion] = work[i];
      try {
        sandbox::Result r =
            sandbox.runPython(humanEvalProgram(problems[p], completion->text));
        SampleScore &s = score.samples[i];
        s.passed = r.passed();
        s.detail = r.describe(sandbox.limits());
        s.log = tail(r.err);
        if (!s.passed && !s.log.empty())
          s.detail += ": " + s.log.substr(s.log.rfind('\n') + 1);
      } catch (...) {
        std::lock_guard<std::mutex> hold(failureLock);
        failure = std::current_exception();
        next = work.size();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::max(jobs, 1); ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
  if (failure)
    std::rethrow_exception(failure);
  return score;
}

} // namespace lap::evals
