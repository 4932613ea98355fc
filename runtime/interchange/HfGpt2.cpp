//===- HfGpt2.cpp - Hugging Face transformers' GPT-2 ----------------------===//
//
// transformers' GPT2LMHeadModel: config.json (n_layer, n_embd, n_head,
// n_inner, n_positions, vocab_size, layer_norm_epsilon,
// activation_function, tie_word_embeddings) and model.safetensors, names
// with or without "transformer.". Its linears are Conv1D modules, whose
// weights are stored [in, out]: lap's [out, in] transposed. c_attn's
// output columns are q | k | v, each head-major, as lap's qkv rows are.
// The causal-mask buffers (attn.bias, attn.masked_bias) are dropped, and
// a tied lm_head.weight, which transformers ties to wte itself.
//
//===----------------------------------------------------------------------===//

#include "dsl/Spec.h"
#include "runtime/interchange/Formats.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

namespace lap::interchange {

namespace {

/// transformers' activation_function values lap computes exactly.
const std::map<std::string, std::string> kActivations = {
    {"gelu_new", "gelu_tanh"},
    {"gelu_pytorch_tanh", "gelu_tanh"},
    {"gelu", "gelu"}};

std::string specOf(const nlohmann::json &config,
                   const std::map<std::string, std::vector<int64_t>> &tensors,
                   const std::string &name, const std::string &path) {
  auto need = [&](const char *key) {
    return positiveInteger(config, key, path);
  };
  const int64_t layers = need("n_layer"), width = need("n_embd"),
                heads = need("n_head"), vocab = need("vocab_size");
  const int64_t context = configValue<int64_t>(
      config, "n_positions", configValue<int64_t>(config, "n_ctx", 0, path),
      path);
  if (context <= 0)
    throw std::runtime_error(path + ": 'n_positions' is missing");
  const int64_t hidden =
      configValue<int64_t>(config, "n_inner", 4 * width, path);
  const double eps =
      configValue<double>(config, "layer_norm_epsilon", 1e-5, path);
  const std::string activation =
      configValue<std::string>(config, "activation_function", "gelu_new", path);
  auto act = kActivations.find(activation);
  if (act == kActivations.end())
    throw std::runtime_error(path + ": activation_function '" + activation +
                             "' is none lap computes (gelu_new, "
                             "gelu_pytorch_tanh: gelu_tanh; gelu)");
  for (const char *unsupported :
       {"scale_attn_by_inverse_layer_idx", "add_cross_attention",
        "reorder_and_upcast_attn"})
    if (configValue<bool>(config, unsupported, false, path))
      throw std::runtime_error(path + ": '" + unsupported +
                               "' is true, which lap's GPT cannot express");
  if (!configValue<bool>(config, "scale_attn_weights", true, path))
    throw std::runtime_error(path +
                             ": 'scale_attn_weights' is false; lap's "
                             "attention always scales by 1/sqrt(head_dim)");
  const bool tied =
      configValue<bool>(config, "tie_word_embeddings", true, path);
  if (width % heads != 0)
    throw std::runtime_error(fmt::format(
        "{}: n_embd {} is not a multiple of n_head {}", path, width, heads));
  // The bias of the first linear says whether the linears have biases.
  bool bias = tensors.count("h.0.attn.c_attn.bias") > 0;
  return fmt::format(
      "# Imported from Hugging Face GPT-2 (lapc-run import hf-gpt2): the\n"
      "# architecture of {}. Switch heads in `attention` (kinds,\n"
      "# laplacian_heads) and add a `train` section to fine-tune it\n"
      "# (lapc-run train --init-from).\n"
      "name: {}\n"
      "model:\n"
      "  family: gpt\n"
      "  layers: {}\n"
      "  width: {}\n"
      "  heads: {}\n"
      "  mlp_hidden: {}\n"
      "  activation: {}\n"
      "  norm: {{type: layernorm, eps: {}}}\n"
      "  positions: {{type: learned}}\n"
      "  bias: {}\n"
      "  tied_embeddings: {}\n"
      "  vocab: {}\n"
      "  context: {}\n",
      path, specName(name), layers, width, heads, hidden, act->second, eps,
      bias ? "true" : "false", tied ? "true" : "false", vocab, context);
}

Mapping mappingOf(const dsl::Spec &spec, const std::string &name,
                  const std::vector<int64_t> &shape) {
  using Layout = Mapping::Layout;
  static const std::map<std::string, std::pair<std::string, Layout>> kBlock = {
      {"norm1.weight", {"ln_1.weight", Layout::Same}},
      {"norm1.bias", {"ln_1.bias", Layout::Same}},
      {"attn.qkv.weight", {"attn.c_attn.weight", Layout::Transposed}},
      {"attn.qkv.bias", {"attn.c_attn.bias", Layout::Same}},
      {"attn.proj.weight", {"attn.c_proj.weight", Layout::Transposed}},
      {"attn.proj.bias", {"attn.c_proj.bias", Layout::Same}},
      {"norm2.weight", {"ln_2.weight", Layout::Same}},
      {"norm2.bias", {"ln_2.bias", Layout::Same}},
      {"mlp.fc1.weight", {"mlp.c_fc.weight", Layout::Transposed}},
      {"mlp.fc1.bias", {"mlp.c_fc.bias", Layout::Same}},
      {"mlp.fc2.weight", {"mlp.c_proj.weight", Layout::Transposed}},
      {"mlp.fc2.bias", {"mlp.c_proj.bias", Layout::Same}}};
  static const std::map<std::string, std::string> kTop = {
      {"wte.weight", "wte.weight"},
      {"wpe.weight", "wpe.weight"},
      {"norm.weight", "ln_f.weight"},
      {"norm.bias", "ln_f.bias"},
      {"lm_head.weight", "lm_head.weight"}};
  std::string rest;
  if (std::optional<int64_t> layer = blockOf(name, rest)) {
    auto it = kBlock.find(rest);
    if (it != kBlock.end()) {
      Layout layout = it->second.second;
      return {"h." + std::to_string(*layer) + "." + it->second.first,
              layout == Layout::Transposed
                  ? std::vector<int64_t>{shape[1], shape[0]}
                  : shape,
              layout};
    }
  } else if (auto it = kTop.find(name); it != kTop.end()) {
    return {it->second, shape, Layout::Same};
  }
  throw std::runtime_error("'" + name +
                           "' has no place in Hugging Face's GPT-2 (the "
                           "spec has a feature GPT-2 lacks: " +
                           (spec.model.qkNorm ? "qk_norm" : "see the name") +
                           ")");
}

nlohmann::json configOf(const dsl::Spec &spec) {
  const dsl::ModelSpec &m = spec.model;
  std::string why;
  if (m.family != dsl::Family::GPT)
    why = "it is not a language model";
  else if (m.norm.type != dsl::NormType::LayerNorm || !m.norm.weight ||
           !m.norm.bias)
    why = "GPT-2's norms are LayerNorms with weight and bias";
  else if (m.positions.type != dsl::PositionType::Learned)
    why = "GPT-2's positions are learned";
  else if (m.activation == dsl::Activation::ReLU2)
    why = "GPT-2 has no relu2";
  else if (m.qkNorm || m.embeddingNorm || !m.finalNorm || m.logitSoftcap > 0)
    why = "GPT-2 has no qk_norm, embedding_norm or logit_softcap, and a "
          "final norm";
  else if (m.kvHeads != m.heads || m.headDim * m.heads != m.width)
    why = "GPT-2's heads are width / heads wide, each with its own keys";
  if (!why.empty())
    throw std::runtime_error("the model cannot be stored as GPT-2: " + why);
  return {{"model_type", "gpt2"},
          {"architectures", {"GPT2LMHeadModel"}},
          {"n_layer", m.layers},
          {"n_embd", m.width},
          {"n_head", m.heads},
          {"n_inner", m.mlpHidden},
          {"n_positions", m.context},
          {"n_ctx", m.context},
          {"vocab_size", m.vocab},
          {"layer_norm_epsilon", m.norm.eps},
          {"activation_function",
           m.activation == dsl::Activation::Gelu ? "gelu" : "gelu_new"},
          {"tie_word_embeddings", m.tiedEmbeddings},
          {"resid_pdrop", m.dropout},
          {"embd_pdrop", m.dropout},
          {"attn_pdrop", 0.0}};
}

bool ignored(const std::string &name) {
  auto endsWith = [&](const char *tail) {
    std::string t(tail);
    return name.size() >= t.size() &&
           name.compare(name.size() - t.size(), t.size(), t) == 0;
  };
  return name == "lm_head.weight" || endsWith(".attn.bias") ||
         endsWith(".attn.masked_bias");
}

} // namespace

Format hfGpt2Format() {
  return {
      "hf-gpt2",       "Hugging Face GPT-2 (config.json, model.safetensors)",
      specOf,          mappingOf,
      configOf,        ignored,
      {"transformer."}};
}

} // namespace lap::interchange
