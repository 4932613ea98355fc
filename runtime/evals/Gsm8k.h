//===- Gsm8k.h - Grade-school math word problems ----------------*- C++ -*-===//
//
// GSM8K as OpenAI publishes it: JSONL, one `{"question": "...", "answer":
// "...#### 18"}` a line, the solution's calculator annotations `<<2*9=18>>`
// included. A completion is right when the number after its first "#### "
// equals the reference's, commas removed (the data set's own normalisation,
// which nanochat's evaluation follows).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_EVALS_GSM8K_H
#define LAP_RUNTIME_EVALS_GSM8K_H

#include "runtime/evals/Completions.h"
#include "runtime/evals/TaskScore.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lap::evals {

struct MathProblem {
  std::string id; ///< "GSM8K/<index>"
  std::string question, solution;
  std::string answer; ///< the solution's final number
};

/// Reads a GSM8K file; a line without a final "#### number" is an error
/// naming the file and line.
std::vector<MathProblem> readGsm8k(const std::string &path);

/// The number after the first "#### " in `text` (an optional minus, then
/// digits, dots and commas), commas removed; nullopt when there is none.
std::optional<std::string> gsm8kAnswer(std::string_view text);

/// Each completion right or wrong (completions read from
/// `completionsPath`, for errors).
TaskScore scoreGsm8k(const std::vector<MathProblem> &problems,
                     const std::vector<Completion> &completions,
                     const std::string &completionsPath);

} // namespace lap::evals

#endif // LAP_RUNTIME_EVALS_GSM8K_H
