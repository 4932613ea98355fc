//===- Completions.h - Generated answers to score ---------------*- C++ -*-===//
//
// Completions given in a file instead of generated, as OpenAI's human-eval
// harness takes them: JSONL, one `{"task_id": ..., "completion": "..."}` a
// line, any number per problem (pass@1 is then the mean of each problem's
// fraction passed). A task_id is the problem's id ("HumanEval/0",
// "GSM8K/12") or its 0-based index in the data file.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_EVALS_COMPLETIONS_H
#define LAP_RUNTIME_EVALS_COMPLETIONS_H

#include <string>
#include <vector>

namespace lap::evals {

struct Completion {
  std::string taskId, text;
  int line = 0; ///< in its file, for errors
};

/// Reads a completions file; errors name the file and line.
std::vector<Completion> readCompletions(const std::string &path);

/// The completions of each problem (ids `problemIds`, in order), read from
/// `path`. An id that is no problem's, or a problem without any
/// completion, is an error naming the file (and line).
std::vector<std::vector<const Completion *>>
completionsByProblem(const std::vector<std::string> &problemIds,
                     const std::vector<Completion> &completions,
                     const std::string &path);

} // namespace lap::evals

#endif // LAP_RUNTIME_EVALS_COMPLETIONS_H
