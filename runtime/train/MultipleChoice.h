//===- MultipleChoice.h - Multiple-choice log-likelihood evals --*- C++ -*-===//
//
// ARC- and MMLU-style questions scored as nanochat and the lm-eval harness
// do for base models: each choice is appended to the question and the
// choice with the highest total log-likelihood of its own tokens wins; and
// as nanochat scores chat models: the choices listed with their letters in
// a user message, the likeliest letter to begin the answer wins.
// JSONL, one question per line, in any of these layouts:
//   ARC (Hugging Face): {"question": "...", "choices": {"text": [...],
//          "label": ["A", ...]}, "answerKey": "A"}
//   ARC (AI2's own files): {"question": {"stem": "...", "choices":
//          [{"text": "...", "label": "A"}, ...]}, "answerKey": "A"}
//   MMLU: {"question": "...", "choices": ["...", ...], "answer": 0}
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_MULTIPLECHOICE_H
#define LAP_RUNTIME_TRAIN_MULTIPLECHOICE_H

#include "runtime/data/Tokenizer.h"
#include "runtime/model/ModelCalls.h"

#include <string>
#include <vector>

namespace lap::train {

struct Question {
  std::string question;
  std::vector<std::string> choices;
  std::vector<std::string> labels; ///< ARC's ("A", "1", ...); MMLU: A, B, ...
  size_t answer = 0;
};

/// Reads a JSONL file of questions; errors name the file and line (and
/// the column of a byte that is not JSON or not UTF-8). A file without
/// questions is an error.
std::vector<Question> readQuestions(const std::string &path);

struct MultipleChoiceResult {
  size_t questions = 0, correct = 0;
  std::vector<size_t> picked; ///< the chosen choice per question
  double accuracy() const {
    return questions ? double(correct) / double(questions) : 0;
  }
};

/// Scores every question with the model `calls` makes (parameters
/// `params`, its device's memory).
MultipleChoiceResult
evaluateMultipleChoice(ModelCalls &calls, const float *params,
                       const data::Tokenizer &tokenizer,
                       const std::vector<Question> &questions);

/// nanochat's chat form of a question (tasks/common.py render_mc): the
/// question, each choice followed by "=" and its label, and "Respond only
/// with the letter of the correct answer."
std::string chatQuestion(const Question &question);

/// Scores every question as nanochat's categorical chat evaluation: the
/// chat question as the user's message, and the label whose token the
/// model finds likeliest to begin the answer (each label must be one
/// token). The oldest tokens go first when a prompt does not fit.
MultipleChoiceResult
evaluateMultipleChoiceChat(ModelCalls &calls, const float *params,
                           const data::Tokenizer &tokenizer,
                           const std::vector<Question> &questions);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_MULTIPLECHOICE_H
