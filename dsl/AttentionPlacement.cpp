//===- AttentionPlacement.cpp - One head kind per head ----------*- C++ -*-===//
//
// Reads the kinds a spec defines (`define`: a name for alpha P V + beta V),
// then expands `laplacian_heads` (trailing heads), `kinds` (explicit lists)
// and `pool` into `spec.attention`, checking counts, list lengths, kind names
// and that kinds which need self-attention stay off cross-attention.
//
//===----------------------------------------------------------------------===//

#include "dsl/AttentionPlacement.h"
#include "dsl/Scalars.h"
#include "dsl/Suggest.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

using namespace lap::dsl;

namespace {

class AttentionResolver {
public:
  /// With `layersOk` false, counts and kinds are checked per head only.
  AttentionResolver(Spec &spec, bool layersOk, Diagnostics &diags)
      : spec(spec), layersOk(layersOk), diags(diags) {}

  void run(const AttentionPlacement &placement) {
    const ModelSpec &m = spec.model;
    const Node *laplacianHeads = placement.laplacianHeads,
               *kinds = placement.kinds, *pool = placement.pool;
    if (placement.define)
      define(*placement.define);
    spec.attention.layers.assign(
        layersOk ? size_t(m.layers) : 0,
        std::vector<HeadKindId>(size_t(std::max<int64_t>(m.heads, 0)), 0));
    if (laplacianHeads && kinds) {
      diags.error(
          spec.locationOf("attention.kinds"),
          "give either 'laplacian_heads' or 'kinds' in 'attention', not both");
      return;
    }
    if (laplacianHeads)
      placeLaplacian(*laplacianHeads);
    if (kinds)
      placeKinds(*kinds);
    spec.attention.pool.assign(size_t(m.pool == Pool::Attentive
                                          ? std::max<int64_t>(m.poolHeads, 0)
                                          : 0),
                               0);
    if (pool)
      placePool(*pool);
  }

private:
  /// `define: {NAME: {alpha: A, beta: B}, ...}`: finite single-precision
  /// coefficients, names of their own. `learnable: true` makes them
  /// parameters, starting from `alpha` and `beta`, or from kind `init`, or
  /// from `attn`.
  void define(const Node &node) {
    if (node.kind != Node::Kind::Map) {
      diags.error(node.loc, "'attention.define' expects a mapping of kind "
                            "names to {alpha, beta}; found " +
                                node.describe());
      return;
    }
    for (const auto &[key, value] : node.entries) {
      const std::string &name = key.scalar;
      std::string where = "attention.define." + name;
      if (findHeadKind(name) || spec.attention.find(name)) {
        diags.error(key.loc,
                    "head kind '" + name + "' is " +
                        (findHeadKind(name) ? "built in" : "defined twice") +
                        "; give the definition a name of its own");
        continue;
      }
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
            return std::isalnum((unsigned char)c) || c == '_';
          })) {
        diags.error(key.loc, "head kind name '" + name +
                                 "' must be letters, digits and '_'");
        continue;
      }
      if (spec.attention.defined.size() + headKinds().size() >= 256) {
        diags.error(key.loc, "a spec defines at most " +
                                 std::to_string(256 - headKinds().size()) +
                                 " head kinds");
        return;
      }
      if (value.kind != Node::Kind::Map) {
        diags.error(value.loc, inQuotes(where) +
                                   " expects {alpha: number, beta: number}; "
                                   "found " +
                                   value.describe());
        continue;
      }
      if (auto kind = readDefinition(name, where, value)) {
        spec.locations[where] = key.loc;
        spec.attention.defined.push_back(*kind);
      }
    }
  }

  /// One definition's mapping: {alpha, beta}, or {learnable: true} with
  /// either {alpha, beta} or {init: KIND} (or neither: from attn).
  std::optional<DefinedKind> readDefinition(const std::string &name,
                                            const std::string &where,
                                            const Node &value) {
    static const std::vector<std::string_view> keys = {"alpha", "beta",
                                                       "learnable", "init"};
    DefinedKind kind{name, 1, 0, false};
    bool ok = true;
    for (const auto &[k, v] : value.entries)
      if (std::find(keys.begin(), keys.end(), k.scalar) == keys.end()) {
        diags.error(k.loc, "unknown key " + inQuotes(where + "." + k.scalar) +
                               didYouMean(k.scalar, keys) +
                               " (a defined kind has 'alpha' and 'beta', or "
                               "'learnable' and 'init')");
        ok = false;
      }
    if (const Node *learnable = value.find("learnable")) {
      if (learnable->kind != Node::Kind::Scalar || learnable->quoted ||
          (learnable->scalar != "true" && learnable->scalar != "false")) {
        diags.error(learnable->loc, inQuotes(where + ".learnable") +
                                        " must be true or false; found " +
                                        learnable->describe());
        return std::nullopt;
      }
      kind.learnable = learnable->scalar == "true";
      spec.locations[where + ".learnable"] = learnable->loc;
    }
    const Node *init = value.find("init");
    const Node *alpha = value.find("alpha"), *beta = value.find("beta");
    if (init && !kind.learnable) {
      diags.error(init->loc, inQuotes(where + ".init") +
                                 " starts learned coefficients; add "
                                 "'learnable: true' or give 'alpha' and "
                                 "'beta'");
      return std::nullopt;
    }
    if (init && (alpha || beta)) {
      diags.error(init->loc, inQuotes(where) +
                                 " starts from 'init' or from 'alpha' and "
                                 "'beta', not both");
      return std::nullopt;
    }
    if (init) {
      std::optional<HeadKind> from = initKind(where, *init);
      if (!from)
        return std::nullopt;
      kind.alpha = from->alpha;
      kind.beta = from->beta;
      spec.locations[where + ".init"] = init->loc;
      return ok ? std::optional(kind) : std::nullopt;
    }
    if (kind.learnable && !alpha && !beta)
      return ok ? std::optional(kind) : std::nullopt; // from attn
    for (const char *coefficient : {"alpha", "beta"}) {
      const Node *v = coefficient[0] == 'a' ? alpha : beta;
      std::string path = where + "." + coefficient;
      double x = 0;
      if (!v) {
        diags.error(value.loc, inQuotes(where) + " needs '" +
                                   std::string(coefficient) + "'");
        ok = false;
      } else if (v->kind != Node::Kind::Scalar || v->quoted ||
                 !parseNumber(v->scalar, x) || !fitsSinglePrecision(x)) {
        diags.error(v->loc, inQuotes(path) +
                                " must be a finite single-precision number; "
                                "found " +
                                v->describe());
        ok = false;
      } else if (std::fabs(x) > kMaxHeadCoefficient) {
        diags.error(v->loc, inQuotes(path) + " is " + v->scalar +
                                "; a head's coefficients must lie within "
                                "[-1e4, 1e4] (larger ones overflow single "
                                "precision in training)");
        ok = false;
      } else {
        (coefficient[0] == 'a' ? kind.alpha : kind.beta) = x;
        spec.locations[path] = v->loc;
      }
    }
    return ok ? std::optional(kind) : std::nullopt;
  }

  /// `init: KIND`: a fixed kind, built in or defined above.
  std::optional<HeadKind> initKind(const std::string &where, const Node &init) {
    std::vector<std::string_view> fixed;
    for (const HeadKind &k : spec.attention.kinds())
      if (!k.learnable)
        fixed.push_back(k.name);
    auto id = init.kind == Node::Kind::Scalar && !init.quoted
                  ? spec.attention.find(init.scalar)
                  : std::nullopt;
    if (id && !spec.attention.kind(*id).learnable)
      return spec.attention.kind(*id);
    std::string name = init.kind == Node::Kind::Scalar ? init.scalar : "";
    diags.error(
        init.loc,
        inQuotes(where + ".init") +
            " names the fixed kind the "
            "coefficients start from; " +
            (id ? inQuotes(name) + " is learnable itself"
                : "found " + (name.empty() ? init.describe() : inQuotes(name)) +
                      didYouMean(name, fixed)) +
            " (fixed kinds: " + listChoices(fixed) + ")");
    return std::nullopt;
  }

  void placeLaplacian(const Node &node) {
    auto fillTrailing = [&](size_t layer, int64_t k) {
      auto &heads = spec.attention.layers[layer];
      for (size_t h = heads.size() - size_t(k); h < heads.size(); ++h)
        heads[h] = laplacianKind();
    };
    if (node.kind == Node::Kind::Sequence) {
      if (!sameLength(node, "attention.laplacian_heads"))
        return;
      for (size_t l = 0; l < node.items.size(); ++l)
        if (auto k = readCount(node.items[l]))
          fillTrailing(l, *k);
      return;
    }
    if (auto k = readCount(node))
      for (size_t l = 0; l < spec.attention.layers.size(); ++l)
        fillTrailing(l, *k);
  }

  /// A count of trailing Laplacian heads, 0..heads.
  std::optional<int64_t> readCount(const Node &count) {
    const int64_t heads = spec.model.heads;
    int64_t k;
    if (count.kind != Node::Kind::Scalar || count.quoted ||
        !parseInteger(count.scalar, k)) {
      diags.error(count.loc,
                  "'attention.laplacian_heads' expects a head "
                  "count, or a list of counts, one per layer; found " +
                      count.describe());
      return std::nullopt;
    }
    if (k < 0 || k > heads) {
      diags.error(count.loc, "'attention.laplacian_heads' is " + count.scalar +
                                 " but each layer has " +
                                 std::to_string(heads) +
                                 " heads; it must be between 0 and " +
                                 std::to_string(heads));
      return std::nullopt;
    }
    return k;
  }

  void placeKinds(const Node &node) {
    if (node.kind != Node::Kind::Sequence || node.items.empty()) {
      diags.error(node.loc,
                  "'attention.kinds' expects a list of head kinds, or "
                  "one such list per layer; found " +
                      node.describe());
      return;
    }
    bool nested = node.items[0].kind == Node::Kind::Sequence;
    if (!nested) { // One list for every layer.
      auto row = readKinds(node, "attention.kinds");
      for (auto &layer : spec.attention.layers)
        if (row)
          layer = *row;
      return;
    }
    if (!sameLength(node, "attention.kinds"))
      return;
    for (size_t l = 0; l < node.items.size(); ++l)
      if (auto row = readKinds(node.items[l], "attention.kinds"))
        spec.attention.layers[l] = *row;
  }

  void placePool(const Node &node) {
    if (spec.model.pool != Pool::Attentive) {
      diags.error(node.loc, "'attention.pool' gives the kinds of attentive "
                            "pooling heads, but the model pools by '" +
                                std::string(spelling(spec.model.pool)) +
                                "'; set model.pool: attentive");
      return;
    }
    if (node.kind != Node::Kind::Sequence) {
      diags.error(node.loc,
                  "'attention.pool' expects a list of head kinds; found " +
                      node.describe());
      return;
    }
    auto row = readKinds(node, "attention.pool", spec.model.poolHeads);
    if (!row)
      return;
    for (size_t h = 0; h < row->size(); ++h) {
      HeadKind kind = spec.attention.kind((*row)[h]);
      if (kind.needsSelfAttention())
        diags.error(node.items[h].loc,
                    "head kind '" + std::string(kind.name) +
                        "' needs square self-attention (" +
                        (kind.learnable ? "its learned beta adds" : "it adds") +
                        " the query's own value), but attentive pooling is "
                        "cross-attention: learned queries over the image's "
                        "tokens; use 'attn'");
    }
    spec.attention.pool = *row;
  }

  /// One layer's list of kind names; `expected` heads (default model.heads).
  std::optional<std::vector<HeadKindId>>
  readKinds(const Node &list, const char *p, int64_t expected = -1) {
    if (expected < 0)
      expected = spec.model.heads;
    if (list.kind != Node::Kind::Sequence) {
      diags.error(list.loc, inQuotes(p) +
                                " expects a list of head kinds; found " +
                                list.describe());
      return std::nullopt;
    }
    if (int64_t(list.items.size()) != expected) {
      diags.error(list.loc,
                  inQuotes(p) + " lists " + std::to_string(list.items.size()) +
                      " heads; the layer has " + std::to_string(expected));
      return std::nullopt;
    }
    std::vector<std::string_view> known;
    std::vector<HeadKind> kinds = spec.attention.kinds();
    for (const HeadKind &kind : kinds)
      known.push_back(kind.name);
    std::vector<HeadKindId> row;
    bool ok = true;
    for (const Node &item : list.items) {
      auto id = item.kind == Node::Kind::Scalar
                    ? spec.attention.find(item.scalar)
                    : std::nullopt;
      if (!id) {
        std::string name = item.kind == Node::Kind::Scalar ? item.scalar : "";
        diags.error(item.loc,
                    "unknown head kind " +
                        (name.empty() ? item.describe() : inQuotes(name)) +
                        didYouMean(name, known) +
                        " (kinds: " + listChoices(known) + ")");
        ok = false;
        continue;
      }
      row.push_back(*id);
    }
    return ok ? std::optional(row) : std::nullopt;
  }

  bool sameLength(const Node &list, const char *p) {
    size_t layers = spec.attention.layers.size();
    if (list.items.size() == layers || !layersOk)
      return list.items.size() == layers;
    diags.error(list.loc,
                inQuotes(p) + " lists " + std::to_string(list.items.size()) +
                    " layers; the model has " + std::to_string(layers));
    return false;
  }

  Spec &spec;
  bool layersOk;
  Diagnostics &diags;
};

} // namespace

void lap::dsl::placeHeadKinds(Spec &spec, const AttentionPlacement &placement,
                              bool layersOk, Diagnostics &diags) {
  AttentionResolver(spec, layersOk, diags).run(placement);
}
