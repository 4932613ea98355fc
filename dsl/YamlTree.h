//===- YamlTree.h - Spec files as located trees, extends resolved -*- C++ -*-===//
//
// The only interface to YAML in lap. A spec file (and the chain of files it
// `extends`) becomes one tree of plain nodes, each remembering the file, line
// and column it came from, so that every later error points at the text the
// user wrote, in whichever file of the chain wrote it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_YAMLTREE_H
#define LAP_DSL_YAMLTREE_H

#include "dsl/Diagnostics.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lap::dsl {

/// A YAML node with its source location. Aliases are expanded.
struct Node {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string scalar;                         ///< Scalar: its text.
  bool quoted = false;                        ///< Scalar: written in quotes.
  std::vector<Node> items;                    ///< Sequence: elements.
  std::vector<std::pair<Node, Node>> entries; ///< Map: (key, value) in order.
  Loc loc;

  /// Map lookup; null when absent or when this is not a map.
  const Node *find(std::string_view key) const;
  /// "a mapping", "a list", "a scalar 'x'" or "nothing", for messages.
  std::string describe() const;
};

/// Keys of one mapping that replace each other as a group under `extends`:
/// when the extending file sets any of them, the base's are dropped. (A file
/// that switches `attention` from `laplacian_heads` to `kinds` means it.)
struct ExclusiveKeys {
  std::string path; ///< Dotted path of the mapping, "" = root.
  std::vector<std::string> keys;
};

/// Limits that keep hostile input from hanging or exhausting memory.
struct TreeLimits {
  size_t maxFileBytes = 1 << 20;
  size_t maxNodes = 200000; ///< After alias expansion, whole chain.
  unsigned maxDepth = 64;
  unsigned maxExtends = 16;
};

/// Reads `path` and every file it extends, deep-merges them (the extending
/// file wins; maps merge key by key, everything else is replaced) and returns
/// the merged root mapping without its `extends` key. Errors go to `diags`.
std::optional<Node> loadTree(const std::string &path,
                             const std::vector<ExclusiveKeys> &exclusive,
                             Diagnostics &diags, const TreeLimits &limits = {});

/// As loadTree, for text already in memory; `name` is reported in locations
/// and `extends` paths resolve relative to its directory.
std::optional<Node> parseTree(std::string_view text, const std::string &name,
                              const std::vector<ExclusiveKeys> &exclusive,
                              Diagnostics &diags,
                              const TreeLimits &limits = {});

} // namespace lap::dsl

#endif // LAP_DSL_YAMLTREE_H
