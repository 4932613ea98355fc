//===- HumanEval.h - Writing Python functions from docstrings ---*- C++ -*-===//
//
// HumanEval as OpenAI publishes it: JSONL, one `{"task_id": "HumanEval/0",
// "prompt": "...", "entry_point": "...", "test": "..."}` a line (other
// fields, such as "canonical_solution", are ignored). A completion passes
// when the program built from it runs to exit 0 in the sandbox; the
// program is
//  - OpenAI's harness's, prompt + completion + test + check(entry_point),
//    when the completion continues the prompt (the function's body);
//  - nanochat's, the prompt's imports + the code + test + check(...), when
//    the code (the first ```python block of the completion, or all of it)
//    defines the entry point itself, as a chat model answers.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_EVALS_HUMANEVAL_H
#define LAP_RUNTIME_EVALS_HUMANEVAL_H

#include "runtime/evals/Completions.h"
#include "runtime/evals/TaskScore.h"
#include "runtime/sandbox/Sandbox.h"

#include <string>
#include <string_view>
#include <vector>

namespace lap::evals {

struct CodingProblem {
  std::string id, prompt, entryPoint, test;
};

/// Reads a HumanEval file; errors name the file and line.
std::vector<CodingProblem> readHumanEval(const std::string &path);

/// The code of a completion: its first ```python (or ```) block, else all
/// of it; stripped of surrounding white space.
std::string completionCode(std::string_view completion);

/// The program that checks `completion` against `problem` (see above).
std::string humanEvalProgram(const CodingProblem &problem,
                             std::string_view completion);

/// Runs every completion's program in `sandbox`, `jobs` at a time.
TaskScore scoreHumanEval(const std::vector<CodingProblem> &problems,
                         const std::vector<Completion> &completions,
                         const std::string &completionsPath,
                         const sandbox::Sandbox &sandbox, int jobs);

} // namespace lap::evals

#endif // LAP_RUNTIME_EVALS_HUMANEVAL_H
