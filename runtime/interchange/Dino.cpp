//===- Dino.cpp - facebookresearch/dino's ViT and DINO head ---------------===//
//
// DINO's checkpoints are pickles, which the lap package's converter
// (lap/dino.py) turns into model.safetensors: the backbone by timm's names
// (DINO's ViT is DeiT's: patch_embed.proj, cls_token, pos_embed with the
// class token's position, blocks.N.{norm1, attn.qkv, attn.proj, norm2,
// mlp.fc1, mlp.fc2}, norm) and the projection head as head.mlp.{0, 2, 4}
// (Linear, GELU, Linear, GELU, Linear) and head.last_layer.weight_g /
// weight_v (the weight-normed prototypes). DINO's ViTs have heads of 64
// channels (vit_tiny 3, vit_small 6, vit_base 12), LayerNorm's epsilon
// 1e-6 and biases in every linear.
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

/// DINO's heads are 64 channels wide.
constexpr int64_t kHeadDim = 64;

std::string specOf(const nlohmann::json &,
                   const std::map<std::string, std::vector<int64_t>> &tensors,
                   const std::string &name, const std::string &path) {
  auto shapeOf = [&](const std::string &tensor) -> std::vector<int64_t> {
    auto it = tensors.find(tensor);
    return it == tensors.end() ? std::vector<int64_t>{} : it->second;
  };
  const std::string file = "the converted model.safetensors (" + path + ")";
  const std::vector<int64_t> proj = shapeOf("patch_embed.proj.weight"),
                             pos = shapeOf("pos_embed"),
                             fc1 = shapeOf("blocks.0.mlp.fc1.weight");
  if (proj.size() != 4 || proj[2] != proj[3] || pos.size() != 3 ||
      fc1.size() != 2)
    throw std::runtime_error(file + ": no patch_embed.proj, pos_embed or "
                                    "blocks.0.mlp.fc1: not a DINO ViT");
  const int64_t width = proj[0], patch = proj[2];
  if (width % kHeadDim != 0)
    throw std::runtime_error(fmt::format(
        "{}: a width of {}, which DINO's {}-channel heads do not divide", file,
        width, kHeadDim));
  int64_t layers = 0;
  while (tensors.count("blocks." + std::to_string(layers) + ".norm1.weight"))
    ++layers;
  const int64_t side = int64_t(std::llround(std::sqrt(double(pos[1] - 1))));
  if (side * side != pos[1] - 1)
    throw std::runtime_error(fmt::format(
        "{}: pos_embed has {} positions, not a square grid and the class "
        "token's",
        file, pos[1]));
  int64_t headLayers = 0;
  while (
      tensors.count("head.mlp." + std::to_string(2 * headLayers) + ".weight"))
    ++headLayers;
  const std::vector<int64_t> first = shapeOf("head.mlp.0.weight"),
                             last = shapeOf("head.mlp." +
                                            std::to_string(2 * headLayers - 2) +
                                            ".weight"),
                             prototypes = shapeOf("head.last_layer.weight_v");
  if (headLayers == 0 || prototypes.size() != 2)
    throw std::runtime_error(
        file + ": no DINO head (head.mlp.0, head.last_layer): lap imports "
               "DINO's teacher or student with its head (a training "
               "checkpoint, or their state dict)");
  return fmt::format(
      "# Imported from facebookresearch/dino (lapc-run import dino-vit): the\n"
      "# architecture of {}'s tensors. Switch heads in `attention` (kinds,\n"
      "# laplacian_heads) and add a `train` section to train it further\n"
      "# (lapc-run train --init-from).\n"
      "name: {}\n"
      "model:\n"
      "  family: dino\n"
      "  layers: {}\n"
      "  width: {}\n"
      "  heads: {}\n"
      "  mlp_hidden: {}\n"
      "  activation: gelu\n"
      "  norm: {{type: layernorm, eps: 1.0e-6}}\n"
      "  positions: {{type: learned, patches_only: false}}\n"
      "  bias: true\n"
      "  image_size: {}\n"
      "  patch: {}\n"
      "  channels: {}\n"
      "  cls_token: true\n"
      "  pool: cls\n"
      "  dino_head: {{layers: {}, hidden: {}, bottleneck: {}, prototypes: "
      "{}}}\n",
      path, specName(name), layers, width, width / kHeadDim, fc1[0],
      side * patch, patch, proj[1], headLayers,
      headLayers > 1 ? first[0] : prototypes[1], last[0], prototypes[0]);
}

Mapping mappingOf(const dsl::Spec &spec, const std::string &name,
                  const std::vector<int64_t> &shape) {
  if (std::optional<Mapping> embedding = vitEmbedding(spec, name, shape))
    return *embedding;
  const std::string head = "dino_head.mlp.";
  if (name.rfind(head, 0) == 0) {
    size_t dot = name.find('.', head.size());
    int64_t layer = std::stoll(name.substr(head.size(), dot - head.size()));
    return {"head.mlp." + std::to_string(2 * layer) + name.substr(dot), shape};
  }
  if (name.rfind("dino_head.last_layer.", 0) == 0)
    return {"head." + name.substr(10), shape};
  std::string rest;
  if ((blockOf(name, rest) && rest.rfind("attn.coefficients", 0) != 0) ||
      name.rfind("norm.", 0) == 0)
    return {name, shape};
  throw std::runtime_error("'" + name + "' has no place in DINO's ViT");
}

bool ignored(const std::string &) { return false; }

} // namespace

Format dinoVitFormat() {
  return {"dino-vit",
          "facebookresearch/dino's ViT with its DINO head (a checkpoint "
          "file: the training checkpoint's teacher, or a teacher's or "
          "student's state dict; read by the lap package, with PyTorch)",
          specOf,
          mappingOf,
          nullptr,
          ignored,
          {},
          "lap.dino"};
}

} // namespace lap::interchange
