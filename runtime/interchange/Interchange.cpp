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

/// The lap tensor of shape `shape` from `source`, stored as `m` says.
std::vector<float> toLap(const Mapping &m, const std::vector<int64_t> &shape,
                         const std::vector<float> &source) {
  if (m.layout == Mapping::Layout::Transposed)
    return transposed(source, shape[1], shape[0]);
  return source;
}

/// The source tensor, as `m` says, of the lap tensor `t`.
std::vector<float> fromLap(const Mapping &m, const NamedTensor &t) {
  if (m.layout == Mapping::Layout::Transposed)
    return transposed(t.data, t.shape[0], t.shape[1]);
  return t.data;
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

std::string specName(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? "imported" : out;
}

const std::vector<Format> &formats() {
  static const std::vector<Format> all = {hfGpt2Format(), timmVitFormat()};
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
    auto found = byName.find(m.source);
    if (found == byName.end())
      throw std::runtime_error(
          fmt::format("{}: tensor '{}' is missing (lap's '{}', {} there)",
                      tensorPath, m.source, p.name, shapeText(m.shape)));
    if (found->second->shape != m.shape)
      throw std::runtime_error(fmt::format(
          "{}: tensor '{}' has shape {}; {} says {}", tensorPath, m.source,
          shapeText(found->second->shape), configPath, shapeText(m.shape)));
    used.insert(m.source);
    out.parameters.push_back(
        {p.name, p.shape, toLap(m, p.shape, found->second->f32)});
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
    Mapping m = format.mappingOf(spec, t.name, t.shape);
    if (elementsOf(m.shape) != elementsOf(t.shape))
      throw std::logic_error("mapping of " + t.name + " changes its size");
    out.tensors.push_back({m.source, m.shape, fromLap(m, t)});
  }
  if (withHeadKinds && !others.empty()) {
    out.config["lap_head_kinds"] = kinds;
    if (!learned.empty())
      out.config["lap_head_coefficients"] = learned;
  }
  return out;
}

} // namespace lap::interchange
