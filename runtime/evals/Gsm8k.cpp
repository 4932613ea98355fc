//===- Gsm8k.cpp - Grade-school math word problems ------------------------===//

#include "runtime/evals/Gsm8k.h"

#include "runtime/data/JsonLines.h"

#include <cctype>
#include <stdexcept>

namespace lap::evals {

std::optional<std::string> gsm8kAnswer(std::string_view text) {
  // The regular expression `#### (-?[0-9.,]+)`, first match.
  for (size_t at = text.find("#### "); at != std::string_view::npos;
       at = text.find("#### ", at + 1)) {
    size_t i = at + 5, matched = 0;
    std::string number;
    if (i < text.size() && text[i] == '-')
      number += text[i++];
    for (; i < text.size() && (std::isdigit((unsigned char)text[i]) ||
                               text[i] == '.' || text[i] == ',');
         ++i, ++matched)
      if (text[i] != ',')
        number += text[i];
    if (matched > 0)
      return number;
  }
  return std::nullopt;
}

std::vector<MathProblem> readGsm8k(const std::string &path) {
  std::vector<MathProblem> problems;
  data::readJsonLines(path, "problems", [&](const nlohmann::json &j, int) {
    if (!j.contains("question") || !j.contains("answer"))
      throw std::invalid_argument(
          "needs \"question\" and \"answer\" (GSM8K's layout)");
    MathProblem p;
    p.id = "GSM8K/" + std::to_string(problems.size());
    p.question = j["question"].get<std::string>();
    p.solution = j["answer"].get<std::string>();
    std::optional<std::string> answer = gsm8kAnswer(p.solution);
    if (!answer)
      throw std::invalid_argument(
          "the \"answer\" has no final \"#### number\"");
    p.answer = *answer;
    problems.push_back(std::move(p));
  });
  return problems;
}

TaskScore scoreGsm8k(const std::vector<MathProblem> &problems,
                     const std::vector<Completion> &completions,
                     const std::string &completionsPath) {
  std::vector<std::string> ids;
  for (const MathProblem &p : problems)
    ids.push_back(p.id);
  auto byProblem = completionsByProblem(ids, completions, completionsPath);
  TaskScore score{"gsm8k", problems.size(), 0, {}};
  for (size_t p = 0; p < problems.size(); ++p)
    for (const Completion *c : byProblem[p]) {
      std::optional<std::string> answer = gsm8kAnswer(c->text);
      std::string expected = "expected " + problems[p].answer;
      SampleScore s;
      s.taskId = problems[p].id;
      s.problem = p;
      s.passed = answer == problems[p].answer;
      s.detail = answer ? "answer " + *answer + ", " + expected
                        : "no \"#### number\", " + expected;
      s.completion = c->text;
      score.samples.push_back(std::move(s));
    }
  return score;
}

} // namespace lap::evals
