//===- Generative.cpp - lapc-run eval --task gsm8k|humaneval ----*- C++ -*-===//
//
// Scores completions given in a file: GSM8K by the final answer, HumanEval
// by running each program in the sandbox. Prints one line per sample and
// pass@1; --results writes the same as JSON.
//
//===----------------------------------------------------------------------===//

#include "runtime/evals/Gsm8k.h"
#include "runtime/evals/HumanEval.h"
#include "runtime/platform/Files.h"
#include "runtime/tools/lapc-run/Commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

int lap::cli::scoreCompletions(const EvalOptions &options) {
  std::vector<evals::Completion> completions =
      evals::readCompletions(options.completions);
  evals::TaskScore score;
  if (options.task == "gsm8k") {
    score = evals::scoreGsm8k(evals::readGsm8k(options.data), completions,
                              options.completions);
  } else {
    std::vector<evals::CodingProblem> problems =
        evals::readHumanEval(options.data);
    sandbox::Sandbox sandbox;
    int jobs = options.jobs
                   ? int(options.jobs)
                   : int(std::max(1u, std::thread::hardware_concurrency()));
    fmt::print("sandbox: {}; {} s and {} MiB per program, {} at once\n",
               sandbox.confinement().describe(), sandbox.limits().seconds,
               sandbox.limits().memoryBytes >> 20, jobs);
    score = evals::scoreHumanEval(problems, completions, options.completions,
                                  sandbox, jobs);
  }
  for (const evals::SampleScore &s : score.samples) {
    std::string_view detail = s.detail;
    detail = detail.substr(0, detail.find('\n'));
    fmt::print("{} {} ({})\n", s.taskId, s.passed ? "passed" : "failed",
               detail);
  }
  fmt::print("{}: pass@1 {:.4f} ({} of {} samples passed, {} problems)\n",
             score.task, score.passAt1(), score.passed(), score.samples.size(),
             score.problems);
  if (!options.results.empty())
    platform::writeFileAtomically(options.results,
                                  score.toJson().dump(2) + "\n");
  return 0;
}
