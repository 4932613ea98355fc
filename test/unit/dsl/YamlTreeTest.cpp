//===- YamlTreeTest.cpp - Located trees, extends and limits -----*- C++ -*-===//

#include "dsl/YamlTree.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace lap::dsl;

namespace {

std::optional<Node> tree(const std::string &text, Diagnostics &diags,
                         const TreeLimits &limits = {}) {
  return parseTree(text, "t.yaml", {}, diags, limits);
}

/// A scratch directory of spec files, removed at the end of the test.
struct ScratchDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("lap-yaml-tree-" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string &name, const std::string &text) {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

} // namespace

TEST(YamlTree, NodesKnowWhereTheyWereWritten) {
  Diagnostics diags;
  auto root = tree("a:\n  b: [1, 'two']\n", diags);
  ASSERT_TRUE(root);
  const Node *b = root->find("a")->find("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, Node::Kind::Sequence);
  EXPECT_EQ(b->loc.line, 2u);
  EXPECT_EQ(b->loc.col, 6u);
  EXPECT_EQ(b->items[1].loc.col, 10u);
  EXPECT_FALSE(b->items[0].quoted);
  EXPECT_TRUE(b->items[1].quoted);
}

TEST(YamlTree, AliasesAreExpandedWithinTheBudget) {
  Diagnostics diags;
  auto root = tree("a: &x {k: 1}\nb: *x\n", diags);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->find("b")->find("k")->scalar, "1");

  // A "billion laughs" input stops at the node budget.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    bomb += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" +
            char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" +
            char(c - 1) + "]\n";
  Diagnostics bombDiags;
  EXPECT_FALSE(tree(bomb, bombDiags));
  ASSERT_TRUE(bombDiags.hasErrors());
  EXPECT_NE(bombDiags.all()[0].message.find("spec too large"),
            std::string::npos);
}

TEST(YamlTree, DepthIsLimited) {
  Diagnostics diags;
  std::string deep(100, '[');
  EXPECT_FALSE(tree("a: " + deep, diags));
  ASSERT_TRUE(diags.hasErrors());
  EXPECT_NE(diags.all()[0].message.find("nested deeper than 64"),
            std::string::npos);
}

TEST(YamlTree, ParserLoopsAreStopped) {
  // yaml-cpp 0.7 loops forever on this input when building YAML::Node trees.
  Diagnostics diags;
  EXPECT_FALSE(tree("- model\n, train\n", diags));
  EXPECT_TRUE(diags.hasErrors());
}

TEST(YamlTree, DuplicateKeysAndSecondDocumentsAreErrors) {
  Diagnostics dup;
  tree("a: 1\nb: 2\na: 3\n", dup);
  ASSERT_EQ(dup.all().size(), 1u);
  EXPECT_EQ(dup.all()[0].message, "duplicate key 'a' (first given at line 1)");
  EXPECT_EQ(dup.all()[0].loc.line, 3u);

  Diagnostics docs;
  EXPECT_FALSE(tree("a: 1\n---\nb: 2\n", docs));
  EXPECT_EQ(docs.all().at(0).message,
            "a spec file holds one YAML document; found a second");
}

TEST(YamlTree, ExtendsMergesDeeplyAndTheExtendingFileWins) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path / "sub");
  dir.write("base.yaml", "model: {layers: 2, width: 64}\ntrain: {steps: 5}\n");
  std::string child =
      dir.write("sub/child.yaml", "extends: ../base.yaml\nmodel: {width: 128}\n"
                                  "train: {epochs: 1}\n");
  Diagnostics diags;
  auto root = loadTree(child, {{"train", {"steps", "epochs"}}}, diags);
  ASSERT_TRUE(root);
  EXPECT_FALSE(root->find("extends"));
  EXPECT_EQ(root->find("model")->find("layers")->scalar, "2");
  EXPECT_EQ(root->find("model")->find("width")->scalar, "128");
  EXPECT_EQ(root->find("model")->find("width")->loc.file, child);
  EXPECT_FALSE(root->find("train")->find("steps"))
      << "exclusive keys replace each other";
  EXPECT_EQ(root->find("train")->find("epochs")->scalar, "1");
}

TEST(YamlTree, ExtendsErrorsPointAtTheExtendsLine) {
  ScratchDir dir;
  std::string a = dir.write("a.yaml", "x: 1\nextends: b.yaml\n");
  std::string b = dir.write("b.yaml", "extends: a.yaml\n");
  Diagnostics cycle;
  EXPECT_FALSE(loadTree(a, {}, cycle));
  ASSERT_EQ(cycle.all().size(), 1u);
  EXPECT_EQ(cycle.all()[0].loc.file, b);
  EXPECT_EQ(cycle.all()[0].loc.line, 1u);
  EXPECT_EQ(cycle.all()[0].message,
            "'extends' cycle: a.yaml -> b.yaml -> a.yaml");

  std::string bad = dir.write("c.yaml", "extends: /dev/null\n");
  Diagnostics special;
  EXPECT_FALSE(loadTree(bad, {}, special));
  EXPECT_EQ(special.all().at(0).message,
            "cannot read spec '/dev/null': not a regular file");
  EXPECT_EQ(special.all()[0].loc.line, 1u);
}

TEST(YamlTree, LargeFilesAreRefused) {
  ScratchDir dir;
  std::string big =
      dir.write("big.yaml", "a: " + std::string(2000, 'x') + "\n");
  Diagnostics diags;
  TreeLimits limits;
  limits.maxFileBytes = 1000;
  EXPECT_FALSE(loadTree(big, {}, diags, limits));
  EXPECT_NE(diags.all().at(0).message.find("larger than 1000 bytes"),
            std::string::npos);
}
