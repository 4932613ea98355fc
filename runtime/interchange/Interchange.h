//===- Interchange.h - Other frameworks' checkpoints in and out -*- C++ -*-===//
//
// A format is another framework's way of storing a model lap can express:
// its config (config.json) and its tensors (safetensors) by its names and
// layouts. Importing derives a lap spec stating the source's architecture
// and maps every tensor to lap's name and layout; exporting maps a trained
// lap model back. Each format states its mapping once (a lap tensor's
// source name and layout: Mapping), which both directions use, so an
// import followed by an export gives back every source tensor bit for bit.
// Every mismatch (a tensor missing, extra or of another shape, a config
// the spec language cannot express) is a std::runtime_error naming the
// file and the tensor or key.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_INTERCHANGE_INTERCHANGE_H
#define LAP_RUNTIME_INTERCHANGE_INTERCHANGE_H

#include "dsl/Spec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lap::interchange {

/// An fp32 tensor, row-major.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// How a lap tensor is stored in a format: in one source tensor, or in
/// several stacked along lap's first dimension (nanochat's c_q, c_k and
/// c_v are lap's qkv).
struct Mapping {
  enum class Layout {
    Same,       ///< the same elements in the same order (maybe reshaped)
    Transposed, ///< a 2-D matrix stored transposed ([in, out]: Conv1D)
  };
  struct Piece {
    std::string source;         ///< its name there
    std::vector<int64_t> shape; ///< its shape there
    /// > 0: in each block of this many rows (in lap's layout), the second
    /// half is stored negated: a rotation by the opposite angle (nanochat's
    /// RoPE against lap's), which the same negation undoes.
    int64_t negatedHalves = 0;
  };
  std::vector<Piece> pieces;
  Layout layout = Layout::Same; ///< Transposed: one piece only

  Mapping(std::string source, std::vector<int64_t> shape,
          Layout layout = Layout::Same)
      : pieces{{std::move(source), std::move(shape)}}, layout(layout) {}
  explicit Mapping(std::vector<Piece> pieces) : pieces(std::move(pieces)) {}
};

/// A model as another framework stores it.
struct Stored {
  nlohmann::json config;            ///< config.json
  std::vector<NamedTensor> tensors; ///< model.safetensors, in order
};

/// What an import makes of a source: the spec's YAML and every parameter
/// in lap's names, in the spec's table order.
struct Imported {
  std::string spec;
  std::vector<NamedTensor> parameters;
};

/// A format: its name on the command line, and its two directions.
struct Format {
  std::string name;
  std::string description;
  /// The spec stating the architecture `config` (the source's config.json)
  /// describes, whose tensors `tensors` (names and shapes) confirm, named
  /// `name`. `configPath` names the file in errors.
  std::string (*specOf)(
      const nlohmann::json &config,
      const std::map<std::string, std::vector<int64_t>> &tensors,
      const std::string &name, const std::string &configPath);
  /// The source name and layout of lap's tensor `name` of shape `shape`
  /// in a model of `spec`; throws when the format has no place for it.
  Mapping (*mappingOf)(const dsl::Spec &spec, const std::string &name,
                       const std::vector<int64_t> &shape);
  /// config.json of `spec`'s model; throws naming what the format cannot
  /// express. Null: the format is imported only.
  nlohmann::json (*configOf)(const dsl::Spec &spec);
  /// Source tensors an import may drop (buffers the framework rebuilds),
  /// and prefixes its names may carry.
  bool (*ignored)(const std::string &sourceName);
  std::vector<std::string> prefixes;
  /// The lap package's module that turns a source directory into
  /// config.json and model.safetensors first (nanochat's pickled
  /// checkpoints), or "": the source has them.
  std::string converter;
};

/// The format `name` ("hf-gpt2", "timm-vit", "nanochat", "dino-vit");
/// throws listing them.
const Format &format(const std::string &name);
/// Every format, for help texts.
const std::vector<Format> &formats();

/// Imports the directory `dir` (config.json, model.safetensors: the source,
/// or what its converter made of it) as `format` describes it; the spec is
/// named `name`.
Imported importModel(const Format &format, const std::string &dir,
                     const std::string &name);

/// Exports `parameters` (lap's names, a model of `spec`) in `format`'s
/// names and layouts with its config. Heads of kinds other than `attn` are
/// refused, naming them, unless `withHeadKinds`, which records every
/// layer's kinds in the config under "lap_head_kinds".
Stored exportModel(const Format &format, const dsl::Spec &spec,
                   const std::vector<NamedTensor> &parameters,
                   bool withHeadKinds);

} // namespace lap::interchange

#endif // LAP_RUNTIME_INTERCHANGE_INTERCHANGE_H
