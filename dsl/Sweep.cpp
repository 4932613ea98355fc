//===- Sweep.cpp - Variants of one spec over axes of settings ---*- C++ -*-===//

#include "dsl/Sweep.h"

#include <map>
#include <set>

using namespace lap::dsl;

namespace {

struct Axis {
  std::string path;
  const Node *list;
};

/// Axes of `map` (or of its `zip`), each a dotted path with a non-empty
/// list of values.
bool readAxis(const Node &key, const Node &value, const std::string &where,
              std::vector<Axis> &out, Diagnostics &diags) {
  const std::string &path = key.scalar;
  bool wellFormed = !path.empty() && path.front() != '.' &&
                    path.back() != '.' && path.find("..") == std::string::npos;
  if (!wellFormed || path.rfind("sweep", 0) == 0 || path == "name" ||
      path.rfind("extends", 0) == 0) {
    diags.error(key.loc, "'" + where + "' axis '" + path +
                             "' must be the dotted path of a setting (for "
                             "example model.layers or train.seed)");
    return false;
  }
  if (value.kind != Node::Kind::Sequence || value.items.empty()) {
    diags.error(value.loc, "'" + where + "." + path +
                               "' expects a list of the values to try; found " +
                               value.describe());
    return false;
  }
  out.push_back({path, &value});
  return true;
}

Node *childMap(Node &map, const std::string &key, const Loc &loc) {
  for (auto &[k, v] : map.entries)
    if (k.scalar == key) {
      if (v.kind != Node::Kind::Map) { // a section written as null or scalar
        v = Node();
        v.kind = Node::Kind::Map;
        v.loc = loc;
      }
      return &v;
    }
  Node k, v;
  k.kind = Node::Kind::Scalar;
  k.scalar = key;
  k.loc = loc;
  v.kind = Node::Kind::Map;
  v.loc = loc;
  map.entries.emplace_back(std::move(k), std::move(v));
  return &map.entries.back().second;
}

} // namespace

std::optional<std::vector<SweepPoint>>
lap::dsl::sweepPoints(const Node &sweep, Diagnostics &diags) {
  if (sweep.kind != Node::Kind::Map || sweep.entries.empty()) {
    diags.error(sweep.loc, "'sweep' expects a mapping of setting paths to "
                           "lists of values; found " +
                               sweep.describe());
    return std::nullopt;
  }
  // Groups of axes that advance together: each plain axis alone, the zip
  // axes as one group.
  std::vector<std::vector<Axis>> groups;
  std::set<std::string> seen;
  bool ok = true;
  for (const auto &[key, value] : sweep.entries) {
    if (key.scalar != "zip") {
      std::vector<Axis> axis;
      ok &= readAxis(key, value, "sweep", axis, diags);
      if (!axis.empty())
        groups.push_back(axis);
      continue;
    }
    if (value.kind != Node::Kind::Map || value.entries.empty()) {
      diags.error(value.loc, "'sweep.zip' expects a mapping of setting paths "
                             "to lists of one length; found " +
                                 value.describe());
      ok = false;
      continue;
    }
    std::vector<Axis> zipped;
    for (const auto &[k, v] : value.entries)
      ok &= readAxis(k, v, "sweep.zip", zipped, diags);
    for (const Axis &a : zipped)
      if (a.list->items.size() != zipped[0].list->items.size()) {
        diags.error(a.list->loc,
                    "'sweep.zip." + a.path + "' lists " +
                        std::to_string(a.list->items.size()) +
                        " values, but '" + zipped[0].path + "' lists " +
                        std::to_string(zipped[0].list->items.size()) +
                        ": zipped axes advance together");
        ok = false;
      }
    if (!zipped.empty())
      groups.push_back(zipped);
  }
  for (const auto &group : groups)
    for (const Axis &a : group)
      if (!seen.insert(a.path).second) {
        diags.error(a.list->loc,
                    "'sweep' names the axis '" + a.path + "' twice");
        ok = false;
      }
  if (!ok)
    return std::nullopt;
  size_t total = 1;
  for (const auto &group : groups) {
    total *= group[0].list->items.size();
    if (total > 10000) {
      diags.error(sweep.loc, "'sweep' has more than 10000 variants");
      return std::nullopt;
    }
  }
  std::vector<SweepPoint> points(1);
  for (const auto &group : groups) {
    std::vector<SweepPoint> next;
    for (const SweepPoint &prefix : points)
      for (size_t i = 0; i < group[0].list->items.size(); ++i) {
        SweepPoint p = prefix;
        for (const Axis &a : group)
          p.emplace_back(a.path, &a.list->items[i]);
        next.push_back(std::move(p));
      }
    points = std::move(next);
  }
  return points;
}

Node lap::dsl::withPoint(const Node &root, const SweepPoint &point) {
  Node out = root;
  for (const auto &[path, value] : point) {
    Node *map = &out;
    size_t begin = 0;
    for (size_t dot; (dot = path.find('.', begin)) != std::string::npos;
         begin = dot + 1)
      map = childMap(*map, path.substr(begin, dot - begin), value->loc);
    std::string key = path.substr(begin);
    bool replaced = false;
    for (auto &[k, v] : map->entries)
      if (k.scalar == key) {
        v = *value;
        replaced = true;
      }
    if (!replaced) {
      Node k;
      k.kind = Node::Kind::Scalar;
      k.scalar = key;
      k.loc = value->loc;
      map->entries.emplace_back(std::move(k), *value);
    }
  }
  return out;
}

std::string lap::dsl::valueText(const Node &value) {
  if (value.kind == Node::Kind::Scalar)
    return value.scalar;
  std::string text;
  for (const Node &item : value.items)
    text += (text.empty() ? "" : "_") + valueText(item);
  return text.empty() ? value.describe() : text;
}

std::string lap::dsl::variantName(const std::string &base,
                                  const SweepPoint &point) {
  std::map<std::string, int> lastParts;
  auto last = [](const std::string &path) {
    return path.substr(path.rfind('.') + 1);
  };
  for (const auto &[path, value] : point)
    ++lastParts[last(path)];
  std::string name = base;
  for (const auto &[path, value] : point)
    name += "-" + (lastParts[last(path)] > 1 ? path : last(path)) + "=" +
            valueText(*value);
  return name;
}
