//===- Sampler.cpp - Text generation with a key/value cache -----*- C++ -*-===//

#include "runtime/train/Sampler.h"

#include "runtime/data/Augment.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace lap::train {

int32_t pickToken(const float *logits, int64_t vocab,
                  const SampleOptions &options, std::mt19937_64 &rng) {
  if (options.drawable > 0)
    vocab = std::min(vocab, options.drawable);
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isfinite(logits[i]))
      throw std::runtime_error("the model's logit for token " +
                               std::to_string(i) + " is not finite");
  if (options.temperature <= 0)
    return int32_t(std::max_element(logits, logits + vocab) - logits);
  // The k largest logits (all when topK is 0), highest first; ties by id.
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  int64_t k = options.topK > 0 ? std::min(options.topK, vocab) : vocab;
  std::partial_sort(
      ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
  std::vector<double> weights(static_cast<size_t>(k));
  double top = logits[ids[0]];
  for (int64_t i = 0; i < k; ++i)
    weights[i] = std::exp((double(logits[ids[i]]) - top) / options.temperature);
  // The inverse CDF of one platform-independent uniform draw.
  double u = data::uniform(
      rng, 0.0, std::accumulate(weights.begin(), weights.end(), 0.0));
  for (int64_t i = 0; i < k; ++i) {
    u -= weights[i];
    if (u < 0)
      return ids[i];
  }
  return ids[k - 1];
}

namespace {

int64_t cacheFloats(const LoadedModel &model) {
  const nlohmann::json &decode = model.manifest()["decode"];
  if (decode.is_null())
    throw std::runtime_error(model.path() +
                             ": the model has no decode function "
                             "(only language models generate text)");
  return decode["cache_floats_per_sequence"].get<int64_t>();
}

} // namespace

Sampler::Sampler(ModelCalls &calls, const float *params)
    : calls(calls), params(params),
      vocab(calls.model().manifest()["limits"]["vocab"]),
      capacity(calls.model().maxSeq()),
      cache(calls.device(), size_t(cacheFloats(calls.model())) * sizeof(float)),
      logits(size_t(capacity * vocab) * sizeof(float)) {}

std::vector<int32_t> Sampler::generate(
    const std::vector<int32_t> &prompt, const SampleOptions &options,
    const std::function<void(int32_t)> &onToken, const Injector &inject) {
  if (prompt.empty())
    throw std::runtime_error("the prompt is empty (it needs at least <|bos|>)");
  if (int64_t(prompt.size()) > capacity)
    throw std::runtime_error("the prompt has " + std::to_string(prompt.size()) +
                             " tokens; the model's context holds " +
                             std::to_string(capacity));
  std::mt19937_64 rng(options.seed);
  std::vector<int32_t> out;
  std::vector<int32_t> step = prompt;
  int64_t first = 0;
  while (int64_t(out.size()) < options.maxTokens &&
         first + int64_t(step.size()) <= capacity) {
    int64_t count = int64_t(step.size());
    calls.decode(params, step.data(), 1, count, first, cache.as<float>(),
                 logits.as<float>());
    int32_t next = pickToken(logits.as<float>() + (count - 1) * vocab, vocab,
                             options, rng);
    if (std::find(options.stop.begin(), options.stop.end(), next) !=
        options.stop.end())
      break;
    first += count;
    step = {next};
    if (inject)
      for (int32_t forced : inject(next))
        step.push_back(forced);
    for (int32_t token : step) {
      if (int64_t(out.size()) == options.maxTokens)
        break;
      out.push_back(token);
      if (onToken)
        onToken(token);
    }
  }
  return out;
}

} // namespace lap::train
