//===- SpecParserTest.cpp - The spec front end through its API --*- C++ -*-===//

#include "dsl/SpecParser.h"
#include "dsl/SpecPrinter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace lap::dsl;

namespace {

std::string specPath(const std::string &name) {
  return std::string(LAP_SPECS_DIR) + "/" + name;
}

Spec load(const std::string &name) {
  Diagnostics diags;
  auto spec = loadSpec(specPath(name), diags);
  EXPECT_TRUE(spec.has_value())
      << name << ": " << (diags.hasErrors() ? diags.all()[0].message : "");
  return spec ? *spec : Spec{};
}

/// Parses `text`; returns the spec or the messages of its errors.
std::optional<Spec> parse(const std::string &text,
                          std::vector<std::string> *errors = nullptr,
                          const std::string &name = "test.yaml") {
  Diagnostics diags;
  auto spec = parseSpec(text, name, diags);
  EXPECT_FALSE(diags.hasInternalError());
  if (errors)
    for (const auto &d : diags.all())
      errors->push_back(d.message);
  return spec;
}

const char *tinyGpt = R"(
model:
  family: gpt
  layers: 3
  width: 64
  heads: 4
  vocab: 256
  context: 32
)";

std::string kindsOf(const Spec &spec, size_t layer) {
  std::string out;
  for (HeadKindId id : spec.attention.layers[layer])
    out += headKinds()[id].name == "attn" ? 'A' : 'L';
  return out;
}

} // namespace

TEST(HeadKinds, TableHoldsAttnAndLaplacian) {
  auto attn = findHeadKind("attn");
  auto lap = findHeadKind("laplacian");
  ASSERT_TRUE(attn && lap);
  EXPECT_EQ(*attn, 0) << "attn must be the default kind (index 0)";
  EXPECT_EQ(headKinds()[*attn].alpha, 1.0);
  EXPECT_EQ(headKinds()[*attn].beta, 0.0);
  EXPECT_EQ(headKinds()[*lap].alpha, -1.0);
  EXPECT_EQ(headKinds()[*lap].beta, 1.0);
  EXPECT_FALSE(headKinds()[*attn].needsSelfAttention());
  EXPECT_TRUE(headKinds()[*lap].needsSelfAttention());
  EXPECT_FALSE(findHeadKind("laplace"));
}

TEST(ShippedSpecs, PaperLanguageModelsHave561MParameters) {
  for (const char *name :
       {"gpt2_561m_0L.yaml", "gpt2_561m_5L.yaml", "gpt2_561m_10L.yaml"}) {
    Spec spec = load(name);
    EXPECT_EQ(spec.derived.parameters, 560988160) << name;
    EXPECT_EQ(spec.model.headDim, 128) << name;
    // nanochat's estimate_flops: 6 (N - embedding) + 12 L H Q T per token.
    double nanochat =
        6.0 * (560988160 - 65536.0 * 1280) + 12.0 * 20 * 10 * 128 * 2048;
    EXPECT_DOUBLE_EQ(spec.derived.trainFlops, nanochat) << name;
  }
}

TEST(ShippedSpecs, LaplacianHeadsAreTheTrailingOnes) {
  Spec zero = load("gpt2_561m_0L.yaml"), five = load("gpt2_561m_5L.yaml"),
       ten = load("gpt2_561m_10L.yaml");
  ASSERT_EQ(five.attention.layers.size(), 20u);
  for (size_t l = 0; l < 20; ++l) {
    EXPECT_EQ(kindsOf(zero, l), "AAAAAAAAAA");
    EXPECT_EQ(kindsOf(five, l), "AAAAALLLLL");
    EXPECT_EQ(kindsOf(ten, l), "LLLLLLLLLL");
  }
  EXPECT_EQ(five.train.checkpoint.dir, "checkpoints/gpt2_561m_5L");
  EXPECT_EQ(five.train.optimizer.lr, 0.02) << "inherited from the base spec";
}

TEST(ShippedSpecs, VisionModelsMatchTheirReferences) {
  EXPECT_EQ(load("vit_b_deit3_0L.yaml").derived.parameters, 86548456);
  EXPECT_EQ(load("vit_b_deit3_12L.yaml").derived.parameters, 86548456);
  EXPECT_EQ(load("vit_s_dino_0L.yaml").derived.parameters, 44017792);
  Spec dino5 = load("vit_s_dino_5L.yaml");
  EXPECT_EQ(dino5.derived.parameters, 44017792);
  EXPECT_EQ(kindsOf(dino5, 11), "ALLLLL");
  EXPECT_EQ(dino5.train.dino.localCrops, 8);
  EXPECT_EQ(dino5.train.dino.teacherTemp, 0.04);
}

TEST(ShippedSpecs, CanonicalFormReadsBackToItself) {
  for (const auto &entry : std::filesystem::directory_iterator(LAP_SPECS_DIR)) {
    if (!entry.is_regular_file()) // specs/sweeps/: ShippedSweeps
      continue;
    Spec spec = load(entry.path().filename().string());
    std::string text = printSpec(spec);
    std::vector<std::string> errors;
    auto again = parse(text, &errors, entry.path().string());
    ASSERT_TRUE(again) << entry.path() << ": "
                       << (errors.empty() ? "" : errors[0]);
    EXPECT_EQ(printSpec(*again), text) << entry.path();
  }
}

TEST(ShippedSweeps, EveryVariantReadsBackToItself) {
  for (const auto &entry : std::filesystem::directory_iterator(
           std::string(LAP_SPECS_DIR) + "/sweeps")) {
    Diagnostics diags;
    auto variants = loadSweep(entry.path().string(), diags);
    ASSERT_TRUE(variants) << entry.path() << ": "
                          << (diags.all().empty() ? ""
                                                  : diags.all()[0].message);
    EXPECT_GT(variants->size(), 1u) << entry.path();
    for (const SpecVariant &v : *variants) {
      std::string text = printSpec(v.spec);
      auto again = parse(text, nullptr, entry.path().string());
      ASSERT_TRUE(again) << v.name;
      EXPECT_EQ(printSpec(*again), text) << v.name;
    }
  }
}

TEST(SpecParser, AppliesDependentDefaults) {
  auto spec = parse(tinyGpt);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->name, "test");
  EXPECT_EQ(spec->model.headDim, 16);
  EXPECT_EQ(spec->model.kvHeads, 4);
  EXPECT_EQ(spec->model.mlpHidden, 256);
  EXPECT_FALSE(spec->hasTrain);
  for (size_t l = 0; l < 3; ++l)
    EXPECT_EQ(kindsOf(*spec, l), "AAAA") << "default: every head attn";

  auto rms = parse(std::string(tinyGpt) + "  norm: {type: rmsnorm}\n");
  ASSERT_TRUE(rms);
  EXPECT_FALSE(rms->model.norm.bias) << "RMSNorm defaults to no bias";
}

TEST(SpecParser, PlacesKindsPerLayer) {
  auto counts = parse(std::string(tinyGpt) +
                      "attention:\n  laplacian_heads: [0, 1, 4]\n");
  ASSERT_TRUE(counts);
  EXPECT_EQ(kindsOf(*counts, 0), "AAAA");
  EXPECT_EQ(kindsOf(*counts, 1), "AAAL");
  EXPECT_EQ(kindsOf(*counts, 2), "LLLL");

  auto everyLayer =
      parse(std::string(tinyGpt) +
            "attention:\n  kinds: [laplacian, attn, laplacian, attn]\n");
  ASSERT_TRUE(everyLayer);
  for (size_t l = 0; l < 3; ++l)
    EXPECT_EQ(kindsOf(*everyLayer, l), "LALA");

  auto explicitLists = parse(std::string(tinyGpt) + R"(attention:
  kinds:
    - [attn, attn, attn, attn]
    - [laplacian, laplacian, attn, attn]
    - [attn, laplacian, attn, laplacian]
)");
  ASSERT_TRUE(explicitLists);
  EXPECT_EQ(kindsOf(*explicitLists, 1), "LLAA");
  EXPECT_EQ(kindsOf(*explicitLists, 2), "ALAL");
}

TEST(SpecParser, ReportsEveryIndependentErrorWithItsLocation) {
  Diagnostics diags;
  auto spec = parseSpec(R"(model:
  family: gpt
  layers: x
  width: 64
  heads: 4
  vocab: 256
  context: 32
  colour: red
train:
  regime: lm
  batch_size: 0
  steps: 10
)",
                        "bad.yaml", diags);
  EXPECT_FALSE(spec);
  ASSERT_EQ(diags.all().size(), 3u);
  EXPECT_EQ(diags.all()[0].loc.line, 3u);
  EXPECT_EQ(diags.all()[0].loc.col, 11u);
  EXPECT_EQ(diags.all()[0].loc.file, "bad.yaml");
  EXPECT_EQ(diags.all()[1].loc.line, 8u);
  EXPECT_EQ(diags.all()[1].loc.col, 3u);
  EXPECT_EQ(diags.all()[2].message,
            "'train.batch_size' must be between 1 and 1073741824; found 0");
  EXPECT_FALSE(diags.hasInternalError());
}

TEST(SpecParser, IntegersAreCheckedAsIntegers) {
  // Rounded to float, 2147483646 would become 2^31 and fail the bound.
  auto vocab = [](const std::string &value) {
    std::string text = tinyGpt;
    text.replace(text.find("vocab: 256"), 10, "vocab: " + value);
    return text;
  };
  auto spec = parse(vocab("2147483646"));
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->model.vocab, 2147483646);
  EXPECT_TRUE(parse(vocab("2147483647")));
  std::vector<std::string> errors;
  EXPECT_FALSE(parse(vocab("2147483648"), &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "'model.vocab' must be between 1 and 2147483647; "
                       "found 2147483648");
}

TEST(SpecParser, AWeightDecayScheduleNeedsAStart) {
  std::string train = R"(train:
  regime: lm
  batch_size: 8
  steps: 10
  optimizer:
    weight_decay_end: 0.4
)";
  std::vector<std::string> errors;
  EXPECT_FALSE(parse(std::string(tinyGpt) + train, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("weight_decay_end schedules the weight decay from "
                           "weight_decay, which is 0"),
            std::string::npos)
      << errors[0];
  std::string withStart = train + "    weight_decay: 0.04\n";
  auto spec = parse(std::string(tinyGpt) + withStart);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->train.optimizer.weightDecayEnd, 0.4);
}

TEST(SpecParser, OneMistakeGivesOneError) {
  std::vector<std::string> errors;
  // Unreadable heads must not also produce divisibility or placement errors.
  EXPECT_FALSE(parse(std::string(tinyGpt) + "  head_dim: x\n", &errors));
  EXPECT_EQ(errors.size(), 1u);
}

TEST(SpecParser, RecordsWhereEachSettingWasWritten) {
  auto spec = parse(tinyGpt);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->given("model.width"));
  EXPECT_FALSE(spec->given("model.kv_heads"));
  EXPECT_EQ(spec->locationOf("model.width").line, 5u);
  EXPECT_EQ(spec->locationOf("model.width").col, 10u);
  // Defaulted settings fall back to their section.
  EXPECT_EQ(spec->locationOf("model.kv_heads").line, 2u);
}

TEST(SpecParser, PinnedDerivedValuesAreChecked) {
  EXPECT_TRUE(parse(std::string(tinyGpt) + "derived: {parameters: 184896}\n"));
  std::vector<std::string> errors;
  EXPECT_FALSE(
      parse(std::string(tinyGpt) + "derived: {paramters: 1}\n", &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("did you mean 'parameters'"), std::string::npos)
      << errors[0];
}

TEST(SpecParser, ExtendingFileReplacesTheBasePlacement) {
  auto dir = std::filesystem::temp_directory_path() / "lap-spec-parser-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "base.yaml")
      << tinyGpt << "attention:\n  laplacian_heads: 2\n";
  std::ofstream(dir / "child.yaml") << "extends: base.yaml\nattention:\n  "
                                       "kinds: [laplacian, attn, attn, attn]\n";
  Diagnostics diags;
  auto spec = loadSpec((dir / "child.yaml").string(), diags);
  ASSERT_TRUE(spec) << diags.all()[0].message;
  EXPECT_EQ(kindsOf(*spec, 0), "LAAA");
  EXPECT_EQ(spec->name, "child");
  std::filesystem::remove_all(dir);
}

TEST(SpecParser, NameIsTheFilesOwn) {
  auto dir = std::filesystem::temp_directory_path() / "lap-spec-name-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "base.yaml") << "name: base_model\n" << tinyGpt;
  std::ofstream(dir / "child.yaml") << "extends: base.yaml\n";
  Diagnostics diags;
  auto spec = loadSpec((dir / "child.yaml").string(), diags);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->name, "child") << "a name is not inherited through extends";
  std::filesystem::remove_all(dir);
}

TEST(SpecParser, BetasAreAPairNotARange) {
  std::vector<std::string> errors;
  auto spec = parse(std::string(tinyGpt) +
                        "train: {regime: lm, batch_size: 8, steps: 10, "
                        "optimizer: {betas: [0.9, 0.8]}}\n",
                    &errors);
  ASSERT_TRUE(spec) << errors.at(0);
  EXPECT_EQ(spec->train.optimizer.beta1, 0.9);
  EXPECT_EQ(spec->train.optimizer.beta2, 0.8);
}

TEST(SpecPrinter, NamesThatLookLikeNullReadBack) {
  for (const char *name :
       {"NULL", "Null", "null", "~", "true", "1e3", "a: b"}) {
    auto spec = parse(std::string("name: \"") + name + "\"\n" + tinyGpt);
    ASSERT_TRUE(spec) << name;
    std::vector<std::string> errors;
    auto again = parse(printSpec(*spec), &errors);
    ASSERT_TRUE(again) << name << ": " << errors.at(0);
    EXPECT_EQ(again->name, name);
  }
}
