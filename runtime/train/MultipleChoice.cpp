//===- MultipleChoice.cpp - Multiple-choice log-likelihood evals -*- C++ -*-===//

#include "runtime/train/MultipleChoice.h"

#include "runtime/data/Conversations.h"
#include "runtime/data/JsonLines.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

using namespace lap;
using namespace lap::train;

namespace {

/// The answer's index among `labels`; throws `why` when it is not one.
size_t labelIndex(const std::vector<std::string> &labels,
                  const nlohmann::json &answerKey) {
  auto it =
      std::find(labels.begin(), labels.end(), answerKey.get<std::string>());
  if (it == labels.end())
    throw std::invalid_argument("\"answerKey\" is not one of the labels");
  return size_t(it - labels.begin());
}

/// One line's question in whichever layout it has.
Question questionOf(const nlohmann::json &j) {
  Question q;
  const nlohmann::json *question =
      j.contains("question") ? &j["question"] : nullptr;
  if (question && question->is_object() && question->contains("stem")) {
    // AI2's ARC files: the choices inside the question, each with its label.
    q.question = (*question)["stem"].get<std::string>();
    for (const nlohmann::json &c : question->at("choices")) {
      q.choices.push_back(c.at("text").get<std::string>());
      q.labels.push_back(c.at("label").get<std::string>());
    }
    q.answer = labelIndex(q.labels, j.at("answerKey"));
    return q;
  }
  if (!question || !question->is_string() || !j.contains("choices"))
    throw std::invalid_argument(
        "needs \"question\" and \"choices\", or a \"question\" with "
        "\"stem\" and \"choices\" (AI2's ARC)");
  q.question = question->get<std::string>();
  const nlohmann::json &choices = j["choices"];
  if (choices.is_array() && j.contains("answer") &&
      j["answer"].is_number_integer() && j["answer"] >= 0) {
    q.choices = choices.get<std::vector<std::string>>();
    q.answer = j["answer"].get<size_t>();
    for (size_t c = 0; c < q.choices.size() && c < 26; ++c)
      q.labels.push_back(std::string(1, char('A' + c)));
  } else if (choices.is_object() && choices.contains("text") &&
             choices.contains("label") && j.contains("answerKey")) {
    q.choices = choices["text"].get<std::vector<std::string>>();
    q.labels = choices["label"].get<std::vector<std::string>>();
    if (q.labels.size() != q.choices.size())
      throw std::invalid_argument("\"label\" and \"text\" differ in length");
    q.answer = labelIndex(q.labels, j["answerKey"]);
  } else {
    throw std::invalid_argument(
        "choices must be a list with an integer \"answer\" (MMLU) or "
        "{\"text\", \"label\"} with \"answerKey\" (ARC)");
  }
  return q;
}

} // namespace

std::vector<Question> lap::train::readQuestions(const std::string &path) {
  std::vector<Question> questions;
  data::readJsonLines(path, "questions", [&](const nlohmann::json &j, int) {
    Question q = questionOf(j);
    if (q.choices.size() < 2 || q.answer >= q.choices.size())
      throw std::invalid_argument(
          "needs two or more choices and an answer among them");
    if (q.labels.size() != q.choices.size())
      throw std::invalid_argument("more than 26 choices");
    questions.push_back(std::move(q));
  });
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
lap::train::evaluateMultipleChoice(ModelCalls &calls, const float *params,
                                   const data::Tokenizer &tokenizer,
                                   const std::vector<Question> &questions) {
  const LoadedModel &model = calls.model();
  int64_t vocab = model.manifest()["limits"]["vocab"];
  int64_t maxSeq = model.maxSeq();
  const auto batchTensors = int32_t(model.manifest()["batch"].size());
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
      // A padded model (train.data.packing: padded) also takes the row's
      // length: all of it.
      const int32_t length = int32_t(tokens.size());
      const void *tensors[] = {tokens.data(), targets.data(), &length};
      lap_batch batch{1, int64_t(tokens.size()), batchTensors, tensors};
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

std::string lap::train::chatQuestion(const Question &question) {
  std::string text = "Multiple Choice question: " + question.question + "\n";
  for (size_t c = 0; c < question.choices.size(); ++c)
    text += "- " + question.choices[c] + "=" + question.labels[c] + "\n";
  return text + "\nRespond only with the letter of the correct answer.";
}

MultipleChoiceResult
lap::train::evaluateMultipleChoiceChat(ModelCalls &calls, const float *params,
                                       const data::Tokenizer &tokenizer,
                                       const std::vector<Question> &questions) {
  const LoadedModel &model = calls.model();
  int64_t vocab = model.manifest()["limits"]["vocab"];
  size_t maxSeq = size_t(model.maxSeq());
  const auto batchTensors = int32_t(model.manifest()["batch"].size());
  AlignedBuffer logits(maxSeq * size_t(vocab) * 4);
  MultipleChoiceResult result;
  for (const Question &q : questions) {
    data::Conversation asked;
    asked.messages.push_back(
        {data::Message::Role::User,
         {{data::MessagePart::Kind::Text, chatQuestion(q)}}});
    std::vector<uint32_t> prompt = data::renderPrompt(asked, tokenizer);
    if (prompt.size() > maxSeq)
      prompt.erase(prompt.begin(), prompt.end() - long(maxSeq));
    std::vector<int32_t> tokens(prompt.begin(), prompt.end());
    std::vector<int32_t> targets(tokens.size(), -1);
    const int32_t length = int32_t(tokens.size());
    const void *tensors[] = {tokens.data(), targets.data(), &length};
    lap_batch batch{1, int64_t(tokens.size()), batchTensors, tensors};
    calls.forward(params, batch, logits.as<float>());
    const float *last = logits.as<float>() + (tokens.size() - 1) * vocab;
    size_t picked = 0;
    float best = -std::numeric_limits<float>::infinity();
    for (size_t c = 0; c < q.labels.size(); ++c) {
      std::vector<uint32_t> label = tokenizer.encode(q.labels[c]);
      if (label.size() != 1)
        throw std::runtime_error("the label \"" + q.labels[c] +
                                 "\" is not one token of the tokenizer");
      if (last[label[0]] > best) {
        best = last[label[0]];
        picked = c;
      }
    }
    result.picked.push_back(picked);
    result.correct += picked == q.answer;
    ++result.questions;
  }
  return result;
}
