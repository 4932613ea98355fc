//===- Formats.h - The formats Interchange.cpp knows ------------*- C++ -*-===//

#ifndef LAP_RUNTIME_INTERCHANGE_FORMATS_H
#define LAP_RUNTIME_INTERCHANGE_FORMATS_H

#include "runtime/interchange/Interchange.h"

#include <optional>
#include <string>
#include <vector>

namespace lap::interchange {

/// Hugging Face transformers' GPT-2 (HfGpt2.cpp).
Format hfGpt2Format();
/// timm's VisionTransformer: ViT, DeiT, DeiT-3 (TimmVit.cpp).
Format timmVitFormat();
/// nanochat's GPT, converted from its pickled checkpoint (Nanochat.cpp).
Format nanochatFormat();
/// facebookresearch/dino's ViT and head, converted likewise (Dino.cpp).
Format dinoVitFormat();

/// The layer of a lap tensor name "blocks.N.<rest>": N, and <rest> in
/// `rest`; none for a name outside the blocks.
std::optional<int64_t> blockOf(const std::string &name, std::string &rest);

/// `key` of `config` as T, or `fallback` when absent or null; throws
/// naming `path` and the key when it has another type.
template <typename T>
T configValue(const nlohmann::json &config, const char *key, T fallback,
              const std::string &path) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception &) {
    throw std::runtime_error(path + ": '" + key + "' is " + it->dump() +
                             ", of the wrong type");
  }
}

/// `key` of `config`, which must be a positive integer; throws naming
/// `path` and the key otherwise.
int64_t positiveInteger(const nlohmann::json &config, const char *key,
                        const std::string &path);

/// The mapping of a ViT's embedding as timm and DINO store it
/// (patch_embed.proj, cls_token and pos_embed with a leading 1), or none
/// for another of lap's tensors.
std::optional<Mapping> vitEmbedding(const dsl::Spec &spec,
                                    const std::string &name,
                                    const std::vector<int64_t> &shape);

/// A name made fit for a spec: letters, digits, '_', '-'.
std::string specName(const std::string &name);

} // namespace lap::interchange

#endif // LAP_RUNTIME_INTERCHANGE_FORMATS_H
