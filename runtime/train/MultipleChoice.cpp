//===- MultipleChoice.cpp - Multiple-choice log-likelihood evals -*- C++ -*-===//

#include "runtime/train/MultipleChoice.h"

#include "runtime/platform/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

using namespace lap;
using namespace lap::train;

std::vector<Question> lap::train::readQuestions(const std::string &path) {
  std::ifstream in = platform::openRegularFile(path);
  std::vector<Question> questions;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto fail = [&](const std::string &why) {
      return std::runtime_error(path + ":" + std::to_string(number) + ": " +
                                why);
    };
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw fail("not a JSON object");
    if (!j.contains("question") || !j["question"].is_string() ||
        !j.contains("choices"))
      throw fail("needs \"question\" and \"choices\"");
    Question q;
    q.question = j["question"];
    const auto &choices = j["choices"];
    if (choices.is_array() && j.contains("answer") &&
        j["answer"].is_number_integer()) {
      for (const auto &c : choices)
        q.choices.push_back(c.get<std::string>());
      q.answer = j["answer"].get<size_t>();
    } else if (choices.is_object() && choices.contains("text") &&
               choices.contains("label") && j.contains("answerKey")) {
      std::vector<std::string> labels = choices["label"];
      q.choices = choices["text"].get<std::vector<std::string>>();
      auto it = std::find(labels.begin(), labels.end(),
                          j["answerKey"].get<std::string>());
      if (it == labels.end() || labels.size() != q.choices.size())
        throw fail("\"answerKey\" is not one of the labels");
      q.answer = size_t(it - labels.begin());
    } else {
      throw fail("choices must be a list with an integer \"answer\" (MMLU) or "
                 "{\"text\", \"label\"} with \"answerKey\" (ARC)");
    }
    if (q.choices.size() < 2 || q.answer >= q.choices.size())
      throw fail("needs two or more choices and an answer among them");
    questions.push_back(std::move(q));
  }
  return questions;
}

namespace {

/// log p(tokens[i] | tokens[< i]) summed over i in [from, to), from the
/// logits row of position i - 1.
double logLikelihood(const float *logits, int64_t vocab,
                     const std::vector<int32_t> &tokens, size_t from,
                     size_t to) {
  double total = 0;
  for (size_t i = from; i < to; ++i) {
    const float *row = logits + (i - 1) * vocab;
    double max = *std::max_element(row, row + vocab), sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(double(row[v]) - max);
    total += double(row[tokens[i]]) - max - std::log(sum);
  }
  return total;
}

} // namespace

MultipleChoiceResult
lap::train::evaluateMultipleChoice(ModelOnDevice &calls, const float *params,
                                   const data::Tokenizer &tokenizer,
                                   const std::vector<Question> &questions) {
  const LoadedModel &model = calls.model();
  int64_t vocab = model.manifest()["limits"]["vocab"];
  int64_t maxSeq = model.maxSeq();
  AlignedBuffer logits(size_t(maxSeq * vocab) * 4);
  MultipleChoiceResult result;
  for (const Question &q : questions) {
    std::vector<uint32_t> context = tokenizer.encode(q.question);
    double best = -std::numeric_limits<double>::infinity();
    size_t picked = 0;
    for (size_t c = 0; c < q.choices.size(); ++c) {
      std::vector<uint32_t> choice = tokenizer.encode(" " + q.choices[c]);
      // <|bos|>, the question, the choice; the oldest context goes first
      // when it does not fit.
      std::vector<int32_t> tokens{int32_t(tokenizer.bosId())};
      size_t room =
          size_t(maxSeq) - 1 - std::min(choice.size(), size_t(maxSeq) - 2);
      size_t skip = context.size() > room ? context.size() - room : 0;
      tokens.insert(tokens.end(), context.begin() + long(skip), context.end());
      size_t from = tokens.size();
      tokens.insert(tokens.end(), choice.begin(),
                    choice.begin() +
                        long(std::min(choice.size(), size_t(maxSeq) - from)));
      std::vector<int32_t> targets(tokens.size(), -1);
      const void *tensors[] = {tokens.data(), targets.data()};
      lap_batch batch{1, int64_t(tokens.size()), 2, tensors};
      calls.forward(params, batch, logits.as<float>());
      double score =
          logLikelihood(logits.as<float>(), vocab, tokens, from, tokens.size());
      if (score > best) {
        best = score;
        picked = c;
      }
    }
    result.picked.push_back(picked);
    result.correct += picked == q.answer;
    ++result.questions;
  }
  return result;
}
