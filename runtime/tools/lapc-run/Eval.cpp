//===- Eval.cpp - lapc-run eval -----------------------------------*- C++ -*-===//
//
// Evaluates a trained model: validation loss and bits per byte on the run's
// validation split (a fine-tuning run's: its held-out conversations), and
// multiple-choice accuracy on ARC/MMLU-style JSONL;
// for a dino run, k-NN and linear-probe accuracy of the teacher's and the
// student's features on the labelled test split.
//
//===----------------------------------------------------------------------===//

#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/train/ChatRegime.h"
#include "runtime/train/DinoRegime.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/MultipleChoice.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

using namespace lap;

namespace {

/// DINO's evaluations (k-NN, linear probe) of a dino run's teacher and
/// student: bank and probe training set from the training split, queries
/// from the test split. `run`'s parameters become the student's.
int evaluateDino(cli::ModelInstance &run, const dsl::Spec &spec,
                 const cli::EvalOptions &options) {
  const LoadedModel &model = run.model;
  std::string checkpoint =
      train::checkpointOf(options.runDir, options.checkpoint);
  device::Array teacher(run.device, model.parameterElements());
  LoadedCheckpoint loaded = run.restore(checkpoint);
  train::restoreTeacher(model, loaded, teacher.data(), run.device);
  fmt::print("model {} at step {} ({})\n", spec.name, loaded.state.step,
             checkpoint);
  train::ImageSplits splits = train::openImageSplits(spec.train.data);
  if (!splits.val)
    throw std::runtime_error(options.model +
                             ": the spec names no test split (data.val) to "
                             "evaluate on");
  int64_t batch = std::min(train::microBatchSize(spec), model.maxBatch());
  int64_t batches = options.batches ? options.batches : spec.train.eval.batches;
  for (auto [name, params] : {std::pair{"teacher", teacher.data()},
                              std::pair{"student", run.params.data()}}) {
    nlohmann::json values = train::evaluateEmbeddings(
        run.calls, params, *splits.train, *splits.val,
        train::evaluationTransform(spec.model), batch, batches * batch);
    for (auto &[k, v] : values.items())
      fmt::print("{} {:<12} {:.4f}\n", name, k, v.get<double>());
  }
  return 0;
}

} // namespace

int lap::cli::evaluate(const EvalOptions &options) {
  ModelInstance run(options.model, options.device);
  const LoadedModel &model = run.model;
  dsl::Spec spec = train::specOf(model);
  if (spec.train.regime == dsl::Regime::DINO)
    return evaluateDino(run, spec, options);
  if (spec.train.regime != dsl::Regime::LM)
    throw std::runtime_error(options.model +
                             ": lapc-run eval evaluates language models and "
                             "dino runs");

  std::string checkpoint =
      train::checkpointOf(options.runDir, options.checkpoint);
  LoadedCheckpoint loaded = run.restore(checkpoint);
  fmt::print("model {} at step {} ({})\n", spec.name, loaded.state.step,
             checkpoint);

  int64_t batch = std::min(train::microBatchSize(spec), model.maxBatch());
  int64_t seq = std::min(train::sequenceLength(spec), model.maxSeq());
  nlohmann::json values;
  std::optional<data::Tokenizer> tokenizer;
  if (spec.train.data.format == dsl::DataFormat::Conversations) {
    spec.train.eval.batches = options.batches;
    train::ChatRegime chat(spec, run.calls, run.params.data(), batch, seq,
                           stdout);
    if (!chat.evaluates())
      throw std::runtime_error(options.model +
                               ": the spec holds no validation "
                               "conversations (data.val or val_fraction)");
    values = chat.evaluate();
    tokenizer = chat.tokenizer();
  } else {
    train::LmRegime lm(spec, run.calls, run.params.data(), options.runDir,
                       batch, seq, stdout);
    values = lm.evaluate(options.batches);
    tokenizer = lm.tokenizer();
  }
  for (auto &[k, v] : values.items())
    fmt::print("{:<10} {:.4f}\n", k, v.get<double>());

  for (const std::string &file : options.multipleChoice) {
    if (!tokenizer)
      throw std::runtime_error(
          "multiple-choice evaluation needs the run's tokenizer");
    std::vector<train::Question> questions = train::readQuestions(file);
    train::MultipleChoiceResult r = train::evaluateMultipleChoice(
        run.calls, run.params.data(), *tokenizer, questions);
    fmt::print("{}: accuracy {:.4f} ({} of {})\n", file, r.accuracy(),
               r.correct, r.questions);
  }
  return 0;
}
