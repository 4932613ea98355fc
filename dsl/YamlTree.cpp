//===- YamlTree.cpp - yaml-cpp parse events to located trees -----*- C++ -*-===//
//
// Trees are built from yaml-cpp's event stream rather than its YAML::Node
// documents, so that the limits hold while parsing, not after. yaml-cpp
// reports errors by throwing; this file catches them at the border, so
// nothing above it sees an exception. The limits keep the front end total on
// any input: bounded file size, node count (aliases can multiply a small
// file), nesting depth and `extends` depth.
//
//===----------------------------------------------------------------------===//

#include "dsl/YamlTree.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

namespace fs = std::filesystem;
using namespace lap::dsl;

const Node *Node::find(std::string_view key) const {
  if (kind != Kind::Map)
    return nullptr;
  for (const auto &[k, v] : entries)
    if (k.scalar == key)
      return &v;
  return nullptr;
}

std::string Node::describe() const {
  switch (kind) {
  case Kind::Null:
    return "nothing";
  case Kind::Scalar:
    return "'" + scalar + "'";
  case Kind::Sequence:
    return "a list";
  case Kind::Map:
    return "a mapping";
  }
  return "?";
}

namespace {

/// yaml-cpp marks are 0-based, ours are 1-based; marks of implicit nodes
/// (an empty value) are negative, and then the enclosing location stands in.
Loc locOf(const YAML::Mark &mark, const std::string &file,
          const Loc &fallback) {
  if (mark.line < 0 || mark.column < 0)
    return fallback;
  return {file, unsigned(mark.line) + 1, unsigned(mark.column) + 1};
}

/// Builds located nodes from yaml-cpp's parse events. Limits are enforced as
/// events arrive, which also stops inputs on which the parser itself would
/// loop forever (yaml-cpp 0.7 does on "- a\n, b"): every turn of such a loop
/// emits a node, and the node budget ends it.
class EventBuilder : public YAML::EventHandler {
public:
  /// Thrown when a limit is hit; caught in TreeBuilder::parseText.
  struct Stop {
    Loc loc;
    std::string message;
  };

  EventBuilder(const std::string &file, const TreeLimits &limits, size_t &nodes,
               Diagnostics &diags)
      : file(file), limits(limits), nodes(nodes), diags(diags) {}

  /// Whether the document had a key that is not a name, or a tag.
  bool failed() const { return badKeys; }
  /// The document's root; an empty document gives a null at `top`.
  Node takeRoot(const Loc &top) {
    if (!haveRoot)
      root.loc = top;
    return std::move(root);
  }

  void OnDocumentStart(const YAML::Mark &mark) override {
    if (++documents > 1)
      throw Stop{at(mark),
                 "a spec file holds one YAML document; found a second"};
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark &mark, YAML::anchor_t anchor) override {
    Node n;
    n.loc = at(mark);
    add(std::move(n), anchor);
  }
  void OnScalar(const YAML::Mark &mark, const std::string &tag,
                YAML::anchor_t anchor, const std::string &value) override {
    checkTag(tag, mark);
    Node n;
    n.kind = Node::Kind::Scalar;
    n.loc = at(mark);
    n.scalar = value;
    n.quoted = tag == "!"; // yaml-cpp's tag for quoted scalars
    add(std::move(n), anchor);
  }
  void OnAlias(const YAML::Mark &mark, YAML::anchor_t anchor) override {
    auto it = anchors.find(anchor);
    if (it == anchors.end())
      throw Stop{at(mark), "alias of an anchor that is not complete here "
                           "(an alias inside its own anchor)"};
    count(size(it->second), at(mark));
    add(it->second, 0);
  }
  void OnSequenceStart(const YAML::Mark &mark, const std::string &tag,
                       YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    checkTag(tag, mark);
    open(Node::Kind::Sequence, at(mark), anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark &mark, const std::string &tag,
                  YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    checkTag(tag, mark);
    open(Node::Kind::Map, at(mark), anchor);
  }
  void OnMapEnd() override { close(); }

private:
  struct Open {
    Node node;
    YAML::anchor_t anchor;
    std::optional<Node> key; ///< Map: a key waiting for its value.
  };

  /// Explicit tags (`!foo`, `!!str`) mean nothing in a spec; refusing them
  /// keeps every accepted value printable as it was read. yaml-cpp reports
  /// "?" for plain scalars and "!" for quoted ones.
  void checkTag(const std::string &tag, const YAML::Mark &mark) {
    if (tag.empty() || tag == "?" || tag == "!")
      return;
    diags.error(at(mark),
                "YAML tags ('" + tag + "') are not part of the spec language");
    badKeys = true;
  }

  Loc at(const YAML::Mark &mark) const {
    Loc fallback = stack.empty() ? Loc{file, 1, 1} : stack.back().node.loc;
    return locOf(mark, file, fallback);
  }

  static size_t size(const Node &n) {
    size_t total = 1;
    for (const Node &item : n.items)
      total += size(item);
    for (const auto &[k, v] : n.entries)
      total += size(k) + size(v);
    return total;
  }

  void count(size_t added, const Loc &loc) {
    nodes += added;
    if (nodes > limits.maxNodes)
      throw Stop{loc, "spec too large: more than " +
                          std::to_string(limits.maxNodes) +
                          " nodes once aliases are expanded"};
  }

  void open(Node::Kind kind, const Loc &loc, YAML::anchor_t anchor) {
    if (stack.size() >= limits.maxDepth)
      throw Stop{loc, "spec nested deeper than " +
                          std::to_string(limits.maxDepth) + " levels"};
    count(1, loc);
    Node n;
    n.kind = kind;
    n.loc = loc;
    stack.push_back({std::move(n), anchor, std::nullopt});
  }

  void close() {
    Open done = std::move(stack.back());
    stack.pop_back();
    add(std::move(done.node), done.anchor);
  }

  void add(Node n, YAML::anchor_t anchor) {
    if (n.kind != Node::Kind::Sequence && n.kind != Node::Kind::Map)
      count(1, n.loc);
    if (anchor) {
      count(size(n), n.loc); // The copy kept for aliases.
      anchors[anchor] = n;
    }
    if (stack.empty()) {
      root = std::move(n);
      haveRoot = true;
      return;
    }
    Open &top = stack.back();
    if (top.node.kind == Node::Kind::Sequence)
      top.node.items.push_back(std::move(n));
    else if (!top.key)
      top.key = std::move(n);
    else
      insert(top, std::move(n));
  }

  void insert(Open &map, Node value) {
    Node key = std::move(*map.key);
    map.key.reset();
    if (key.kind != Node::Kind::Scalar) {
      diags.error(key.loc,
                  "mapping keys must be names; found " + key.describe());
      badKeys = true;
      return;
    }
    for (const auto &entry : map.node.entries)
      if (entry.first.scalar == key.scalar) {
        diags.error(key.loc, "duplicate key '" + key.scalar +
                                 "' (first given at line " +
                                 std::to_string(entry.first.loc.line) + ")");
        return;
      }
    map.node.entries.emplace_back(std::move(key), std::move(value));
  }

  const std::string &file;
  const TreeLimits &limits;
  size_t &nodes;
  Diagnostics &diags;
  std::vector<Open> stack;
  std::map<YAML::anchor_t, Node> anchors;
  Node root;
  bool haveRoot = false;
  bool badKeys = false;
  int documents = 0;
};

/// Loads files and resolves their `extends` chains.
class TreeBuilder {
public:
  TreeBuilder(const std::vector<ExclusiveKeys> &exclusive, Diagnostics &diags,
              const TreeLimits &limits)
      : exclusive(exclusive), diags(diags), limits(limits) {}

  /// Loads a file; `namedAt` is the `extends` that named it, if any.
  std::optional<Node> loadFile(const std::string &path, const Loc *namedAt);
  std::optional<Node> parseText(std::string_view text, const std::string &name);

private:
  std::optional<Node> resolveExtends(Node root, const std::string &file);
  Node merge(Node base, Node child, const std::string &path) const;

  const std::vector<ExclusiveKeys> &exclusive;
  Diagnostics &diags;
  const TreeLimits &limits;
  size_t nodes = 0;               ///< Over the whole extends chain.
  std::vector<std::string> chain; ///< Canonical paths being loaded.
};

} // namespace

std::optional<Node> TreeBuilder::loadFile(const std::string &path,
                                          const Loc *namedAt) {
  Loc where = namedAt ? *namedAt : Loc{path};
  auto fail = [&](const std::string &why) -> std::optional<Node> {
    diags.error(where, "cannot read spec '" + path + "': " + why);
    return std::nullopt;
  };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail("not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(std::strerror(errno));
  // Read at most one byte past the limit: stat sizes of special files lie.
  std::string text(limits.maxFileBytes + 1, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  if (text.size() > limits.maxFileBytes)
    return fail("larger than " + std::to_string(limits.maxFileBytes) +
                " bytes");

  std::error_code ec;
  std::string canonical = fs::weakly_canonical(path, ec).string();
  if (ec)
    canonical = path;
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
    std::string cycle;
    for (auto it = std::find(chain.begin(), chain.end(), canonical);
         it != chain.end(); ++it)
      cycle += fs::path(*it).filename().string() + " -> ";
    diags.error(where, "'extends' cycle: " + cycle +
                           fs::path(canonical).filename().string());
    return std::nullopt;
  }
  if (chain.size() >= limits.maxExtends) {
    diags.error(where, "'extends' chain longer than " +
                           std::to_string(limits.maxExtends) + " files");
    return std::nullopt;
  }
  chain.push_back(canonical);
  auto tree = parseText(text, path);
  chain.pop_back();
  return tree;
}

std::optional<Node> TreeBuilder::parseText(std::string_view text,
                                           const std::string &name) {
  Loc top{name, 1, 1};
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  EventBuilder builder(name, limits, nodes, diags);
  try {
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::Exception &e) {
    diags.error(locOf(e.mark, name, top), "YAML syntax error: " + e.msg);
    return std::nullopt;
  } catch (const EventBuilder::Stop &stop) {
    diags.error(stop.loc, stop.message);
    return std::nullopt;
  }
  if (builder.failed())
    return std::nullopt;
  Node root = builder.takeRoot(top);
  if (root.kind != Node::Kind::Map) {
    diags.error(root.loc, "a spec is a mapping with sections 'model', "
                          "'attention' and 'train'; found " +
                              root.describe());
    return std::nullopt;
  }
  return resolveExtends(std::move(root), name);
}

std::optional<Node> TreeBuilder::resolveExtends(Node root,
                                                const std::string &file) {
  auto it =
      std::find_if(root.entries.begin(), root.entries.end(),
                   [](const auto &e) { return e.first.scalar == "extends"; });
  if (it == root.entries.end())
    return root;
  Node named = it->second;
  root.entries.erase(it);
  if (named.kind != Node::Kind::Scalar || named.scalar.empty()) {
    diags.error(named.loc, "'extends' takes the path of a spec file; found " +
                               named.describe());
    return std::nullopt;
  }
  fs::path path(named.scalar);
  if (path.is_relative())
    path = fs::path(file).parent_path() / path;
  auto base = loadFile(path.lexically_normal().string(), &named.loc);
  if (!base)
    return std::nullopt;
  return merge(std::move(*base), std::move(root), "");
}

Node TreeBuilder::merge(Node base, Node child, const std::string &path) const {
  if (base.kind != Node::Kind::Map || child.kind != Node::Kind::Map)
    return child;
  for (const auto &group : exclusive) {
    if (group.path != path)
      continue;
    auto inGroup = [&](const std::string &key) {
      return std::find(group.keys.begin(), group.keys.end(), key) !=
             group.keys.end();
    };
    bool childSets =
        std::any_of(child.entries.begin(), child.entries.end(),
                    [&](const auto &e) { return inGroup(e.first.scalar); });
    if (childSets)
      base.entries.erase(std::remove_if(base.entries.begin(),
                                        base.entries.end(),
                                        [&](const auto &e) {
                                          return inGroup(e.first.scalar);
                                        }),
                         base.entries.end());
  }
  for (auto &entry : child.entries) {
    Node &key = entry.first, &value = entry.second;
    auto it = std::find_if(
        base.entries.begin(), base.entries.end(),
        [&](const auto &e) { return e.first.scalar == key.scalar; });
    std::string sub = path.empty() ? key.scalar : path + "." + key.scalar;
    if (it == base.entries.end()) {
      base.entries.emplace_back(std::move(key), std::move(value));
    } else {
      it->second = merge(std::move(it->second), std::move(value), sub);
      it->first = std::move(key);
    }
  }
  return base;
}

std::optional<Node>
lap::dsl::loadTree(const std::string &path,
                   const std::vector<ExclusiveKeys> &exclusive,
                   Diagnostics &diags, const TreeLimits &limits) {
  return TreeBuilder(exclusive, diags, limits).loadFile(path, nullptr);
}

std::optional<Node>
lap::dsl::parseTree(std::string_view text, const std::string &name,
                    const std::vector<ExclusiveKeys> &exclusive,
                    Diagnostics &diags, const TreeLimits &limits) {
  return TreeBuilder(exclusive, diags, limits).parseText(text, name);
}
