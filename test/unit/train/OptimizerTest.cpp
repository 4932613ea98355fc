//===- OptimizerTest.cpp - AdamW, Muon, clipping, schedules ---------------===//
//
// AdamW against a double-precision transcription of torch.optim.AdamW; Muon's
// orthogonalisation by the spread of the result's singular values (power
// iteration on the Gram matrix, no SVD); groups on GPT- and ViT-like tables;
// schedules at their key steps; bitwise equality across thread counts and
// across a state save/restore.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Optimizer.h"
#include "runtime/device/host/Orthogonalize.h"
#include "runtime/train/Schedule.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

// The optimizer runs on libgomp's pool; the tests vary its size.
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

using namespace lap::train;
using lap::device::orthogonalize;

namespace {

/// A table from (name, shape) pairs, packed in order.
std::vector<TensorInfo>
makeTable(const std::vector<std::pair<std::string, std::vector<int64_t>>> &ts) {
  std::vector<TensorInfo> table;
  int64_t offset = 0;
  for (const auto &[name, shape] : ts) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    table.push_back({name, shape, offset, n});
    offset += n;
  }
  return table;
}

int64_t totalElements(const std::vector<TensorInfo> &table) {
  return table.empty() ? 0 : table.back().offset + table.back().elements;
}

std::vector<float> randomVector(std::mt19937 &rng, size_t n, float scale = 1) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

std::vector<std::string> names(const std::vector<TensorInfo> &table,
                               const ParamGroup &g) {
  std::vector<std::string> out;
  for (size_t t : g.tensors)
    out.push_back(table[t].name);
  return out;
}

const ParamGroup *findGroup(const std::vector<ParamGroup> &groups,
                            const std::string &name) {
  for (const ParamGroup &g : groups)
    if (g.name == name)
      return &g;
  return nullptr;
}

/// A GPT-like table of width d (one block), nanochat's names.
std::vector<TensorInfo> gptTable(int64_t d, int64_t vocab) {
  return makeTable({{"wte.weight", {vocab, d}},
                    {"blocks.0.norm1.weight", {d}},
                    {"blocks.0.attn.qkv.weight", {3 * d, d}},
                    {"blocks.0.attn.proj.weight", {d, d}},
                    {"blocks.0.norm2.weight", {d}},
                    {"blocks.0.mlp.fc1.weight", {4 * d, d}},
                    {"blocks.0.mlp.fc2.weight", {d, 4 * d}},
                    {"norm.weight", {d}},
                    {"lm_head.weight", {vocab, d}}});
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

TEST(AdamW, MatchesDoubleReferenceForThreeSteps) {
  auto table = makeTable(
      {{"blocks.0.attn.qkv.weight", {4, 3}}, {"blocks.0.attn.qkv.bias", {4}}});
  OptimizerConfig c;
  c.lr = 0.01;
  c.beta1 = 0.9;
  c.beta2 = 0.99;
  c.eps = 1e-8;
  c.weightDecay = 0.1;
  c.noDecay = {"bias"};
  Optimizer opt(table, c);
  ASSERT_EQ(opt.groups().size(), 2u);

  std::mt19937 rng(1);
  int64_t n = totalElements(table);
  std::vector<float> p = randomVector(rng, n);
  std::vector<double> ref(p.begin(), p.end()), m(n, 0), v(n, 0);
  const double lrMult[3] = {1.0, 0.5, 0.25};
  for (int step = 1; step <= 3; ++step) {
    std::vector<float> g = randomVector(rng, n);
    opt.step(p.data(), g.data(), lrMult[step - 1]);
    double lr = c.lr * lrMult[step - 1];
    for (int64_t i = 0; i < n; ++i) {
      double wd = i < 12 ? c.weightDecay : 0; // the bias is exempt
      ref[i] *= 1 - lr * wd;
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * g[i];
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * double(g[i]) * g[i];
      double bc1 = 1 - std::pow(c.beta1, step);
      double bc2 = 1 - std::pow(c.beta2, step);
      ref[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
    }
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(p[i], ref[i], 1e-6) << "step " << step << " element " << i;
  }
  EXPECT_EQ(opt.stepCount(), 3);
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

TEST(Groups, GptLikeUnderMuon) {
  auto table = gptTable(1536, 100);
  OptimizerConfig c;
  c.kind = OptimizerKind::Muon;
  c.lr = 0.02;
  c.width = 1536;
  auto groups = assignGroups(table, c);
  ASSERT_EQ(groups.size(), 4u);
  double scale = std::pow(1536.0 / 768.0, -0.5);

  const ParamGroup *matrix = findGroup(groups, "matrix");
  ASSERT_TRUE(matrix);
  EXPECT_EQ(matrix->rule, UpdateRule::Muon);
  EXPECT_DOUBLE_EQ(matrix->lr, 0.02);
  EXPECT_EQ(names(table, *matrix),
            (std::vector<std::string>{
                "blocks.0.attn.qkv.weight", "blocks.0.attn.proj.weight",
                "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc2.weight"}));
  const ParamGroup *emb = findGroup(groups, "embedding");
  ASSERT_TRUE(emb);
  EXPECT_EQ(emb->rule, UpdateRule::AdamW);
  EXPECT_DOUBLE_EQ(emb->lr, 0.2 * scale);
  EXPECT_EQ(names(table, *emb), std::vector<std::string>{"wte.weight"});
  const ParamGroup *unemb = findGroup(groups, "unembedding");
  ASSERT_TRUE(unemb);
  EXPECT_DOUBLE_EQ(unemb->lr, 0.004 * scale);
  EXPECT_EQ(names(table, *unemb), std::vector<std::string>{"lm_head.weight"});
  const ParamGroup *scalar = findGroup(groups, "scalar");
  ASSERT_TRUE(scalar);
  EXPECT_DOUBLE_EQ(scalar->lr, 0.5 * scale);
  EXPECT_EQ(names(table, *scalar),
            (std::vector<std::string>{"blocks.0.norm1.weight",
                                      "blocks.0.norm2.weight", "norm.weight"}));

  // Without width scaling the AdamW lrs are the configured ones; with weight
  // decay, no_decay members split off.
  c.scaleLrByWidth = false;
  c.weightDecay = 0.1;
  c.noDecay = {"norm"};
  groups = assignGroups(table, c);
  EXPECT_DOUBLE_EQ(findGroup(groups, "embedding")->lr, 0.2);
  ASSERT_TRUE(findGroup(groups, "scalar.no_decay"));
  EXPECT_EQ(findGroup(groups, "scalar"), nullptr);
  EXPECT_DOUBLE_EQ(findGroup(groups, "scalar.no_decay")->weightDecay, 0);
  EXPECT_DOUBLE_EQ(findGroup(groups, "matrix")->weightDecay, 0.1);

  // Every tensor sits in exactly one group.
  std::vector<int> seen(table.size(), 0);
  for (const ParamGroup &g : groups)
    for (size_t t : g.tensors)
      ++seen[t];
  for (int s : seen)
    EXPECT_EQ(s, 1);
}

TEST(Groups, VitLikeUnderAdamW) {
  const int64_t d = 64;
  auto table = makeTable({{"patch_embed.weight", {d, 48}},
                          {"patch_embed.bias", {d}},
                          {"cls_token", {1, d}},
                          {"registers", {4, d}},
                          {"pos_embed", {17, d}},
                          {"blocks.0.norm1.weight", {d}},
                          {"blocks.0.norm1.bias", {d}},
                          {"blocks.0.attn.qkv.weight", {3 * d, d}},
                          {"blocks.0.attn.qkv.bias", {3 * d}},
                          {"blocks.0.attn.q_norm.weight", {16}},
                          {"blocks.0.ls1", {d}},
                          {"blocks.0.mlp.fc1.weight", {4 * d, d}},
                          {"blocks.0.ls2", {d}},
                          {"norm.weight", {d}},
                          {"head.weight", {10, d}},
                          {"head.bias", {10}}});
  OptimizerConfig c;
  c.lr = 1e-3;
  c.weightDecay = 0.05;
  c.noDecay = {"bias", "norm", "layer_scale", "positions", "tokens"};
  auto groups = assignGroups(table, c);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "decay");
  EXPECT_DOUBLE_EQ(groups[0].weightDecay, 0.05);
  EXPECT_EQ(names(table, groups[0]),
            (std::vector<std::string>{
                "patch_embed.weight", "blocks.0.attn.qkv.weight",
                "blocks.0.mlp.fc1.weight", "head.weight"}));
  EXPECT_EQ(groups[1].name, "no_decay");
  EXPECT_DOUBLE_EQ(groups[1].weightDecay, 0);
  EXPECT_EQ(groups[1].tensors.size(), table.size() - 4);
  for (const ParamGroup &g : groups) {
    EXPECT_EQ(g.rule, UpdateRule::AdamW);
    EXPECT_DOUBLE_EQ(g.lr, 1e-3);
  }

  // Under muon a ViT's block matrices go to Muon, the rest to AdamW.
  c.kind = OptimizerKind::Muon;
  groups = assignGroups(table, c);
  EXPECT_EQ(names(table, *findGroup(groups, "matrix")),
            (std::vector<std::string>{"blocks.0.attn.qkv.weight",
                                      "blocks.0.mlp.fc1.weight"}));
}

// Learned head coefficients: their own group under either optimizer, at
// their own lr, never decayed (even with weight decay on everything else),
// and never Muon's although they are 2-D block tensors.
TEST(Groups, HeadCoefficientsHaveTheirOwnGroup) {
  auto table = makeTable({{"wte.weight", {16, 8}},
                          {"blocks.0.attn.qkv.weight", {24, 8}},
                          {"blocks.0.attn.proj.weight", {8, 8}},
                          {"lm_head.weight", {16, 8}},
                          {"blocks.0.attn.coefficients", {2, 3}},
                          {"blocks.1.attn.coefficients", {2, 1}}});
  for (OptimizerKind kind : {OptimizerKind::AdamW, OptimizerKind::Muon}) {
    OptimizerConfig c;
    c.kind = kind;
    c.weightDecay = 0.1;
    c.headCoefficientLr = 0.03;
    auto groups = assignGroups(table, c);
    const ParamGroup *coefficients = findGroup(groups, "head_coefficients");
    ASSERT_TRUE(coefficients);
    EXPECT_EQ(coefficients->rule, UpdateRule::AdamW);
    EXPECT_DOUBLE_EQ(coefficients->lr, 0.03);
    EXPECT_DOUBLE_EQ(coefficients->weightDecay, 0);
    EXPECT_EQ(names(table, *coefficients),
              (std::vector<std::string>{"blocks.0.attn.coefficients",
                                        "blocks.1.attn.coefficients"}));
    size_t members = 0;
    for (const ParamGroup &g : groups)
      members += g.tensors.size();
    EXPECT_EQ(members, table.size());
  }
}

TEST(Groups, NoDecayNames) {
  EXPECT_TRUE(matchesParameterGroup("blocks.1.mlp.fc1.bias", "bias"));
  EXPECT_FALSE(matchesParameterGroup("blocks.1.mlp.fc1.weight", "bias"));
  EXPECT_TRUE(matchesParameterGroup("blocks.1.norm2.weight", "norm"));
  EXPECT_TRUE(matchesParameterGroup("blocks.1.attn.k_norm.weight", "norm"));
  EXPECT_TRUE(matchesParameterGroup("embedding_norm.weight", "norm"));
  EXPECT_TRUE(matchesParameterGroup("dino_head.last_layer.weight_g", "norm"));
  EXPECT_FALSE(matchesParameterGroup("blocks.1.attn.qkv.weight", "norm"));
  EXPECT_TRUE(matchesParameterGroup("blocks.1.ls1", "layer_scale"));
  EXPECT_TRUE(matchesParameterGroup("wte.weight", "embedding"));
  EXPECT_TRUE(matchesParameterGroup("patch_embed.weight", "embedding"));
  EXPECT_TRUE(matchesParameterGroup("wpe.weight", "positions"));
  EXPECT_TRUE(matchesParameterGroup("pos_embed", "positions"));
  EXPECT_TRUE(matchesParameterGroup("cls_token", "tokens"));
  EXPECT_TRUE(matchesParameterGroup("registers", "tokens"));
  EXPECT_TRUE(matchesParameterGroup("lm_head.weight", "head"));
  EXPECT_TRUE(matchesParameterGroup("head.bias", "head"));
  EXPECT_FALSE(matchesParameterGroup("blocks.0.attn.qkv.weight", "head"));
}

//===----------------------------------------------------------------------===//
// Muon
//===----------------------------------------------------------------------===//

/// The extreme eigenvalues of a symmetric positive semi-definite matrix by
/// power iteration (the smallest from the shifted matrix λmax·I − M).
std::pair<double, double> extremeEigenvalues(const std::vector<double> &m,
                                             int64_t n) {
  auto power = [&](double shift) {
    std::vector<double> x(n, 1.0), y(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] += 0.01 * i; // not orthogonal to the top eigenvector
    double lambda = 0;
    for (int it = 0; it < 3000; ++it) {
      double norm = 0;
      for (int64_t i = 0; i < n; ++i) {
        double s = shift * x[i];
        for (int64_t j = 0; j < n; ++j)
          s += (shift == 0 ? 1 : -1) * m[i * n + j] * x[j];
        y[i] = s;
        norm += s * s;
      }
      norm = std::sqrt(norm);
      double dot = 0;
      for (int64_t i = 0; i < n; ++i)
        dot += x[i] * y[i];
      lambda = dot; // Rayleigh quotient: x is unit after the first pass
      for (int64_t i = 0; i < n; ++i)
        x[i] = y[i] / norm;
    }
    return lambda;
  };
  double top = power(0);
  double bottom = top - power(top);
  return {bottom, top};
}

/// The Gram matrix of the smaller side: O Oᵀ (wide) or Oᵀ O (tall).
std::vector<double> smallGram(const std::vector<float> &o, int64_t rows,
                              int64_t cols, int64_t &n) {
  bool tall = rows > cols;
  n = tall ? cols : rows;
  int64_t k = tall ? rows : cols;
  auto at = [&](int64_t i, int64_t l) {
    return double(tall ? o[l * cols + i] : o[i * cols + l]);
  };
  std::vector<double> g(n * n, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l)
        g[i * n + j] += at(i, l) * at(j, l);
  return g;
}

class Orthogonalize
    : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(Orthogonalize, SingularValuesNearOne) {
  auto [rows, cols] = GetParam();
  std::mt19937 rng(rows * 1000 + cols);
  std::vector<float> g = randomVector(rng, rows * cols, 0.02f), o(rows * cols);
  orthogonalize(g.data(), o.data(), rows, cols, 5, LAP_MATMUL_FP32);
  int64_t n = 0;
  std::vector<double> gram = smallGram(o, rows, cols, n);
  auto [lo, hi] = extremeEigenvalues(gram, n);
  double sigmaMin = std::sqrt(std::max(lo, 0.0)), sigmaMax = std::sqrt(hi);
  // The quintic is tuned for speed, not convergence: after five steps every
  // singular value lies in about [0.68, 1.13] (measured), not at 1. So σ is
  // 1 within ~0.35, and the Gram matrix's diagonal (σ² averages) 1 within
  // ~0.55; its off-diagonal is small.
  EXPECT_GT(sigmaMin, 0.65) << rows << "x" << cols;
  EXPECT_LT(sigmaMax, 1.2) << rows << "x" << cols;
  double diagErr = 0, offDiag = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double e = std::fabs(gram[i * n + j] - (i == j ? 1 : 0));
      double &worst = i == j ? diagErr : offDiag;
      worst = std::max(worst, e);
    }
  EXPECT_LT(diagErr, 0.55);
  EXPECT_LT(offDiag, 0.3);
  // Versus the input's spread: a Gaussian matrix's singular values span a
  // factor (√m + √n) / (√m − √n), 2.6 to 6 for these shapes.
  std::vector<float> gn(g);
  std::vector<double> ggram = smallGram(gn, rows, cols, n);
  auto [glo, ghi] = extremeEigenvalues(ggram, n);
  EXPECT_GT(std::sqrt(ghi / glo), 2.0);
  EXPECT_LT(sigmaMax / sigmaMin, 1.75);
}

// At bf16 products (train.matmul_precision) each GEMM's operands are
// rounded to bf16. The quintic amplifies the rounding (measured: 4% to 5.5%
// of the largest element after five steps on these shapes), but what Muon
// needs holds as at fp32: the singular values stay near one. Held to 8e-2
// of the fp32 iteration's largest element, and different from it.
TEST_P(Orthogonalize, Bf16ProductsStayNearTheFp32Iteration) {
  auto [rows, cols] = GetParam();
  std::mt19937 rng(rows * 1000 + cols);
  std::vector<float> g = randomVector(rng, rows * cols, 0.02f),
                     o32(rows * cols), o16(rows * cols);
  orthogonalize(g.data(), o32.data(), rows, cols, 5, LAP_MATMUL_FP32);
  orthogonalize(g.data(), o16.data(), rows, cols, 5, LAP_MATMUL_BF16);
  lap::test::expectWithinScale(o16, o32, 8e-2, "bf16 against fp32");
  EXPECT_NE(o16, o32);
  int64_t n = 0;
  std::vector<double> gram = smallGram(o16, rows, cols, n);
  auto [lo, hi] = extremeEigenvalues(gram, n);
  EXPECT_GT(std::sqrt(std::max(lo, 0.0)), 0.65);
  EXPECT_LT(std::sqrt(hi), 1.2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Orthogonalize,
                         ::testing::Values(std::make_pair(96, 48),
                                           std::make_pair(48, 96),
                                           std::make_pair(200, 40),
                                           std::make_pair(33, 70)));

TEST(Muon, UpdateScaleAndMomentum) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{96, 48}, {48, 96}}) {
    auto table = makeTable({{"blocks.0.mlp.fc1.weight", {rows, cols}}});
    OptimizerConfig c;
    c.kind = OptimizerKind::Muon;
    c.lr = 0.02;
    Optimizer opt(table, c);
    ASSERT_EQ(opt.groups().size(), 1u);
    std::mt19937 rng(7);
    std::vector<float> g = randomVector(rng, rows * cols);
    std::vector<float> p(rows * cols, 0.0f), o(rows * cols);
    opt.step(p.data(), g.data());
    // From a zero buffer the Nesterov gradient is a multiple of g, and the
    // orthogonalisation normalises it away.
    orthogonalize(g.data(), o.data(), rows, cols, 5, LAP_MATMUL_FP32);
    double scale = 0.02 * std::sqrt(std::max(1.0, double(rows) / cols));
    for (int64_t i = 0; i < rows * cols; ++i)
      ASSERT_NEAR(p[i], -scale * o[i], 1e-5 * scale) << rows << "x" << cols;
    // The momentum buffer is (1 − β) g.
    auto state = opt.state();
    ASSERT_EQ(state.size(), 1u);
    EXPECT_EQ(state[0].name, "blocks.0.mlp.fc1.weight.momentum_buffer");
    EXPECT_NEAR(state[0].data[5], 0.05 * g[5], 1e-7);
  }
}

TEST(Muon, MomentumWarmup) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Muon;
  c.momentumWarmupSteps = 300;
  Optimizer opt(gptTable(8, 16), c);
  EXPECT_DOUBLE_EQ(opt.currentMomentum(), 0.85);
  opt.setStepCount(150);
  EXPECT_NEAR(opt.currentMomentum(), 0.90, 1e-12);
  opt.setStepCount(300);
  EXPECT_DOUBLE_EQ(opt.currentMomentum(), 0.95);
  opt.setStepCount(5000);
  EXPECT_DOUBLE_EQ(opt.currentMomentum(), 0.95);
  EXPECT_DOUBLE_EQ(muonMomentum(10, 0.85, 0.95, 0), 0.95);
}

//===----------------------------------------------------------------------===//
// Clipping and finiteness
//===----------------------------------------------------------------------===//

TEST(Clip, GlobalNorm) {
  auto table = makeTable({{"a", {2, 2}}, {"b", {3}}});
  std::vector<float> g = {1, 2, 3, 4, 0, 0, 10}; // norm sqrt(130)
  double norm = clipGradients(g.data(), table, 100.0);
  EXPECT_NEAR(norm, std::sqrt(130.0), 1e-12);
  EXPECT_EQ(g[6], 10.0f); // below the threshold: untouched

  norm = clipGradients(g.data(), table, 1.0);
  EXPECT_NEAR(norm, std::sqrt(130.0), 1e-12);
  double after = 0;
  for (float x : g)
    after += double(x) * x;
  EXPECT_NEAR(std::sqrt(after), 1.0, 1e-6);
  EXPECT_NEAR(g[6] / g[0], 10.0, 1e-5); // direction kept

  // maxNorm 0: measure only.
  std::vector<float> h = {3, 4, 0, 0, 0, 0, 0};
  EXPECT_NEAR(clipGradients(h.data(), table, 0), 5.0, 1e-12);
  EXPECT_EQ(h[0], 3.0f);
}

// DINO's clip_gradients: each tensor alone, the others untouched.
TEST(Clip, EachTensorAlone) {
  auto table = makeTable({{"a", {2}}, {"b", {2}}, {"c", {1}}});
  std::vector<float> g = {3, 4, 0.3f, 0.4f, -6}; // norms 5, 0.5, 6
  clipEachTensor(g.data(), table, 1.0);
  EXPECT_NEAR(g[0], 3 / (5 + 1e-6), 1e-6);
  EXPECT_NEAR(g[1], 4 / (5 + 1e-6), 1e-6);
  EXPECT_EQ(g[2], 0.3f); // under the threshold
  EXPECT_EQ(g[3], 0.4f);
  EXPECT_NEAR(g[4], -6 / (6 + 1e-6), 1e-6);
  std::vector<float> h = {3, 4, 0, 0, 9};
  clipEachTensor(h.data(), table, 0); // off
  EXPECT_EQ(h[4], 9.0f);
}

// A frozen tensor is left alone as PyTorch leaves a parameter without a
// gradient: no update, no weight decay, no change of its moments; the
// others step as if it were not there.
TEST(AdamW, FrozenTensorsAreLeftAlone) {
  auto table =
      makeTable({{"a.weight", {3}}, {"b.weight", {2}}, {"c.weight", {2}}});
  OptimizerConfig c;
  c.lr = 0.1;
  c.weightDecay = 0.5;
  std::vector<float> p = {1, 2, 3, 4, 5, 6, 7}, g(7, 1.0f);
  Optimizer frozen(table, c), free(table, c);
  std::vector<float> q = p;
  frozen.setFrozen({false, true, false});
  frozen.step(p.data(), g.data());
  free.step(q.data(), g.data());
  for (int i : {0, 1, 2, 5, 6}) // the tensors before and after it
    EXPECT_EQ(p[size_t(i)], q[size_t(i)]) << i;
  EXPECT_EQ(p[3], 4.0f);
  EXPECT_EQ(p[4], 5.0f);
  for (const StateTensor &t : frozen.state())
    if (t.name.rfind("b.", 0) == 0)
      for (int64_t i = 0; i < t.size; ++i)
        EXPECT_EQ(t.data[i], 0.0f) << t.name;
  frozen.setFrozen({});
  frozen.step(p.data(), g.data());
  EXPECT_NE(p[3], 4.0f);
}

TEST(Clip, NonFiniteNamesTheFirstTensor) {
  auto table = makeTable({{"a", {4}}, {"b", {3}}, {"c", {2}}});
  std::vector<float> g(9, 1.0f);
  EXPECT_FALSE(firstNonFinite(g.data(), table).has_value());
  g[8] = std::numeric_limits<float>::infinity();
  g[5] = std::numeric_limits<float>::quiet_NaN();
  auto bad = firstNonFinite(g.data(), table);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(*bad, "b");
  // A non-finite norm is reported and leaves the gradients alone.
  double norm = clipGradients(g.data(), table, 1.0);
  EXPECT_FALSE(std::isfinite(norm));
  EXPECT_EQ(g[0], 1.0f);
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

TEST(Schedule, WarmupThenLinearWarmdown) {
  ScheduleConfig s;
  s.warmupSteps = 10;
  s.warmupLr = 0.1;
  s.decay = DecayKind::Linear;
  s.decayFraction = 0.2;
  s.minLr = 0.05;
  const int64_t total = 100;
  EXPECT_NEAR(learningRateMultiplier(0, total, s), 0.1, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(5, total, s), 0.55, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(10, total, s), 1.0, 1e-12); // warm
  EXPECT_NEAR(learningRateMultiplier(50, total, s), 1.0, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(80, total, s), 1.0, 1e-12); // warmdown
  EXPECT_NEAR(learningRateMultiplier(90, total, s), 0.525, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(99, total, s), 0.05 + 0.95 * 0.05, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(100, total, s), 0.05, 1e-12);
}

TEST(Schedule, WarmupThenCosine) {
  ScheduleConfig s;
  s.warmupSteps = 10;
  s.decay = DecayKind::Cosine;
  s.minLr = 0.1;
  const int64_t total = 110; // decay over steps 10..110
  EXPECT_NEAR(learningRateMultiplier(0, total, s), 0.0, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(10, total, s), 1.0, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(60, total, s), 0.55, 1e-12);
  EXPECT_NEAR(learningRateMultiplier(35, total, s),
              0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-12);
  EXPECT_NEAR(learningRateMultiplier(110, total, s), 0.1, 1e-12);
  EXPECT_LT(learningRateMultiplier(109, total, s), 0.101);
}

TEST(Schedule, ConstantAndCosineValue) {
  ScheduleConfig s;
  s.warmupSteps = 4;
  s.decay = DecayKind::None;
  EXPECT_NEAR(learningRateMultiplier(2, 100, s), 0.5, 1e-12);
  EXPECT_EQ(learningRateMultiplier(4, 100, s), 1.0);
  EXPECT_EQ(learningRateMultiplier(99, 100, s), 1.0);
  EXPECT_NEAR(cosineValue(0, 10, 0.04, 0.4), 0.04, 1e-12);
  EXPECT_NEAR(cosineValue(5, 10, 0.04, 0.4), 0.22, 1e-12);
  EXPECT_NEAR(cosineValue(10, 10, 0.04, 0.4), 0.4, 1e-12);
  // DINO's weight decay 0.04 -> 0.4, as a factor on weight_decay.
  EXPECT_NEAR(weightDecayMultiplier(0, 10, 0.04, 0.4), 1.0, 1e-12);
  EXPECT_NEAR(weightDecayMultiplier(5, 10, 0.04, 0.4), 5.5, 1e-12);
  EXPECT_NEAR(weightDecayMultiplier(10, 10, 0.04, 0.4), 10.0, 1e-12);
  EXPECT_EQ(weightDecayMultiplier(5, 10, 0.04, -1), 1.0); // constant
}

//===----------------------------------------------------------------------===//
// Determinism and state
//===----------------------------------------------------------------------===//

/// Params, state and norms after three clipped steps on `threads` threads.
std::vector<float> runSteps(const std::vector<TensorInfo> &table,
                            const OptimizerConfig &c, int threads) {
  omp_set_num_threads(threads);
  Optimizer opt(table, c);
  std::mt19937 rng(42);
  int64_t n = totalElements(table);
  std::vector<float> p = randomVector(rng, n, 0.1f);
  std::vector<float> out;
  for (int s = 0; s < 3; ++s) {
    std::vector<float> g = randomVector(rng, n);
    out.push_back(float(clipGradients(g.data(), table, 1.0)));
    opt.step(p.data(), g.data(), 1.0 - 0.1 * s);
  }
  out.insert(out.end(), p.begin(), p.end());
  for (const StateTensor &t : opt.state())
    out.insert(out.end(), t.data, t.data + t.size);
  return out;
}

TEST(Determinism, IndependentOfThreadCount) {
  int saved = omp_get_max_threads();
  // Big enough for several chunks (wte) and several GEMM row blocks.
  auto table = gptTable(64, 1024);
  for (OptimizerKind kind : {OptimizerKind::Muon, OptimizerKind::AdamW}) {
    OptimizerConfig c;
    c.kind = kind;
    c.weightDecay = 0.01;
    std::vector<float> one = runSteps(table, c, 1);
    for (int threads : {2, 3}) {
      std::vector<float> many = runSteps(table, c, threads);
      ASSERT_EQ(one.size(), many.size());
      EXPECT_EQ(
          std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
          << threads << " threads, "
          << (kind == OptimizerKind::Muon ? "muon" : "adamw");
    }
  }
  omp_set_num_threads(saved);
}

TEST(State, SaveAndRestoreContinuesExactly) {
  auto table = gptTable(32, 64);
  OptimizerConfig c;
  c.kind = OptimizerKind::Muon;
  c.momentumWarmupSteps = 10;
  int64_t n = totalElements(table);
  std::mt19937 rng(3);
  std::vector<float> p0 = randomVector(rng, n, 0.1f);
  std::vector<std::vector<float>> grads;
  for (int s = 0; s < 3; ++s)
    grads.push_back(randomVector(rng, n));

  // Straight through.
  Optimizer a(table, c);
  std::vector<float> pa = p0;
  for (auto &g : grads)
    a.step(pa.data(), g.data());

  // Two steps, save, restore into a fresh optimizer, one more step.
  Optimizer b(table, c);
  std::vector<float> pb = p0;
  b.step(pb.data(), grads[0].data());
  b.step(pb.data(), grads[1].data());
  std::map<std::string, std::vector<float>> saved;
  for (const StateTensor &t : b.state())
    saved[t.name].assign(t.data, t.data + t.size);
  Optimizer r(table, c);
  auto state = r.state();
  ASSERT_EQ(state.size(), saved.size());
  for (const StateTensor &t : state) {
    ASSERT_TRUE(saved.count(t.name)) << t.name;
    ASSERT_EQ(size_t(t.size), saved[t.name].size());
    std::copy(saved[t.name].begin(), saved[t.name].end(), t.data);
  }
  r.setStepCount(b.stepCount());
  r.step(pb.data(), grads[2].data());
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), n * sizeof(float)), 0);

  // Names: Muon buffers for block matrices, AdamW moments for the rest.
  std::vector<std::string> expected = {
      "wte.weight.exp_avg", "wte.weight.exp_avg_sq",
      "blocks.0.norm1.weight.exp_avg", "blocks.0.norm1.weight.exp_avg_sq",
      "blocks.0.attn.qkv.weight.momentum_buffer"};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(state[i].name, expected[i]);
}

} // namespace
