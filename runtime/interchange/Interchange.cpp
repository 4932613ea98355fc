//===- Interchange.cpp - Both directions over a format's Mapping ----------===//

#include "runtime/interchange/Interchange.h"

#include "dsl/Diagnostics.h"
#include "dsl/ParameterTable.h"
#include "dsl/SpecParser.h"
#include "runtime/data/Safetensors.h"
#include "runtime/interchange/Formats.h"
#include "runtime/platform/Files.h"

#include <fmt/format.h>

#include <cctype>
#include <set>
#include <stdexcept>

namespace lap::interchange {

namespace {

/// config.json is small: a larger file is not one.
constexpr uint64_t kMaxConfigBytes = 1 << 20;

int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// `data` of shape [rows, cols] transposed: [cols, rows].
std::vector<float> transposed(const std::vector<float> &data, int64_t rows,
                              int64_t cols) {
  std::vector<float> out(data.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[size_t(c * rows + r)] = data[size_t(r * cols + c)];
  return out;
}

/// Negates the second half of every block of `block` rows of `rows`
/// ([n, cols], row-major), which undoes itself.
void negateHalves(std::vector<float> &rows, int64_t cols, int64_t block) {
  if (block <= 0)
    return;
  int64_t n = int64_t(rows.size()) / cols;
  for (int64_t r = 0; r < n; ++r)
    if (r % block >= block / 2)
      for (int64_t c = 0; c < cols; ++c)
        rows[size_t(r * cols + c)] = -rows[size_t(r * cols + c)];
}

/// Elements per row of a lap tensor of `shape` (the product of all but
/// the first dimension).
int64_t rowLength(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

/// The lap tensor of shape `shape` from its pieces' data, stored as `m`
/// says.
std::vector<float>
toLap(const Mapping &m, const std::vector<int64_t> &shape,
      const std::vector<const std::vector<float> *> &pieces) {
  if (m.layout == Mapping::Layout::Transposed)
    return transposed(*pieces[0], shape[1], shape[0]);
  std::vector<float> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::vector<float> rows = *pieces[i];
    negateHalves(rows, rowLength(shape), m.pieces[i].negatedHalves);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

/// The source tensors, as `m` says, of the lap tensor `t`.
std::vector<NamedTensor> fromLap(const Mapping &m, const NamedTensor &t) {
  if (m.layout == Mapping::Layout::Transposed)
    return {{m.pieces[0].source, m.pieces[0].shape,
             transposed(t.data, t.shape[0], t.shape[1])}};
  std::vector<NamedTensor> out;
  size_t at = 0;
  for (const Mapping::Piece &p : m.pieces) {
    size_t n = size_t(elementsOf(p.shape));
    std::vector<float> rows(t.data.begin() + long(at),
                            t.data.begin() + long(at + n));
    negateHalves(rows, rowLength(t.shape), p.negatedHalves);
    out.push_back({p.source, p.shape, std::move(rows)});
    at += n;
  }
  if (at != t.data.size())
    throw std::logic_error("the pieces of " + t.name + " miss some of it");
  return out;
}

dsl::Spec parsed(const std::string &yaml, const std::string &name) {
  dsl::Diagnostics diags;
  std::optional<dsl::Spec> spec = dsl::parseSpec(yaml, name, diags);
  if (!spec) {
    std::string why;
    for (const dsl::Diagnostic &d : diags.all())
      why += fmt::format("\n  {}:{}:{}: {}", d.loc.file, d.loc.line, d.loc.col,
                         d.message);
    throw std::runtime_error("the derived spec does not parse (a bug of "
                             "lap's import):" +
                             why + "\n" + yaml);
  }
  return std::move(*spec);
}

bool endsWith(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() &&
         s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// `name` without the first of `prefixes` it starts with.
std::string unprefixed(const std::string &name,
                       const std::vector<std::string> &prefixes) {
  for (const std::string &p : prefixes)
    if (name.rfind(p, 0) == 0)
      return name.substr(p.size());
  return name;
}

} // namespace

std::optional<int64_t> blockOf(const std::string &name, std::string &rest) {
  if (name.rfind("blocks.", 0) != 0)
    return std::nullopt;
  size_t dot = name.find('.', 7);
  if (dot == std::string::npos)
    return std::nullopt;
  rest = name.substr(dot + 1);
  return std::stoll(name.substr(7, dot - 7));
}

int64_t positiveInteger(const nlohmann::json &config, const char *key,
                        const std::string &path) {
  int64_t v = configValue<int64_t>(config, key, 0, path);
  if (v <= 0)
    throw std::runtime_error(path + ": '" + key +
                             "' is missing or not a positive integer");
  return v;
}

std::optional<Mapping> vitEmbedding(const dsl::Spec &spec,
                                    const std::string &name,
                                    const std::vector<int64_t> &shape) {
  const dsl::ModelSpec &m = spec.model;
  if (name == "patch_embed.weight")
    return Mapping("patch_embed.proj.weight",
                   {m.width, m.channels, m.patch, m.patch});
  if (name == "patch_embed.bias")
    return Mapping("patch_embed.proj.bias", shape);
  if (name == "cls_token" || name == "pos_embed")
    return Mapping(name, {1, shape[0], shape[1]});
  return std::nullopt;
}

std::string specName(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? "imported" : out;
}

const std::vector<Format> &formats() {
  static const std::vector<Format> all = {hfGpt2Format(), timmVitFormat(),
                                          nanochatFormat(), dinoVitFormat()};
  return all;
}

const Format &format(const std::string &name) {
  std::string known;
  for (const Format &f : formats()) {
    if (f.name == name)
      return f;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  throw std::runtime_error("no format '" + name + "' (formats: " + known + ")");
}

Imported importModel(const Format &format, const std::string &dir,
                     const std::string &name) {
  const std::string configPath = dir + "/config.json",
                    tensorPath = dir + "/model.safetensors";
  nlohmann::json config = nlohmann::json::parse(
      platform::readRegularFile(configPath, kMaxConfigBytes), nullptr, false);
  if (!config.is_object())
    throw std::runtime_error(configPath + ": not a JSON object");
  SafetensorsFile file = readSafetensors(tensorPath);
  std::map<std::string, const Tensor *> byName;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string &stored : file.order) {
    const Tensor &t = file.tensors.at(stored);
    std::string plain = unprefixed(stored, format.prefixes);
    if (t.dtype != DType::F32)
      throw std::runtime_error(tensorPath + ": tensor '" + stored +
                               "' has dtype " + dtypeName(t.dtype) +
                               "; lap imports F32 tensors");
    if (!byName.emplace(plain, &t).second)
      throw std::runtime_error(tensorPath + ": tensor '" + plain +
                               "' appears twice (with and without a prefix)");
    shapes[plain] = t.shape;
  }

  Imported out;
  out.spec = format.specOf(config, shapes, name, configPath);
  dsl::Spec spec = parsed(out.spec, name + ".yaml");
  std::set<std::string> used;
  for (const dsl::Parameter &p : dsl::parameterTable(spec)) {
    Mapping m = format.mappingOf(spec, p.name, p.shape);
    std::vector<const std::vector<float> *> pieces;
    for (const Mapping::Piece &piece : m.pieces) {
      auto found = byName.find(piece.source);
      if (found == byName.end())
        throw std::runtime_error(fmt::format(
            "{}: tensor '{}' is missing (lap's '{}', {} there)", tensorPath,
            piece.source, p.name, shapeText(piece.shape)));
      if (found->second->shape != piece.shape)
        throw std::runtime_error(
            fmt::format("{}: tensor '{}' has shape {}; {} says {}", tensorPath,
                        piece.source, shapeText(found->second->shape),
                        configPath, shapeText(piece.shape)));
      used.insert(piece.source);
      pieces.push_back(&found->second->f32);
    }
    out.parameters.push_back({p.name, p.shape, toLap(m, p.shape, pieces)});
  }
  for (const auto &[plain, tensor] : byName)
    if (!used.count(plain) && !format.ignored(plain))
      throw std::runtime_error(fmt::format(
          "{}: tensor '{}' ({}) has no place in the model {} describes",
          tensorPath, plain, shapeText(tensor->shape), configPath));
  return out;
}

Stored exportModel(const Format &format, const dsl::Spec &spec,
                   const std::vector<NamedTensor> &parameters,
                   bool withHeadKinds) {
  const dsl::AttentionSpec &a = spec.attention;
  std::string others;
  nlohmann::json kinds = nlohmann::json::array();
  for (size_t l = 0; l < a.layers.size(); ++l) {
    nlohmann::json layer = nlohmann::json::array();
    for (dsl::HeadKindId id : a.layers[l]) {
      std::string kind(a.kind(id).name);
      layer.push_back(kind);
      if (kind != "attn")
        others += fmt::format("{}layer {} has {}", others.empty() ? "" : "; ",
                              l, kind);
    }
    kinds.push_back(layer);
  }
  if (!others.empty() && !withHeadKinds)
    throw std::runtime_error(
        format.name + " holds softmax heads (attn) only, and " + others +
        " heads; --with-head-kinds exports anyway, recording every head's "
        "kind under \"lap_head_kinds\" in config.json (and learned "
        "coefficients under \"lap_head_coefficients\") for code of your own "
        "to read");

  if (!format.configOf)
    throw std::runtime_error("lap imports " + format.name +
                             " checkpoints; it does not export them");
  Stored out;
  out.config = format.configOf(spec);
  nlohmann::json learned = nlohmann::json::object();
  for (const NamedTensor &t : parameters) {
    // A learned kind's coefficients: [2, learned heads] of the layer.
    if (endsWith(t.name, ".attn.coefficients")) {
      learned[t.name] = {
          std::vector<float>(t.data.begin(), t.data.begin() + t.shape[1]),
          std::vector<float>(t.data.begin() + t.shape[1], t.data.end())};
      continue;
    }
    for (NamedTensor &piece :
         fromLap(format.mappingOf(spec, t.name, t.shape), t))
      out.tensors.push_back(std::move(piece));
  }
  if (withHeadKinds && !others.empty()) {
    out.config["lap_head_kinds"] = kinds;
    if (!learned.empty())
      out.config["lap_head_coefficients"] = learned;
  }
  return out;
}

} // namespace lap::interchange
