//===- TimmVit.cpp - timm's VisionTransformer (ViT, DeiT, DeiT-3) ----------===//
//
// timm's names are lap's but for a few: the patch embedding is a
// convolution (patch_embed.proj, [width, channels, p, p]: the patch's
// pixels channel-major, as lap.patchify flattens them), cls_token and
// pos_embed carry a leading 1, and LayerScale's factor is ls1.gamma. The
// architecture comes from the tensors' shapes, except the number of heads,
// which config.json states (num_heads, or model_args.num_heads, or the
// size in a timm architecture name: vit_small_patch16_224) and the image
// size when the positions leave it open (img_size, model_args.img_size,
// pretrained_cfg.input_size). Positions for the patches alone are DeiT-3's
// no_embed_class: lap's positions.patches_only. Not expressed, so refused:
// register tokens, global average pooling (fc_norm), blocks without biases
// in some linears only.
//
//===----------------------------------------------------------------------===//

#include "dsl/Spec.h"
#include "runtime/interchange/Formats.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

namespace lap::interchange {

namespace {

/// timm's model sizes by name, and their heads.
const std::map<std::string, int64_t> kHeadsBySize = {
    {"tiny", 3}, {"small", 6}, {"base", 12}, {"large", 16}, {"huge", 16}};

const nlohmann::json &modelArgs(const nlohmann::json &config) {
  static const nlohmann::json none = nlohmann::json::object();
  auto it = config.find("model_args");
  return it != config.end() && it->is_object() ? *it : none;
}

int64_t headsOf(const nlohmann::json &config, const std::string &path) {
  int64_t heads = configValue<int64_t>(
      config, "num_heads",
      configValue<int64_t>(modelArgs(config), "num_heads", 0, path), path);
  if (heads > 0)
    return heads;
  std::string architecture =
      configValue<std::string>(config, "architecture", "", path);
  for (const auto &[size, n] : kHeadsBySize)
    if (architecture.find("_" + size + "_") != std::string::npos)
      return n;
  throw std::runtime_error(
      path + ": says neither num_heads (or model_args.num_heads) nor a timm "
             "architecture name with its size (vit_small_patch16_224), and "
             "the tensors do not tell the number of heads");
}

/// The image size config.json states, or 0.
int64_t imageSizeOf(const nlohmann::json &config, const std::string &path) {
  for (const nlohmann::json *c : {&config, &modelArgs(config)})
    if (int64_t size = configValue<int64_t>(*c, "img_size", 0, path))
      return size;
  auto cfg = config.find("pretrained_cfg");
  if (cfg != config.end() && cfg->is_object()) {
    auto input = cfg->find("input_size");
    if (input != cfg->end() && input->is_array() && input->size() == 3)
      return (*input)[2].get<int64_t>();
  }
  return 0;
}

std::string specOf(const nlohmann::json &config,
                   const std::map<std::string, std::vector<int64_t>> &tensors,
                   const std::string &name, const std::string &path) {
  auto shapeOf = [&](const std::string &tensor) -> std::vector<int64_t> {
    auto it = tensors.find(tensor);
    return it == tensors.end() ? std::vector<int64_t>{} : it->second;
  };
  const std::vector<int64_t> proj = shapeOf("patch_embed.proj.weight");
  if (proj.size() != 4 || proj[2] != proj[3])
    throw std::runtime_error(path + ": no patch_embed.proj.weight of shape "
                                    "[width, channels, patch, patch] in "
                                    "model.safetensors: not a timm ViT");
  const int64_t width = proj[0], channels = proj[1], patch = proj[2];
  int64_t layers = 0;
  while (tensors.count("blocks." + std::to_string(layers) + ".norm1.weight"))
    ++layers;
  if (layers == 0)
    throw std::runtime_error(path + ": model.safetensors has no blocks");
  if (tensors.count("reg_token"))
    throw std::runtime_error(path +
                             ": register tokens (reg_token) are not "
                             "imported: lap's token order is not timm's");
  std::string pool =
      configValue<std::string>(config, "global_pool", "token", path);
  if (tensors.count("fc_norm.weight") || pool == "avg")
    throw std::runtime_error(
        path + ": global average pooling with fc_norm (global_pool 'avg'), "
               "which lap's pooling (norm, then pool) cannot express");
  if (pool != "token")
    throw std::runtime_error(path + ": global_pool '" + pool +
                             "'; lap imports 'token' (the class token)");
  const bool cls = tensors.count("cls_token") > 0;
  const std::vector<int64_t> pos = shapeOf("pos_embed");
  if (pos.size() != 3)
    throw std::runtime_error(path + ": no pos_embed [1, tokens, width]: lap "
                                    "imports ViTs with learned positions");
  int64_t side = 0;
  bool patchesOnly = false;
  if (int64_t size = imageSizeOf(config, path)) {
    side = size / patch;
    patchesOnly = pos[1] == side * side;
    if (!patchesOnly && pos[1] != side * side + (cls ? 1 : 0))
      throw std::runtime_error(fmt::format(
          "{}: pos_embed has {} positions; {}-pixel images of {}-pixel "
          "patches have {} patches",
          path, pos[1], size, patch, side * side));
  } else {
    // The positions alone: a square number of them are the patches'.
    for (int64_t extra : {0, 1}) {
      int64_t s = int64_t(std::llround(std::sqrt(double(pos[1] - extra))));
      if (s * s == pos[1] - extra && (extra == 0 || cls)) {
        side = s;
        patchesOnly = extra == 0;
        break;
      }
    }
    if (side == 0)
      throw std::runtime_error(path +
                               ": the image size is not in config.json "
                               "(img_size) and pos_embed does not tell it");
  }
  const std::vector<int64_t> head = shapeOf("head.weight"),
                             fc1 = shapeOf("blocks.0.mlp.fc1.weight");
  if (fc1.size() != 2)
    throw std::runtime_error(path + ": no blocks.0.mlp.fc1.weight");
  const bool bias = tensors.count("blocks.0.attn.qkv.bias") > 0;
  if (bias != (tensors.count("blocks.0.attn.proj.bias") > 0))
    throw std::runtime_error(path +
                             ": the attention's qkv and proj differ in "
                             "having biases, which lap's bias setting cannot "
                             "express");
  const bool layerScale = tensors.count("blocks.0.ls1.gamma") > 0;
  const bool qkNorm = tensors.count("blocks.0.attn.q_norm.weight") > 0;
  return fmt::format(
      "# Imported from timm (lapc-run import timm-vit): the architecture of\n"
      "# {} and its tensors. Switch heads in `attention` (kinds,\n"
      "# laplacian_heads) and add a `train` section to fine-tune it\n"
      "# (lapc-run train --init-from).\n"
      "name: {}\n"
      "model:\n"
      "  family: vit\n"
      "  layers: {}\n"
      "  width: {}\n"
      "  heads: {}\n"
      "  mlp_hidden: {}\n"
      "  activation: gelu\n"
      "  norm: {{type: layernorm, eps: 1.0e-6}}\n"
      "  positions: {{type: learned, patches_only: {}}}\n"
      "  qk_norm: {}\n"
      "  bias: {}\n"
      "  image_size: {}\n"
      "  patch: {}\n"
      "  channels: {}\n"
      "  classes: {}\n"
      "  cls_token: {}\n"
      "  layer_scale: {}\n"
      "  pool: cls\n",
      path, specName(name), layers, width, headsOf(config, path), fc1[0],
      patchesOnly ? "true" : "false", qkNorm ? "true" : "false",
      bias ? "true" : "false", side * patch, patch, channels,
      head.empty() ? 0 : head[0], cls ? "true" : "false",
      layerScale ? "1.0e-5" : "0");
}

Mapping mappingOf(const dsl::Spec &spec, const std::string &name,
                  const std::vector<int64_t> &shape) {
  if (std::optional<Mapping> embedding = vitEmbedding(spec, name, shape))
    return *embedding;
  std::string rest;
  if (std::optional<int64_t> layer = blockOf(name, rest)) {
    if (rest == "ls1" || rest == "ls2")
      return {name + ".gamma", shape};
    if (rest.rfind("attn.coefficients", 0) != 0)
      return {name, shape};
  }
  if (name.rfind("norm.", 0) == 0 || name.rfind("head.", 0) == 0)
    return {name, shape};
  throw std::runtime_error("'" + name + "' has no place in timm's ViT");
}

nlohmann::json configOf(const dsl::Spec &spec) {
  const dsl::ModelSpec &m = spec.model;
  std::string why;
  if (m.family != dsl::Family::ViT)
    why = "it is not a ViT classifier";
  else if (m.norm.type != dsl::NormType::LayerNorm || !m.norm.weight ||
           !m.norm.bias)
    why = "timm's norms are LayerNorms with weight and bias";
  else if (m.positions.type != dsl::PositionType::Learned)
    why = "timm's ViT has learned positions";
  else if (m.activation != dsl::Activation::Gelu)
    why = "timm's ViT uses the exact GELU (activation: gelu)";
  else if (m.pool != dsl::Pool::Cls || !m.clsToken || m.registers > 0)
    why = "lap exports class-token ViTs without registers";
  else if (m.kvHeads != m.heads || m.headDim * m.heads != m.width ||
           !m.finalNorm || m.embeddingNorm)
    why = "timm's heads are width / heads wide, each with its own keys, "
          "and its ViT has a final norm and no embedding norm";
  if (!why.empty())
    throw std::runtime_error("the model cannot be stored as a timm ViT: " +
                             why);
  nlohmann::json args = {{"img_size", m.imageSize},
                         {"patch_size", m.patch},
                         {"in_chans", m.channels},
                         {"embed_dim", m.width},
                         {"depth", m.layers},
                         {"num_heads", m.heads},
                         {"mlp_ratio", double(m.mlpHidden) / double(m.width)},
                         {"qkv_bias", m.bias},
                         {"qk_norm", m.qkNorm},
                         {"class_token", true},
                         {"no_embed_class", m.positions.patchesOnly},
                         {"global_pool", "token"}};
  if (m.layerScale > 0)
    args["init_values"] = m.layerScale;
  return {{"architecture", "vit_custom"},
          {"num_classes", m.classes},
          {"num_features", m.width},
          {"global_pool", "token"},
          {"model_args", args},
          {"pretrained_cfg",
           {{"input_size", {m.channels, m.imageSize, m.imageSize}}}}};
}

bool ignored(const std::string &) { return false; }

} // namespace

Format timmVitFormat() {
  return {"timm-vit",
          "timm's VisionTransformer: ViT, DeiT, DeiT-3 (config.json, "
          "model.safetensors)",
          specOf,
          mappingOf,
          configOf,
          ignored,
          {},
          ""};
}

} // namespace lap::interchange
