//===- Eval.cpp - lapc-run eval -----------------------------------*- C++ -*-===//
//
// Evaluates a trained model: validation loss and bits per byte on the run's
// validation split, and multiple-choice accuracy on ARC/MMLU-style JSONL.
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecParser.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/MultipleChoice.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

using namespace lap;

int lap::cli::evaluate(const EvalOptions &options) {
  LoadedModel model(options.model);
  dsl::Diagnostics diags;
  std::optional<dsl::Spec> spec = dsl::parseSpec(
      model.manifest()["spec"].get<std::string>(), options.model + " (manifest)", diags);
  if (!spec || spec->train.regime != dsl::Regime::LM)
    throw std::runtime_error(options.model + ": lapc-run eval evaluates language models");

  std::string checkpoint = options.checkpoint;
  if (checkpoint.empty()) {
    auto latest = latestCheckpoint(options.runDir + "/checkpoints");
    if (!latest)
      throw std::runtime_error(options.runDir + "/checkpoints: no checkpoint to evaluate");
    checkpoint = *latest;
  }
  std::vector<TensorSpec> expected;
  for (const ParameterInfo &p : model.parameters())
    expected.push_back({p.name, p.shape});
  LoadedCheckpoint loaded = loadCheckpoint(checkpoint, expected);
  AlignedBuffer params(size_t(model.parameterElements()) * 4);
  for (const ParameterInfo &p : model.parameters())
    std::memcpy(params.as<float>() + p.offset, loaded.model.tensors.at(p.name).f32.data(),
                size_t(p.elements) * 4);
  fmt::print("model {} at step {} ({})\n", spec->name, loaded.state.step, checkpoint);

  int64_t micro = spec->train.microBatchSize ? spec->train.microBatchSize
                                             : spec->train.batchSize;
  int64_t seq = spec->train.seqLen ? spec->train.seqLen : spec->model.context;
  train::LmRegime lm(*spec, model, params.as<float>(), options.runDir,
                     std::min(micro, model.maxBatch()), std::min(seq, model.maxSeq()), stdout);
  nlohmann::json values = lm.evaluate(options.batches);
  for (auto &[k, v] : values.items())
    fmt::print("{:<10} {:.4f}\n", k, v.get<double>());

  for (const std::string &file : options.multipleChoice) {
    if (!lm.tokenizer())
      throw std::runtime_error("multiple-choice evaluation needs the run's tokenizer");
    std::vector<train::Question> questions = train::readQuestions(file);
    train::MultipleChoiceResult r =
        train::evaluateMultipleChoice(model, params.as<float>(), *lm.tokenizer(), questions);
    fmt::print("{}: accuracy {:.4f} ({} of {})\n", file, r.accuracy(), r.correct, r.questions);
  }
  return 0;
}
