//===- SchemaDocsTest.cpp - every spec key documented and acted on --------===//
//
// Walks the spec language (dsl/SpecSchema.h) with a visitor that collects
// every key of `model` and `train`, and checks each against docs/spec.md's
// tables: documented, and not among keys that are accepted but ignored
// ("not applied"). A key the runtime does not implement must be refused,
// not accepted: this keeps a new key from arriving without either.
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecSchema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace lap::dsl;
using namespace lap::dsl::schema;

namespace {

/// Collects the dotted path of every key the schema visits, relative to
/// its top-level section ("dino_head.prototypes", "optimizer.lr").
class KeyCollector {
public:
  std::vector<std::string> keys;

  template <class F> void section(const char *key, Applies, F body) {
    prefix.push_back(key);
    body();
    prefix.pop_back();
  }
  template <class F>
  void optionalSection(const char *key, Applies applies, bool, F body) {
    section(key, applies, body);
  }
  template <class T>
  void field(const char *key, T &, Rule = any, Applies = always, bool = false) {
    add(key);
  }
  void range(const char *key, double &, double &, Rule, Applies = always) {
    add(key);
  }
  void pair(const char *key, double &, double &, Rule) { add(key); }
  void floatOrWord(const char *key, double &, bool &, const char *, Rule) {
    add(key);
  }
  template <class Allowed>
  void strings(const char *key, std::vector<std::string> &, const Allowed &) {
    add(key);
  }
  template <class Entries>
  void weights(const char *key, Entries &, Rule, Applies = always) {
    add(key);
  }

private:
  void add(const std::string &key) {
    std::string path;
    for (const std::string &p : prefix)
      path += p + ".";
    keys.push_back(path + key);
  }
  std::vector<std::string> prefix;
};

/// The keys of docs/spec.md's table rows, each with its row. A first cell
/// lists one key or several ("optimizer.momentum, nesterov, ns_steps",
/// "schedule.warmup_steps / warmup_epochs"): the first one's section
/// applies to the others. Required keys are in bold.
std::map<std::string, std::string> documentedKeys() {
  std::ifstream in(LAP_SPEC_DOC);
  EXPECT_TRUE(in) << "cannot read " << LAP_SPEC_DOC;
  std::map<std::string, std::string> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0)
      continue;
    std::string cell = line.substr(2, line.find(" |", 2) - 2);
    std::string section;
    std::string item;
    std::istringstream items(cell);
    while (std::getline(items, item, ',')) {
      std::istringstream alternatives(item);
      std::string key;
      while (std::getline(alternatives, key, '/')) {
        key.erase(0, key.find_first_not_of(" *"));
        key.erase(key.find_last_not_of(" *") + 1);
        if (key.empty())
          continue;
        size_t dot = key.rfind('.');
        if (dot != std::string::npos)
          section = key.substr(0, dot + 1);
        else
          key = section + key;
        rows[key] = line;
      }
    }
  }
  return rows;
}

TEST(SchemaDocs, EveryKeyIsDocumentedAndActedOn) {
  ModelSpec model;
  TrainSpec train;
  KeyCollector collector;
  visitModel(collector, model);
  visitTrain(collector, train);
  ASSERT_GT(collector.keys.size(), 80u);
  std::map<std::string, std::string> documented = documentedKeys();
  for (const std::string &key : collector.keys) {
    auto row = documented.find(key);
    if (row == documented.end()) {
      ADD_FAILURE() << "the spec key '" << key << "' is not in a table of "
                    << LAP_SPEC_DOC;
      continue;
    }
    EXPECT_EQ(row->second.find("not applied"), std::string::npos)
        << "'" << key
        << "' is accepted but not acted on; refuse it until it is: "
        << row->second;
  }
}

} // namespace
