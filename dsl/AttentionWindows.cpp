//===- AttentionWindows.cpp - Sliding windows per layer ---------*- C++ -*-===//
//
// `attention.window`: how many keys a query of each layer sees, itself
// included (query t sees keys t - window < s <= t; 0: all of them). A
// causal mask's refinement, so language models only. As a pattern, layer l
// takes letter l of the pattern (repeated): S the short window, L the long
// one (default 0: the whole context), and the last layer is always long,
// as in nanochat's window_pattern (whose flash-attention window (w, 0)
// counts the keys before the query: its S layers are lap's w + 1).
//
//===----------------------------------------------------------------------===//

#include "dsl/AttentionWindows.h"
#include "dsl/Scalars.h"

#include <algorithm>
#include <optional>

using namespace lap::dsl;

namespace {

class WindowReader {
public:
  WindowReader(Spec &spec, bool layersOk, Diagnostics &diags)
      : spec(spec), layers(layersOk ? size_t(spec.model.layers) : 0),
        diags(diags) {}

  void run(const Node &node) {
    spec.locations["attention.window"] = node.loc;
    if (spec.model.family != Family::GPT) {
      diags.error(node.loc,
                  "'attention.window' is a sliding window over earlier "
                  "tokens, for causal models (model.family: gpt); an "
                  "image model's patches see each other");
      return;
    }
    if (node.kind == Node::Kind::Map)
      return pattern(node);
    if (node.kind == Node::Kind::Sequence) {
      if (layers != 0 && node.items.size() != layers) {
        diags.error(node.loc, "'attention.window' lists " +
                                  std::to_string(node.items.size()) +
                                  " layers; the model has " +
                                  std::to_string(layers));
        return;
      }
      std::vector<int64_t> windows;
      for (const Node &item : node.items)
        if (auto w = size(item, "attention.window"))
          windows.push_back(*w);
      if (windows.size() == node.items.size() && layers != 0)
        spec.attention.windows = windows;
      return;
    }
    if (auto w = size(node, "attention.window"))
      spec.attention.windows.assign(layers, *w);
  }

private:
  /// A window: 0 (none) up to the context.
  std::optional<int64_t> size(const Node &node, const std::string &path) {
    const int64_t context = spec.model.context;
    int64_t w;
    if (node.kind != Node::Kind::Scalar || node.quoted ||
        !parseInteger(node.scalar, w)) {
      diags.error(node.loc,
                  inQuotes(path) +
                      " expects the keys a query sees (0: all), a list of "
                      "them per layer, or {pattern: SSSL, short: N}; "
                      "found " +
                      node.describe());
      return std::nullopt;
    }
    if (w < 0 || (context > 0 && w > context)) {
      diags.error(node.loc, inQuotes(path) + " is " + node.scalar +
                                "; a window is between 1 and the context (" +
                                std::to_string(context) + "), or 0 for none");
      return std::nullopt;
    }
    return w;
  }

  /// `{pattern: SSSL, short: N, long: M}`.
  void pattern(const Node &map) {
    const Node *letters = map.find("pattern"), *shortNode = map.find("short"),
               *longNode = map.find("long");
    for (const auto &[key, value] : map.entries)
      if (key.scalar != "pattern" && key.scalar != "short" &&
          key.scalar != "long")
        diags.error(key.loc, "unknown key " +
                                 inQuotes("attention.window." + key.scalar) +
                                 " (a pattern has 'pattern', 'short' and "
                                 "'long')");
    if (!letters || !shortNode) {
      diags.error(map.loc, "a window pattern needs 'pattern' (letters S and "
                           "L, one per layer, repeated) and 'short' (the S "
                           "layers' window)");
      return;
    }
    bool lettersOk =
        letters->kind == Node::Kind::Scalar && !letters->scalar.empty() &&
        letters->scalar.find_first_not_of("SL") == std::string::npos;
    if (!lettersOk)
      diags.error(letters->loc,
                  "'attention.window.pattern' is letters S (short) and L "
                  "(long), e.g. SSSL; found " +
                      letters->describe());
    std::optional<int64_t> shortWindow =
        size(*shortNode, "attention.window.short");
    std::optional<int64_t> longWindow =
        longNode ? size(*longNode, "attention.window.long")
                 : std::optional<int64_t>(0);
    if (shortWindow == 0)
      diags.error(shortNode->loc, "'attention.window.short' must be positive");
    if (!lettersOk || !shortWindow || !longWindow || *shortWindow == 0)
      return;
    const std::string &p = letters->scalar;
    spec.attention.windows.resize(layers);
    for (size_t l = 0; l < layers; ++l)
      spec.attention.windows[l] =
          p[l % p.size()] == 'S' && l + 1 < layers ? *shortWindow : *longWindow;
  }

  Spec &spec;
  size_t layers;
  Diagnostics &diags;
};

} // namespace

void lap::dsl::placeWindows(Spec &spec, const Node *window, bool layersOk,
                            Diagnostics &diags) {
  spec.attention.windows.assign(
      layersOk ? size_t(std::max<int64_t>(spec.model.layers, 0)) : 0, 0);
  if (window)
    WindowReader(spec, layersOk, diags).run(*window);
}
