//===- SpecParser.cpp - Located YAML tree to a verified Spec -----*- C++ -*-===//
//
// Walks the schema (SpecSchema.h) over the tree loadTree built: checks every
// key, type and range, records where each setting was written, then applies
// defaults that depend on other settings, expands the attention placement to
// one kind per head, and hands over to the verifier for the rules that
// relate settings to each other. Errors are collected, never thrown, and a
// setting that failed to read is remembered so no check cascades from it.
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecParser.h"
#include "dsl/AttentionPlacement.h"
#include "dsl/AttentionWindows.h"
#include "dsl/Derived.h"
#include "dsl/Scalars.h"
#include "dsl/SpecSchema.h"
#include "dsl/SpecVerifier.h"
#include "dsl/Suggest.h"
#include "dsl/Sweep.h"
#include "dsl/YamlTree.h"
#include "runtime/platform/FileNames.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>
#include <type_traits>

using namespace lap::dsl;
using namespace lap::dsl::schema;

Loc Spec::locationOf(const std::string &path) const {
  for (std::string p = path;;) {
    auto it = locations.find(p);
    if (it != locations.end())
      return it->second;
    size_t dot = p.rfind('.');
    if (dot == std::string::npos)
      break;
    p.resize(dot);
  }
  auto root = locations.find("");
  return root == locations.end() ? Loc{} : root->second;
}

namespace {

/// The visitor that reads YAML (see SpecSchema.h for the interface).
class Parser {
public:
  Parser(Spec &spec, Diagnostics &diags) : spec(spec), diags(diags) {}

  void run(const Node &root);

  /// Settings that were written but could not be read.
  std::set<std::string> invalid;
  /// The raw `attention` placement keys, resolved once the model is known.
  const Node *laplacianHeads = nullptr, *kinds = nullptr, *poolKinds = nullptr,
             *defineKinds = nullptr, *window = nullptr;
  /// The `derived` section, checked against the computed values.
  const Node *derivedPins = nullptr;

  template <class F> void section(const char *key, Applies applies, F body) {
    const Node *value = take(key, applies);
    const Node *map = nullptr;
    if (value && value->kind == Node::Kind::Map)
      map = value;
    else if (value && value->kind != Node::Kind::Null)
      typeError(*value, path(key), "a mapping");
    frames.push_back(
        {map, path(key), spec.locationOf(path(key)), {}, value != nullptr});
    body();
    closeFrame();
  }
  /// A section the printer leaves out while it is off; read as any other.
  template <class F>
  void optionalSection(const char *key, Applies applies, bool, F body) {
    section(key, applies, body);
  }

  template <class T>
  void field(const char *key, T &value, Rule rule = any,
             Applies applies = always, bool isRequired = false) {
    const Node *node = take(key, applies);
    if (!node) {
      if (isRequired && applicable(applies) && decidable(applies))
        missing(key);
      return;
    }
    std::string p = path(key);
    T parsed = value; // A value out of its range is never stored.
    if (!read(*node, parsed, p))
      invalid.insert(p);
    else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      checkIntegerRule(*node, p, int64_t(parsed), rule);
    else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      checkRule(*node, p, double(parsed), rule);
    if (invalid.count(p))
      return;
    value = parsed;
    if (p == "model.family")
      familyKnown = true;
    else if (p == "train.regime")
      regimeKnown = true;
  }

  void range(const char *key, double &lo, double &hi, Rule rule,
             Applies applies = always) {
    readPair(key, lo, hi, rule, applies, /*ordered=*/true);
  }

  void pair(const char *key, double &first, double &second, Rule rule) {
    readPair(key, first, second, rule, always, /*ordered=*/false);
  }

  void floatOrWord(const char *key, double &value, bool &isWord,
                   const char *word, Rule rule) {
    const Node *node = take(key, always);
    if (!node)
      return;
    std::string p = path(key);
    if (node->kind == Node::Kind::Scalar && node->scalar == word) {
      isWord = true;
      return;
    }
    double v;
    if (node->kind != Node::Kind::Scalar || node->quoted ||
        !parseNumber(node->scalar, v)) {
      typeError(*node, p, std::string("a number or '") + word + "'");
      return;
    }
    if (checkRule(*node, p, v, rule)) {
      value = v;
      isWord = false;
    }
  }

  void strings(const char *key, std::vector<std::string> &values,
               const std::vector<std::string_view> &allowed) {
    const Node *node = take(key, always);
    if (!node)
      return;
    std::string p = path(key);
    if (node->kind != Node::Kind::Sequence) {
      typeError(*node, p, "a list of names");
      return;
    }
    values.clear();
    for (const Node &item : node->items) {
      std::string name;
      if (!read(item, name, p))
        continue;
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        fail(item, p,
             "unknown name " + inQuotes(name) + " in " + inQuotes(p) +
                 didYouMean(name, allowed) + " (one of " +
                 listChoices(allowed) + ")");
        continue;
      }
      values.push_back(name);
    }
  }

  void weights(const char *key,
               std::vector<std::pair<std::string, double>> &entries, Rule rule,
               Applies applies = always) {
    const Node *node = take(key, applies);
    if (!node)
      return;
    std::string p = path(key);
    if (node->kind != Node::Kind::Map || node->entries.empty()) {
      typeError(*node, p, "a mapping of names to numbers");
      return;
    }
    entries.clear();
    for (const auto &[name, value] : node->entries) {
      double v;
      if (value.kind != Node::Kind::Scalar || value.quoted ||
          !parseNumber(value.scalar, v)) {
        typeError(value, p + "." + name.scalar, "a number");
        continue;
      }
      if (checkRule(value, p + "." + name.scalar, v, rule))
        entries.emplace_back(name.scalar, v);
    }
  }

private:
  struct Frame {
    const Node *map;
    std::string path;
    Loc loc;
    std::vector<std::string_view> known;
    bool present = true; ///< Written in the spec (required keys apply).
  };

  std::string path(std::string_view key) const {
    const std::string &parent = frames.back().path;
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  }

  /// Registers `key` as valid here and returns its value node, if written
  /// and applicable; records where it was written.
  const Node *take(const char *key, Applies applies) {
    Frame &frame = frames.back();
    frame.known.push_back(key);
    if (!frame.map)
      return nullptr;
    for (const auto &[k, v] : frame.map->entries) {
      if (k.scalar != key)
        continue;
      if (!applicable(applies)) {
        notApplicable(k, applies);
        invalid.insert(path(key));
        return nullptr;
      }
      // Sections are located at their key, values at the value.
      bool section = v.kind == Node::Kind::Null || v.kind == Node::Kind::Map;
      spec.locations[path(key)] = section ? k.loc : v.loc;
      return &v;
    }
    return nullptr;
  }

  /// Whether a key restricted by `a` belongs in this spec. While the family
  /// or regime is itself unknown (it failed to read), everything applies.
  bool applicable(Applies a) const {
    if (familyKnown && !(a.families & bit(spec.model.family)))
      return false;
    if (regimeKnown && !(a.regimes & bit(spec.train.regime)))
      return false;
    if (!(a.optimizers & bit(spec.train.optimizer.type)))
      return false;
    if (!(a.precisions & bit(spec.train.precision)))
      return false;
    return true;
  }

  void readPair(const char *key, double &lo, double &hi, Rule rule,
                Applies applies, bool ordered) {
    const Node *node = take(key, applies);
    if (!node)
      return;
    std::string p = path(key);
    if (node->kind != Node::Kind::Sequence || node->items.size() != 2) {
      typeError(*node, p, "a pair [low, high]");
      return;
    }
    double values[2];
    for (int i = 0; i < 2; ++i)
      if (!read(node->items[i], values[i], p) ||
          !checkRule(node->items[i], p, values[i], rule))
        return;
    if (ordered && values[0] > values[1]) {
      fail(*node, p, inQuotes(p) + " must be [low, high] with low <= high");
      return;
    }
    lo = values[0];
    hi = values[1];
  }

  /// Whether the family or regime a key depends on is known; a key of one
  /// family is not "missing" from a spec whose family failed to read.
  bool decidable(Applies a) const {
    bool familySpecific = a.families != always.families;
    bool regimeSpecific = a.regimes != always.regimes;
    return (!familySpecific || familyKnown) && (!regimeSpecific || regimeKnown);
  }

  void notApplicable(const Node &key, Applies a) {
    std::string p = path(key.scalar);
    auto only = [](unsigned mask, const auto &table) {
      std::vector<std::string_view> which;
      for (const auto &[name, value] : table)
        if (mask & bit(value))
          which.push_back(name);
      return listChoices(which);
    };
    std::string why;
    if (!(a.families & bit(spec.model.family)))
      why = "applies to family " + only(a.families, names<Family>()) +
            " only; this model is " + inQuotes(spelling(spec.model.family));
    else if (!(a.regimes & bit(spec.train.regime)))
      why = "applies to regime " + only(a.regimes, names<Regime>()) +
            " only; this spec trains " + inQuotes(spelling(spec.train.regime));
    else if (!(a.optimizers & bit(spec.train.optimizer.type)))
      why = "applies to optimizer " +
            only(a.optimizers, names<OptimizerType>()) + " only; this one is " +
            inQuotes(spelling(spec.train.optimizer.type));
    else
      why = "applies to precision " + only(a.precisions, names<Precision>()) +
            " only; this model computes in " +
            inQuotes(spelling(spec.train.precision));
    diags.error(key.loc, inQuotes(p) + " " + why);
  }

  void missing(std::string_view key) {
    const Frame &frame = frames.back();
    if (!frame.present)
      return;
    std::string where = frame.path.empty() ? "the spec" : inQuotes(frame.path);
    diags.error(frame.loc,
                "missing required key " + inQuotes(key) + " in " + where);
  }

  void closeFrame() {
    Frame &frame = frames.back();
    if (frame.map)
      for (const auto &[key, value] : frame.map->entries) {
        if (std::find(frame.known.begin(), frame.known.end(), key.scalar) !=
            frame.known.end())
          continue;
        std::string where = frame.path.empty() ? "at the top level"
                                               : "in " + inQuotes(frame.path);
        diags.error(key.loc, "unknown key " + inQuotes(key.scalar) + " " +
                                 where + didYouMean(key.scalar, frame.known));
      }
    frames.pop_back();
  }

  void fail(const Node &node, const std::string &p, std::string message) {
    diags.error(node.loc, std::move(message));
    invalid.insert(p);
  }

  void typeError(const Node &node, const std::string &p,
                 std::string_view expected) {
    std::string found = node.kind == Node::Kind::Scalar && node.quoted
                            ? "the string \"" + node.scalar + "\""
                            : node.describe();
    fail(node, p,
         inQuotes(p) + " expects " + std::string(expected) + "; found " +
             found);
  }

  /// Checks `v` against `rule`, and that it survives the conversion to the
  /// single precision the compiled model computes in.
  bool checkRule(const Node &node, const std::string &p, double v, Rule rule) {
    if (!fitsSinglePrecision(v)) {
      fail(node, p,
           inQuotes(p) + " is out of single-precision range; found " +
               node.scalar);
      return false;
    }
    if (rule.admits(v) && rule.admits(double(float(v))))
      return true;
    return outOfRange(node, p, rule);
  }

  /// Checks an integer setting against `rule` in integer arithmetic (sizes
  /// and counts are not rounded to float).
  bool checkIntegerRule(const Node &node, const std::string &p, int64_t v,
                        Rule rule) {
    return rule.admitsInteger(v) || outOfRange(node, p, rule);
  }

  bool outOfRange(const Node &node, const std::string &p, Rule rule) {
    std::ostringstream text;
    text << inQuotes(p) << " must be ";
    if (rule.what)
      text << rule.what;
    else
      text << (rule.minExclusive ? "greater than " : "between ")
           << int64_t(rule.min)
           << (rule.minExclusive ? " and at most " : " and ")
           << int64_t(rule.max);
    text << "; found " << node.scalar;
    fail(node, p, text.str());
    return false;
  }

  bool plainScalar(const Node &n) const {
    return n.kind == Node::Kind::Scalar && !n.quoted;
  }

  bool read(const Node &n, int64_t &out, const std::string &p) {
    if (plainScalar(n) && parseInteger(n.scalar, out))
      return true;
    typeError(n, p, "an integer");
    return false;
  }
  bool read(const Node &n, double &out, const std::string &p) {
    if (plainScalar(n) && parseNumber(n.scalar, out))
      return true;
    typeError(n, p, "a number");
    return false;
  }
  bool read(const Node &n, bool &out, const std::string &p) {
    static const std::set<std::string> yes = {"true", "True", "TRUE", "yes",
                                              "on"};
    static const std::set<std::string> no = {"false", "False", "FALSE", "no",
                                             "off"};
    if (plainScalar(n) && (yes.count(n.scalar) || no.count(n.scalar))) {
      out = yes.count(n.scalar);
      return true;
    }
    typeError(n, p, "true or false");
    return false;
  }
  bool read(const Node &n, std::string &out, const std::string &p) {
    if (n.kind != Node::Kind::Scalar || n.scalar.empty()) {
      typeError(n, p, "a non-empty string");
      return false;
    }
    // Names and paths hold no control characters; refusing them keeps every
    // accepted string printable as it was written.
    for (unsigned char c : n.scalar)
      if (c < 0x20 || c == 0x7f) {
        fail(n, p,
             inQuotes(p) + " contains a control character (byte " +
                 std::to_string(c) + ")");
        return false;
      }
    out = n.scalar;
    return true;
  }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  bool read(const Node &n, E &out, const std::string &p) {
    auto choices = enumSpellings<E>();
    if (n.kind != Node::Kind::Scalar) {
      typeError(n, p, "one of " + listChoices(choices));
      return false;
    }
    for (const auto &[name, value] : names<E>())
      if (n.scalar == name) {
        out = value;
        return true;
      }
    fail(n, p,
         "unknown value " + inQuotes(n.scalar) + " for " + inQuotes(p) +
             didYouMean(n.scalar, choices) + " (one of " +
             listChoices(choices) + ")");
    return false;
  }

  Spec &spec;
  Diagnostics &diags;
  std::vector<Frame> frames;
  bool familyKnown = false, regimeKnown = false;
};

void Parser::run(const Node &root) {
  frames.push_back({&root, "", root.loc, {}});
  spec.locations[""] = root.loc;
  field("name", spec.name);
  field("description", spec.description);
  if (!root.find("model"))
    missing("model");
  section("model", always, [&] { visitModel(*this, spec.model); });
  section("attention", always, [&] {
    defineKinds = take("define", always);
    laplacianHeads = take("laplacian_heads", always);
    kinds = take("kinds", always);
    poolKinds = take("pool", always);
    window = take("window", always);
  });
  spec.hasTrain = root.find("train") != nullptr;
  section("train", always, [&] {
    // The optimizer type decides which optimizer keys apply: read it first.
    if (const Node *opt =
            frames.back().map ? frames.back().map->find("optimizer") : nullptr)
      if (const Node *type = opt->find("type");
          type && type->kind == Node::Kind::Scalar)
        for (const auto &[name, value] : names<OptimizerType>())
          if (type->scalar == name)
            spec.train.optimizer.type = value;
    visitTrain(*this, spec.train);
  });
  derivedPins = take("derived", always);
  closeFrame();
}

/// Defaults that depend on other settings.
void applyDependentDefaults(Spec &spec, const std::string &file) {
  ModelSpec &m = spec.model;
  // A name is the file's own: an extending file does not inherit its base's.
  if (!spec.given("name") || spec.locationOf("name").file != file)
    spec.name = std::filesystem::path(file).stem().string();
  if (!spec.given("model.head_dim") && m.heads > 0)
    m.headDim = m.width / m.heads;
  if (!spec.given("model.kv_heads"))
    m.kvHeads = m.heads;
  if (!spec.given("model.mlp_hidden"))
    m.mlpHidden = int64_t(std::llround(double(m.width) * m.mlpRatio));
  if (!spec.given("model.norm.bias") && m.norm.type == NormType::RMSNorm)
    m.norm.bias = false;
  if (!spec.given("model.pool_heads") && m.pool == Pool::Attentive)
    m.poolHeads = m.heads;
  if (m.family == Family::GPT)
    m.positions.patchesOnly = false;
  TrainSpec &t = spec.train;
  if (!spec.given("train.micro_batch_size"))
    t.microBatchSize = t.batchSize;
  if (!spec.given("train.seq_len") && t.regime == Regime::LM)
    t.seqLen = m.context;
  if (!spec.given("train.data.bos") && t.data.packing != Packing::None)
    t.data.bos = m.vocab - 1; // where lap's trained tokenizers put <|bos|>
  if (!spec.given("train.lora.alpha"))
    t.lora.alpha = double(t.lora.rank); // a scale of 1
  if (!spec.given("train.data.format"))
    t.data.format =
        t.regime == Regime::LM ? DataFormat::Shards : DataFormat::ImageFolder;
}

/// Compares the `derived` values a spec pins against the computed ones.
void checkPins(const Node &pins, const Spec &spec, Diagnostics &diags) {
  std::vector<DerivedValue> computed = derivedValues(spec);
  std::vector<std::string_view> known;
  for (const DerivedValue &d : computed)
    known.push_back(d.path);
  std::function<void(const Node &, const std::string &)> walk =
      [&](const Node &node, const std::string &p) {
        if (node.kind == Node::Kind::Map) {
          for (const auto &[k, v] : node.entries)
            walk(v, p.empty() ? k.scalar : p + "." + k.scalar);
          return;
        }
        auto it =
            std::find_if(computed.begin(), computed.end(),
                         [&](const DerivedValue &d) { return d.path == p; });
        if (it == computed.end()) {
          diags.error(node.loc, "unknown derived value " + inQuotes(p) +
                                    didYouMean(p, known));
          return;
        }
        double pinned;
        if (node.kind != Node::Kind::Scalar ||
            !parseNumber(node.scalar, pinned)) {
          diags.error(node.loc, "'derived." + p + "' expects a number; found " +
                                    node.describe());
          return;
        }
        double tolerance = it->integer ? 0.0 : 1e-3 * std::fabs(it->value);
        if (std::fabs(pinned - it->value) > tolerance)
          diags.error(node.loc, "'derived." + p + "' is pinned to " +
                                    node.scalar + " but the spec gives " +
                                    formatDerived(*it));
      };
  if (pins.kind == Node::Kind::Map)
    walk(pins, "");
  else if (pins.kind != Node::Kind::Null)
    diags.error(pins.loc,
                "'derived' expects a mapping of pinned values; found " +
                    pins.describe());
}

/// The exclusive placement keys of `attention` and friends (see YamlTree.h).
const std::vector<ExclusiveKeys> &exclusiveKeys() {
  static const std::vector<ExclusiveKeys> groups = {
      {"attention", {"laplacian_heads", "kinds"}},
      {"train", {"steps", "epochs"}},
      {"train.schedule", {"warmup_steps", "warmup_epochs"}},
  };
  return groups;
}

std::optional<Spec> buildSpec(const std::optional<Node> &tree,
                              const std::string &file, Diagnostics &diags) {
  if (!tree) {
    diags.sortByLocation();
    return std::nullopt;
  }
  Spec spec;
  Parser parser(spec, diags);
  parser.run(*tree);
  applyDependentDefaults(spec, file);
  bool headsOk = !parser.invalid.count("model.heads") &&
                 !parser.invalid.count("model.pool_heads") &&
                 spec.model.heads > 0;
  bool layersOk =
      !parser.invalid.count("model.layers") && spec.model.layers > 0;
  if (headsOk)
    placeHeadKinds(spec,
                   {parser.laplacianHeads, parser.kinds, parser.poolKinds,
                    parser.defineKinds},
                   layersOk, diags);
  placeWindows(spec,
               parser.invalid.count("model.family") ? nullptr : parser.window,
               layersOk, diags);
  verifySpec(spec, parser.invalid, diags);
  if (!diags.hasErrors()) {
    spec.derived = deriveSpec(spec);
    if (parser.derivedPins)
      checkPins(*parser.derivedPins, spec, diags);
  }
  diags.sortByLocation();
  if (diags.hasErrors())
    return std::nullopt;
  return spec;
}

/// Runs `load` with the front end's promise kept: nothing escapes.
template <class F>
auto guarded(Diagnostics &diags, F load) -> decltype(load()) {
  try {
    return load();
  } catch (const std::exception &e) {
    diags.internalError(e.what());
  } catch (...) {
    diags.internalError("unknown exception");
  }
  return std::nullopt;
}

} // namespace

/// A spec that sweeps is not one model: say what reads it.
static std::optional<Node> refuseSweep(std::optional<Node> tree,
                                       Diagnostics &diags) {
  if (!tree)
    return tree;
  for (const auto &[key, value] : tree->entries)
    if (key.scalar == "sweep") {
      Diagnostics ignored;
      auto points = sweepPoints(value, ignored);
      diags.error(key.loc,
                  "this spec sweeps " +
                      (points ? std::to_string(points->size()) + " variants"
                              : std::string("variants")) +
                      ", not one model: lapc --emit=sweep lists them (-o DIR "
                      "writes each), lapc-run sweep trains them");
      return std::nullopt;
    }
  return tree;
}

std::optional<Spec> lap::dsl::loadSpec(const std::string &path,
                                       Diagnostics &diags) {
  return guarded(diags, [&] {
    return buildSpec(refuseSweep(loadTree(path, exclusiveKeys(), diags), diags),
                     path, diags);
  });
}

std::optional<std::vector<SpecVariant>>
lap::dsl::loadSweep(const std::string &path, Diagnostics &diags) {
  return guarded(diags, [&]() -> std::optional<std::vector<SpecVariant>> {
    std::optional<Node> tree = loadTree(path, exclusiveKeys(), diags);
    if (!tree)
      return std::nullopt;
    auto sweep =
        std::find_if(tree->entries.begin(), tree->entries.end(),
                     [](auto &e) { return e.first.scalar == "sweep"; });
    if (sweep == tree->entries.end()) {
      std::optional<Spec> spec = buildSpec(tree, path, diags);
      if (!spec)
        return std::nullopt;
      return std::vector<SpecVariant>{{spec->name, {}, *spec}};
    }
    Node axes = sweep->second;
    tree->entries.erase(sweep);
    std::optional<std::vector<SweepPoint>> points = sweepPoints(axes, diags);
    if (!points)
      return std::nullopt;
    // A bad value fails every variant that has it: report each error once.
    std::set<std::tuple<std::string, unsigned, unsigned, std::string>> told;
    std::set<std::string> names;
    std::set<const Node *> badNames; // each value that makes one, once
    std::vector<SpecVariant> variants;
    bool ok = true;
    for (const SweepPoint &point : *points) {
      Diagnostics own;
      std::optional<Spec> spec = buildSpec(withPoint(*tree, point), path, own);
      for (const Diagnostic &d : own.all())
        if (told.insert({d.loc.file, d.loc.line, d.loc.col, d.message}).second)
          diags.error(d.loc, d.message);
      if (!spec) {
        ok = false;
        continue;
      }
      SpecVariant v{variantName(spec->name, point), {}, *spec};
      for (const auto &[axis, value] : point)
        v.values.emplace_back(axis, valueText(*value));
      if (std::string why = lap::platform::fileNameProblem(v.name);
          !why.empty()) {
        // At the first value that brings the fault, else the last value.
        const Node *at = point.back().second;
        for (const auto &[axis, value] : point)
          if (!lap::platform::fileNameProblem("v" + valueText(*value))
                   .empty()) {
            at = value;
            break;
          }
        if (badNames.insert(at).second)
          diags.error(at->loc, "the variant name '" + v.name + "' " + why +
                                   ": it names the variant's files, so the "
                                   "axis values must make a plain file name");
        ok = false;
      } else if (!names.insert(v.name).second) {
        diags.error(point.back().second->loc,
                    "two variants are both named '" + v.name +
                        "': give the axis values that differ distinct text");
        ok = false;
      }
      v.spec.name = v.name;
      variants.push_back(std::move(v));
    }
    diags.sortByLocation();
    if (!ok || diags.hasErrors())
      return std::nullopt;
    return variants;
  });
}

std::optional<Spec> lap::dsl::parseSpec(std::string_view text,
                                        const std::string &name,
                                        Diagnostics &diags) {
  return guarded(diags, [&] {
    return buildSpec(parseTree(text, name, exclusiveKeys(), diags), name,
                     diags);
  });
}
