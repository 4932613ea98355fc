//===- Sample.cpp - lapc-run sample --------------------------------*- C++ -*-===//
//
// Continues a prompt with a trained language model, printing each token as
// it is drawn.
//
//===----------------------------------------------------------------------===//

#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/Sampler.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

using namespace lap;

int lap::cli::sample(const SampleOptions &options) {
  ModelInstance run(options.model, options.device);
  const LoadedModel &model = run.model;
  dsl::Spec spec = train::specOf(model);
  if (spec.model.family != dsl::Family::GPT)
    throw std::runtime_error(options.model +
                             ": lapc-run sample generates text with "
                             "language models (family gpt)");
  data::Tokenizer tokenizer = train::requireRunTokenizer(spec, options.runDir);

  run.restore(train::checkpointOf(options.runDir, options.checkpoint));

  std::vector<int32_t> prompt = {int32_t(tokenizer.bosId())};
  for (uint32_t id : tokenizer.encode(options.prompt))
    prompt.push_back(int32_t(id));
  train::SampleOptions draw;
  draw.maxTokens = options.tokens;
  draw.temperature = options.temperature;
  draw.topK = options.topK;
  draw.stop = {int32_t(tokenizer.bosId())}; // the next document's start
  draw.drawable = tokenizer.vocabSize(); // the model's vocabulary may be padded
  train::Sampler sampler(run.calls, run.params.data());
  for (int64_t i = 0; i < options.samples; ++i) {
    draw.seed = options.seed + uint64_t(i);
    if (options.samples > 1)
      fmt::print("--- sample {}\n", i + 1);
    fmt::print("{}", options.prompt);
    std::fflush(stdout);
    // Bytes as they come: a character split across tokens completes on the
    // terminal when its last byte arrives.
    sampler.generate(prompt, draw, [&](int32_t id) {
      std::string bytes = tokenizer.decode({uint32_t(id)});
      std::fwrite(bytes.data(), 1, bytes.size(), stdout);
      std::fflush(stdout);
    });
    fmt::print("\n");
  }
  return 0;
}
