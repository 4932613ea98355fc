//===- Eval.cpp - lapc-run eval -----------------------------------*- C++ -*-===//
//
// Evaluates a trained model: validation loss and bits per byte on the run's
// validation split, and multiple-choice accuracy on ARC/MMLU-style JSONL.
//
//===----------------------------------------------------------------------===//

#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/MultipleChoice.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <stdexcept>

using namespace lap;

int lap::cli::evaluate(const EvalOptions &options) {
  LoadedModel model(options.model);
  dsl::Spec spec = train::specOf(model);
  if (spec.train.regime != dsl::Regime::LM)
    throw std::runtime_error(options.model +
                             ": lapc-run eval evaluates language models");

  std::string checkpoint =
      train::checkpointOf(options.runDir, options.checkpoint);
  AlignedBuffer params(size_t(model.parameterElements()) * 4);
  LoadedCheckpoint loaded =
      train::restoreParameters(model, checkpoint, params.as<float>());
  fmt::print("model {} at step {} ({})\n", spec.name, loaded.state.step,
             checkpoint);

  AlignedBuffer workspace(size_t(model.workspaceBytes()));
  train::LmRegime lm(spec, model, params.as<float>(), workspace, options.runDir,
                     std::min(train::microBatchSize(spec), model.maxBatch()),
                     std::min(train::sequenceLength(spec), model.maxSeq()),
                     stdout);
  nlohmann::json values = lm.evaluate(options.batches);
  for (auto &[k, v] : values.items())
    fmt::print("{:<10} {:.4f}\n", k, v.get<double>());

  for (const std::string &file : options.multipleChoice) {
    if (!lm.tokenizer())
      throw std::runtime_error(
          "multiple-choice evaluation needs the run's tokenizer");
    std::vector<train::Question> questions = train::readQuestions(file);
    train::MultipleChoiceResult r = train::evaluateMultipleChoice(
        model, params.as<float>(), workspace, *lm.tokenizer(), questions);
    fmt::print("{}: accuracy {:.4f} ({} of {})\n", file, r.accuracy(),
               r.correct, r.questions);
  }
  return 0;
}
