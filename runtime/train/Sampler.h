//===- Sampler.h - Text generation with a key/value cache -------*- C++ -*-===//
//
// Generates continuations of a prompt with a compiled language model: the
// prompt goes through lap_model_decode once, then each new token alone, so
// no step recomputes the prefix. Tokens are drawn from the softmax of the
// logits at a temperature, restricted to the top k (temperature 0: argmax).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_SAMPLER_H
#define LAP_RUNTIME_TRAIN_SAMPLER_H

#include "runtime/model/ModelCalls.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

namespace lap::train {

struct SampleOptions {
  int64_t maxTokens = 100;  ///< new tokens at most
  double temperature = 0.8; ///< 0: always the most likely token
  int64_t topK = 50;        ///< 0: the whole vocabulary
  uint64_t seed = 1;
  std::vector<int32_t> stop;   ///< tokens that end the sample (<|bos|>)
  int64_t drawable = 0;        ///< only ids below this are drawn (0: all), e.g.
                        ///< the tokenizer's size under a padded vocabulary
};

/// Picks a token from `logits` [vocab] as `options` say; deterministic for a
/// given generator state on every platform. Throws on a non-finite logit.
int32_t pickToken(const float *logits, int64_t vocab,
                  const SampleOptions &options, std::mt19937_64 &rng);

class Sampler {
public:
  /// Decodes through `calls` with `params` (its device's memory);
  /// allocates the cache for one sequence there.
  Sampler(ModelCalls &calls, const float *params);

  /// Tokens a tool answers a drawn token with (a calculator's output after
  /// its call), which follow it without being drawn; none for most.
  using Injector = std::function<std::vector<int32_t>(int32_t drawn)>;

  /// The new tokens after `prompt` (not empty), each passed to `onToken` as
  /// it is drawn or injected. Stops at options.maxTokens, the stop token
  /// (not returned) or the model's context. Throws on a model error.
  std::vector<int32_t>
  generate(const std::vector<int32_t> &prompt, const SampleOptions &options,
           const std::function<void(int32_t)> &onToken = {},
           const Injector &inject = {});

private:
  ModelCalls &calls;
  const float *params;
  int64_t vocab, capacity;
  device::Buffer cache;
  AlignedBuffer logits;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_SAMPLER_H
