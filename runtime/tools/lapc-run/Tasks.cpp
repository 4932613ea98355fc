//===- Tasks.cpp - lapc-run eval --task gsm8k|humaneval|arc|mmlu|chatcore ===//
//
// A chat model's tasks, as nanochat's chat_eval runs them. Generative:
// completions given in a file (--completions), or the model's greedy
// answers, each problem asked as one user message (GSM8K's question,
// HumanEval's prompt) and answered with the calculator tool (ChatEngine);
// GSM8K is scored by the final answer, HumanEval by running each program
// in the sandbox. Categorical (ARC, MMLU): the likeliest letter. Prints one
// line per sample, pass@1 and the centred score; --results writes the
// same as JSON, with the completions. ChatCORE: several of these, and the
// mean of their centred scores (nanochat's chat_eval).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Conversations.h"
#include "runtime/evals/Gsm8k.h"
#include "runtime/evals/HumanEval.h"
#include "runtime/platform/Files.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/train/ChatEngine.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/MultipleChoice.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

using namespace lap;

namespace {

/// The first --problems of `problems` (all without it).
template <class T>
std::vector<T> firstProblems(std::vector<T> problems,
                             const cli::EvalOptions &options) {
  if (options.problems > 0 && size_t(options.problems) < problems.size())
    problems.resize(size_t(options.problems));
  return problems;
}

/// The model's greedy answer to each question (one user message each).
std::vector<evals::Completion>
generate(const cli::EvalOptions &options, const std::vector<std::string> &ids,
         const std::vector<std::string> &questions) {
  cli::ModelInstance run(options.model, options.device);
  dsl::Spec spec = train::specOf(run.model);
  data::Tokenizer tokenizer = train::requireRunTokenizer(spec, options.runDir);
  std::string checkpoint =
      train::checkpointOf(options.runDir, options.checkpoint);
  run.restore(checkpoint);
  fmt::print("model {} ({}): greedy answers of at most {} tokens\n", spec.name,
             checkpoint, options.maxTokens);
  train::ChatEngine engine(run.calls, run.params.data(), tokenizer);
  train::SampleOptions greedy;
  greedy.temperature = 0;
  greedy.maxTokens = options.maxTokens;
  std::vector<evals::Completion> completions;
  size_t tooLong = 0;
  for (size_t i = 0; i < questions.size(); ++i) {
    data::Conversation asked;
    asked.messages.push_back({data::Message::Role::User,
                              {{data::MessagePart::Kind::Text, questions[i]}}});
    std::vector<uint32_t> prompt = data::renderPrompt(asked, tokenizer);
    // A prompt the context cannot hold with an answer gets none.
    std::vector<uint32_t> answer;
    if (int64_t(prompt.size()) < run.model.maxSeq())
      answer = engine.answer(prompt, greedy);
    else
      ++tooLong;
    completions.push_back({ids[i], engine.text(answer), int(i + 1)});
  }
  if (tooLong)
    fmt::print("{} of {} prompts fill the model's context of {} tokens: "
               "answered with nothing\n",
               tooLong, questions.size(), run.model.maxSeq());
  return completions;
}

} // namespace

namespace {

/// ARC or MMLU in chat form, scored by the likeliest letter.
evals::TaskScore categorical(const cli::EvalOptions &options) {
  std::vector<train::Question> questions =
      firstProblems(train::readQuestions(options.data), options);
  cli::ModelInstance run(options.model, options.device);
  dsl::Spec spec = train::specOf(run.model);
  data::Tokenizer tokenizer = train::requireRunTokenizer(spec, options.runDir);
  std::string checkpoint =
      train::checkpointOf(options.runDir, options.checkpoint);
  run.restore(checkpoint);
  fmt::print("model {} ({}): the likeliest letter\n", spec.name, checkpoint);
  train::MultipleChoiceResult r = train::evaluateMultipleChoiceChat(
      run.calls, run.params.data(), tokenizer, questions);
  evals::TaskScore score{options.task, questions.size(), 0.25, {}};
  for (size_t i = 0; i < questions.size(); ++i) {
    const train::Question &q = questions[i];
    evals::SampleScore s;
    s.taskId = std::to_string(i);
    s.problem = i;
    s.passed = r.picked[i] == q.answer;
    s.completion = q.labels[r.picked[i]];
    s.detail =
        "picked " + q.labels[r.picked[i]] + ", answer " + q.labels[q.answer];
    score.samples.push_back(std::move(s));
  }
  return score;
}

} // namespace

namespace {

/// The task `options.task` on `options.data`, its samples and score printed
/// under `name`.
evals::TaskScore scoreTask(const cli::EvalOptions &options,
                           const std::string &name) {
  const bool given = !options.completions.empty();
  evals::TaskScore score;
  std::vector<evals::Completion> completions;
  std::string source = given ? options.completions : options.model;
  if (options.task == "arc" || options.task == "mmlu") {
    score = categorical(options);
  } else if (options.task == "gsm8k") {
    std::vector<evals::MathProblem> problems =
        firstProblems(evals::readGsm8k(options.data), options);
    std::vector<std::string> ids, questions;
    for (const evals::MathProblem &p : problems) {
      ids.push_back(p.id);
      questions.push_back(p.question);
    }
    completions = given ? evals::readCompletions(options.completions)
                        : generate(options, ids, questions);
    score = evals::scoreGsm8k(problems, completions, source);
  } else {
    std::vector<evals::CodingProblem> problems =
        firstProblems(evals::readHumanEval(options.data), options);
    std::vector<std::string> ids, prompts;
    for (const evals::CodingProblem &p : problems) {
      ids.push_back(p.id);
      prompts.push_back(p.prompt);
    }
    completions = given ? evals::readCompletions(options.completions)
                        : generate(options, ids, prompts);
    sandbox::Sandbox sandbox;
    int jobs = options.jobs
                   ? int(options.jobs)
                   : int(std::max(1u, std::thread::hardware_concurrency()));
    fmt::print("sandbox: {}; {} s and {} MiB per program, {} at once\n",
               sandbox.confinement().describe(), sandbox.limits().seconds,
               sandbox.limits().memoryBytes >> 20, jobs);
    score = evals::scoreHumanEval(problems, completions, source, sandbox, jobs);
  }
  score.task = name;
  for (const evals::SampleScore &s : score.samples) {
    std::string_view detail = s.detail;
    detail = detail.substr(0, detail.find('\n'));
    fmt::print("{} {} ({})\n", s.taskId, s.passed ? "passed" : "failed",
               detail);
  }
  fmt::print("{}: pass@1 {:.4f} ({} of {} samples passed, {} problems), "
             "centred {:.4f}\n",
             score.task, score.passAt1(), score.passed(), score.samples.size(),
             score.problems, score.centred());
  return score;
}

/// ChatCORE: each NAME=FILE of --data as its task, and the mean of their
/// centred scores.
nlohmann::json chatCore(const cli::EvalOptions &options) {
  nlohmann::json tasks = nlohmann::json::object();
  std::string names;
  double sum = 0;
  for (const std::string &entry : options.dataFiles) {
    size_t equals = entry.find('=');
    std::string name = entry.substr(0, equals);
    std::string kind = name.substr(0, name.find('-'));
    bool known = kind == "arc" || kind == "mmlu" || kind == "gsm8k" ||
                 kind == "humaneval";
    if (equals == std::string::npos || equals + 1 == entry.size() || !known)
      throw std::runtime_error(
          "--data " + entry +
          ": chatcore takes NAME=FILE, NAME arc, mmlu, gsm8k or humaneval, "
          "or one of them and a suffix (arc-easy=ARC-Easy.jsonl)");
    if (tasks.contains(name))
      throw std::runtime_error("--data " + entry + ": a second task named '" +
                               name + "'");
    cli::EvalOptions one = options;
    one.task = kind;
    one.data = entry.substr(equals + 1);
    fmt::print("== {}: {}\n", name, one.data);
    evals::TaskScore score = scoreTask(one, name);
    sum += score.centred();
    names += fmt::format("{}{} {:.4f}", names.empty() ? "" : ", ", name,
                         score.centred());
    tasks[name] = score.toJson();
  }
  if (tasks.empty())
    throw std::runtime_error("--task chatcore scores the tasks --data names "
                             "(NAME=FILE, once per task)");
  double mean = sum / double(tasks.size());
  fmt::print("chatcore: {:.4f}, the mean centred score of {} tasks ({})\n",
             mean, tasks.size(), names);
  return {{"chatcore", mean}, {"tasks", std::move(tasks)}};
}

} // namespace

int lap::cli::evaluateTask(const EvalOptions &options) {
  nlohmann::json results = options.task == "chatcore"
                               ? chatCore(options)
                               : scoreTask(options, options.task).toJson();
  if (!options.results.empty())
    platform::writeFileAtomically(options.results, results.dump(2) + "\n");
  return 0;
}
