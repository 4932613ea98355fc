//===- Nanochat.cpp - nanochat's GPT --------------------------------------===//
//
// nanochat saves model_<step>.pt (a pickled state dict) and
// meta_<step>.json (its model_config); the lap package's converter
// (lap/nanochat.py) turns them into config.json (that model_config) and
// model.safetensors (float32, the state dict's names without torch.
// compile's "_orig_mod."). The architecture is nanochat's GPT: RMSNorm
// without weights (eps: float32's epsilon, F.rms_norm's default) after
// the embedding, before each block's halves, on q and k, and at the end;
// rotary positions (base 10000); relu^2 MLP; separate c_q, c_k, c_v
// (grouped queries: n_kv_head), no biases, an untied lm_head and logits
// soft-capped at 15.
//
// Its rotation turns each (x_i, x_{i+D/2}) pair by -theta where lap's
// turns it by +theta: negating the second half of q's and k's channels
// maps one onto the other exactly (both halves' products, hence every
// attention score, are unchanged), so c_q's and c_k's rows for those
// channels are stored negated in lap's qkv.
//
//===----------------------------------------------------------------------===//

#include "dsl/Spec.h"
#include "runtime/interchange/Formats.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

namespace lap::interchange {

namespace {

std::string specOf(const nlohmann::json &config,
                   const std::map<std::string, std::vector<int64_t>> &tensors,
                   const std::string &name, const std::string &path) {
  auto need = [&](const char *key) {
    return positiveInteger(config, key, path);
  };
  const int64_t layers = need("n_layer"), width = need("n_embd"),
                heads = need("n_head"), vocab = need("vocab_size"),
                context = need("sequence_len");
  const int64_t kvHeads =
      configValue<int64_t>(config, "n_kv_head", heads, path);
  if (width % heads != 0 || heads % kvHeads != 0)
    throw std::runtime_error(fmt::format(
        "{}: n_embd {}, n_head {}, n_kv_head {}: heads must divide the width "
        "and key/value heads the heads",
        path, width, heads, kvHeads));
  auto fc = tensors.find("transformer.h.0.mlp.c_fc.weight");
  if (fc == tensors.end() || fc->second.size() != 2)
    throw std::runtime_error(path + ": no transformer.h.0.mlp.c_fc.weight in "
                                    "model.safetensors: not a nanochat GPT");
  return fmt::format(
      "# Imported from nanochat (lapc-run import nanochat): the architecture\n"
      "# of {}. Switch heads in `attention` (kinds, laplacian_heads) and add\n"
      "# a `train` section to fine-tune it (lapc-run train --init-from).\n"
      "name: {}\n"
      "model:\n"
      "  family: gpt\n"
      "  layers: {}\n"
      "  width: {}\n"
      "  heads: {}\n"
      "  kv_heads: {}\n"
      "  mlp_hidden: {}\n"
      "  activation: relu2\n"
      "  norm: {{type: rmsnorm, weight: false, eps: 1.1920928955078125e-07}}\n"
      "  embedding_norm: true\n"
      "  positions: {{type: rope, rope_base: 10000}}\n"
      "  qk_norm: true\n"
      "  bias: false\n"
      "  logit_softcap: 15\n"
      "  tied_embeddings: false\n"
      "  vocab: {}\n"
      "  context: {}\n",
      path, specName(name), layers, width, heads, kvHeads, fc->second[0], vocab,
      context);
}

Mapping mappingOf(const dsl::Spec &spec, const std::string &name,
                  const std::vector<int64_t> &shape) {
  const dsl::ModelSpec &m = spec.model;
  if (name == "wte.weight")
    return {"transformer.wte.weight", shape};
  if (name == "lm_head.weight")
    return {"lm_head.weight", shape};
  std::string rest;
  if (std::optional<int64_t> layer = blockOf(name, rest)) {
    std::string at = "transformer.h." + std::to_string(*layer) + ".";
    const int64_t d = m.headDim, width = m.width;
    if (rest == "attn.qkv.weight")
      return Mapping({{at + "attn.c_q.weight", {m.heads * d, width}, d},
                      {at + "attn.c_k.weight", {m.kvHeads * d, width}, d},
                      {at + "attn.c_v.weight", {m.kvHeads * d, width}, 0}});
    static const std::map<std::string, std::string> kBlock = {
        {"attn.proj.weight", "attn.c_proj.weight"},
        {"mlp.fc1.weight", "mlp.c_fc.weight"},
        {"mlp.fc2.weight", "mlp.c_proj.weight"}};
    if (auto it = kBlock.find(rest); it != kBlock.end())
      return {at + it->second, shape};
  }
  throw std::runtime_error("'" + name + "' has no place in nanochat's GPT");
}

bool ignored(const std::string &) { return false; }

} // namespace

Format nanochatFormat() {
  return {"nanochat",
          "nanochat's GPT (a checkpoint directory: model_<step>.pt, "
          "meta_<step>.json; read by the lap package, with PyTorch)",
          specOf,
          mappingOf,
          nullptr,
          ignored,
          {},
          "lap.nanochat"};
}

} // namespace lap::interchange
