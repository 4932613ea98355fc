//===- YamlTree.cpp - yaml-cpp documents to located trees --------*- C++ -*-===//
//
// yaml-cpp reports errors by throwing; this file catches them at the border,
// so nothing above it sees an exception. It also enforces the limits that
// keep the front end total on any input: bounded file size, node count
// (aliases can multiply a small file), nesting depth and `extends` depth.
//
//===----------------------------------------------------------------------===//

#include "dsl/YamlTree.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
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
Loc locOf(const YAML::Mark &mark, const std::string &file, const Loc &fallback) {
  if (mark.line < 0 || mark.column < 0)
    return fallback;
  return {file, unsigned(mark.line) + 1, unsigned(mark.column) + 1};
}

class TreeBuilder {
public:
  TreeBuilder(const std::vector<ExclusiveKeys> &exclusive, Diagnostics &diags,
              const TreeLimits &limits)
      : exclusive(exclusive), diags(diags), limits(limits) {}

  /// Loads a file; `namedAt` is the `extends` that named it, if any.
  std::optional<Node> loadFile(const std::string &path, const Loc *namedAt);
  std::optional<Node> parseText(std::string_view text, const std::string &name);

private:
  bool convert(const YAML::Node &y, Node &out, const std::string &file,
               unsigned depth, const Loc &fallback);
  std::optional<Node> resolveExtends(Node root, const std::string &file);
  Node merge(Node base, Node child, const std::string &path) const;

  const std::vector<ExclusiveKeys> &exclusive;
  Diagnostics &diags;
  const TreeLimits &limits;
  size_t nodes = 0;
  bool exhausted = false;
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
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception &e) {
    diags.error(locOf(e.mark, name, top), "YAML syntax error: " + e.msg);
    return std::nullopt;
  } catch (const std::exception &e) {
    diags.error(top, std::string("YAML reader failed: ") + e.what());
    return std::nullopt;
  }
  if (docs.size() > 1) {
    diags.error(locOf(docs[1].Mark(), name, top),
                "a spec file holds one YAML document; found a second");
    return std::nullopt;
  }
  Node root;
  root.loc = top;
  if (!docs.empty() && !convert(docs[0], root, name, 0, top))
    return std::nullopt;
  if (root.kind != Node::Kind::Map) {
    diags.error(root.loc, "a spec is a mapping with sections 'model', "
                          "'attention' and 'train'; found " +
                              root.describe());
    return std::nullopt;
  }
  return resolveExtends(std::move(root), name);
}

bool TreeBuilder::convert(const YAML::Node &y, Node &out,
                          const std::string &file, unsigned depth,
                          const Loc &fallback) {
  out.loc = locOf(y.Mark(), file, fallback);
  if (exhausted)
    return false;
  if (++nodes > limits.maxNodes) {
    exhausted = true;
    diags.error(out.loc, "spec too large: more than " +
                             std::to_string(limits.maxNodes) +
                             " nodes once aliases are expanded");
    return false;
  }
  if (depth > limits.maxDepth) {
    exhausted = true;
    diags.error(out.loc, "spec nested deeper than " +
                             std::to_string(limits.maxDepth) + " levels");
    return false;
  }
  switch (y.Type()) {
  case YAML::NodeType::Undefined:
  case YAML::NodeType::Null:
    out.kind = Node::Kind::Null;
    return true;
  case YAML::NodeType::Scalar:
    out.kind = Node::Kind::Scalar;
    out.scalar = y.Scalar();
    out.quoted = y.Tag() == "!";
    return true;
  case YAML::NodeType::Sequence:
    out.kind = Node::Kind::Sequence;
    for (const auto &item : y) {
      out.items.emplace_back();
      if (!convert(item, out.items.back(), file, depth + 1, out.loc))
        return false;
    }
    return true;
  case YAML::NodeType::Map:
    out.kind = Node::Kind::Map;
    for (const auto &kv : y) {
      Node key, value;
      if (!convert(kv.first, key, file, depth + 1, out.loc))
        return false;
      if (!convert(kv.second, value, file, depth + 1, key.loc))
        return false;
      if (key.kind != Node::Kind::Scalar) {
        diags.error(key.loc, "mapping keys must be names; found " +
                                 key.describe());
        continue;
      }
      auto first = std::find_if(
          out.entries.begin(), out.entries.end(),
          [&](const auto &e) { return e.first.scalar == key.scalar; });
      if (first != out.entries.end()) {
        diags.error(key.loc, "duplicate key '" + key.scalar +
                                 "' (first given at line " +
                                 std::to_string(first->first.loc.line) + ")");
        continue;
      }
      out.entries.emplace_back(std::move(key), std::move(value));
    }
    return true;
  }
  return true;
}

std::optional<Node> TreeBuilder::resolveExtends(Node root,
                                                const std::string &file) {
  auto it = std::find_if(root.entries.begin(), root.entries.end(),
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
    bool childSets = std::any_of(child.entries.begin(), child.entries.end(),
                                 [&](const auto &e) { return inGroup(e.first.scalar); });
    if (childSets)
      base.entries.erase(std::remove_if(base.entries.begin(), base.entries.end(),
                                        [&](const auto &e) { return inGroup(e.first.scalar); }),
                         base.entries.end());
  }
  for (auto &entry : child.entries) {
    Node &key = entry.first, &value = entry.second;
    auto it = std::find_if(base.entries.begin(), base.entries.end(),
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

std::optional<Node> lap::dsl::loadTree(const std::string &path,
                                       const std::vector<ExclusiveKeys> &exclusive,
                                       Diagnostics &diags,
                                       const TreeLimits &limits) {
  return TreeBuilder(exclusive, diags, limits).loadFile(path, nullptr);
}

std::optional<Node> lap::dsl::parseTree(std::string_view text,
                                        const std::string &name,
                                        const std::vector<ExclusiveKeys> &exclusive,
                                        Diagnostics &diags,
                                        const TreeLimits &limits) {
  return TreeBuilder(exclusive, diags, limits).parseText(text, name);
}
