//===- ModelGradientTest.cpp - whole models against a naive reference -----===//
//
// Tiny gpt, vit and dino specs with mixed head kinds are compiled with lapc
// and compared with a reference written here from the spec language's
// definitions (docs/spec.md, the lap ops' documentation): double precision,
// plain loops, full attention matrices, nothing shared with the compiler or
// the kernels. The forward loss and logits must match the reference, and
// train_step's gradients must match central finite differences of the
// reference loss; a DINO model at both of its image sizes (the compiled one,
// and the local crops' with the learned positions resampled to their grid).
//
//===----------------------------------------------------------------------===//

#include "ModelTestSupport.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

using namespace lap;
using namespace lap::test;

namespace {

using Vec = std::vector<double>;
using Params = std::map<std::string, Vec>;

/// One architecture: what the spec says, in the terms the reference needs.
/// specYaml() writes it as a spec, so the two cannot drift apart.
struct Arch {
  std::string name, family = "gpt";
  int64_t layers = 2, width = 32, heads = 4, kvHeads = 4, headDim = 8,
          hidden = 128;
  std::string activation = "relu2"; // relu2, gelu_tanh, gelu
  bool layerNorm = false, normWeight = true, normBias = false;
  double eps = 1e-5;
  bool embeddingNorm = false, finalNorm = true, qkNorm = false, bias = false;
  std::string positions = "learned"; // learned, rope, none
  bool patchesOnly = false;
  double ropeBase = 10000;
  // gpt
  int64_t vocab = 64, context = 16;
  double softcap = 0;
  bool tied = false;
  // vit
  int64_t image = 8, patch = 4, channels = 3, classes = 5, registers = 0;
  bool cls = true;
  double layerScale = 0;
  bool meanPool = false;
  // dino: the projection head, and train.dino's local crops (0: none) and
  // student temperature
  int64_t headLayers = 2, headHidden = 24, bottleneck = 8, prototypes = 12,
          localCrop = 0;
  double studentTemp = 0.1;
  /// Head kinds per layer, for the reference; `placement` is the spec's
  /// `attention` mapping (kinds by default).
  std::vector<std::vector<std::string>> kinds;
  std::string placement;
  /// gpt: each layer's sliding window (empty: none; 0: the layer has none).
  std::vector<int64_t> windows;
  /// gpt: train.data.packing: documents, each starting at token vocab - 1.
  bool documents = false;
  /// gpt: train.data.packing: padded: the batch's lengths, past which no
  /// key is seen and no target counts.
  bool padded = false;
  /// train.lora: adapters of this rank (0: none) on `loraTargets`.
  int64_t loraRank = 0;
  double loraAlpha = 1;
  std::vector<std::string> loraTargets;

  int32_t bos() const { return int32_t(vocab - 1); }
  /// Kinds the spec defines: name -> (alpha, beta); the learnable ones'
  /// (alpha, beta) are where they start.
  std::map<std::string, std::pair<double, double>> defined;
  std::set<std::string> learnable = {"learnable"};
  std::string init;

  bool gpt() const { return family == "gpt"; }
  bool dino() const { return family == "dino"; }
};

std::string specYaml(const Arch &a) {
  std::ostringstream y;
  y << "name: " << a.name << "\nmodel:\n  family: " << a.family
    << "\n  layers: " << a.layers << "\n  width: " << a.width
    << "\n  heads: " << a.heads << "\n  head_dim: " << a.headDim
    << "\n  kv_heads: " << a.kvHeads << "\n  mlp_hidden: " << a.hidden
    << "\n  activation: " << a.activation
    << "\n  norm: {type: " << (a.layerNorm ? "layernorm" : "rmsnorm")
    << ", weight: " << std::boolalpha << a.normWeight;
  if (a.layerNorm)
    y << ", bias: " << a.normBias;
  y << ", eps: " << a.eps << "}\n  embedding_norm: " << a.embeddingNorm
    << "\n  final_norm: " << a.finalNorm << "\n  qk_norm: " << a.qkNorm
    << "\n  bias: " << a.bias
    << "\n  dropout: 0\n  positions: {type: " << a.positions;
  if (a.positions == "rope")
    y << ", rope_base: " << a.ropeBase;
  if (!a.gpt())
    y << ", patches_only: " << a.patchesOnly;
  y << "}\n";
  if (a.gpt()) {
    y << "  vocab: " << a.vocab << "\n  context: " << a.context
      << "\n  logit_softcap: " << a.softcap << "\n  tied_embeddings: " << a.tied
      << "\n";
  } else {
    y << "  image_size: " << a.image << "\n  patch: " << a.patch
      << "\n  channels: " << a.channels << "\n  classes: " << a.classes
      << "\n  cls_token: " << a.cls << "\n  registers: " << a.registers
      << "\n  layer_scale: " << a.layerScale
      << "\n  drop_path: 0\n  pool: " << (a.meanPool ? "mean" : "cls") << "\n";
  }
  if (a.dino())
    y << "  dino_head: {layers: " << a.headLayers
      << ", hidden: " << a.headHidden << ", bottleneck: " << a.bottleneck
      << ", prototypes: " << a.prototypes << "}\n";
  y << "  init: " << a.init << "\nattention:\n";
  if (!a.defined.empty()) {
    y << "  define:\n";
    for (const auto &[name, ab] : a.defined)
      y << "    " << name << ": {"
        << (a.learnable.count(name) ? "learnable: true, " : "")
        << "alpha: " << ab.first << ", beta: " << ab.second << "}\n";
  }
  if (!a.placement.empty()) {
    y << "  " << a.placement << "\n";
  } else {
    y << "  kinds:\n";
    for (const auto &layer : a.kinds) {
      y << "    - [";
      for (size_t h = 0; h < layer.size(); ++h)
        y << (h ? ", " : "") << layer[h];
      y << "]\n";
    }
  }
  if (!a.windows.empty()) {
    y << "  window: [";
    for (size_t l = 0; l < a.windows.size(); ++l)
      y << (l ? ", " : "") << a.windows[l];
    y << "]\n";
  }
  // Document packing is a training setting: the spec's train section gives
  // it (and the token that starts a document: vocab - 1, the default).
  // So are LoRA adapters.
  if (a.documents || a.padded || a.loraRank > 0) {
    y << "train:\n  regime: " << (a.gpt() ? "lm" : "supervised")
      << "\n  batch_size: 2\n  steps: 1\n  data: {format: "
      << (a.gpt() ? "shards" : "idx") << ", train: unused";
    if (a.documents || a.padded)
      y << ", packing: " << (a.documents ? "documents" : "padded");
    y << "}\n";
    if (a.loraRank > 0) {
      y << "  lora: {rank: " << a.loraRank << ", alpha: " << a.loraAlpha
        << ", targets: [";
      for (size_t i = 0; i < a.loraTargets.size(); ++i)
        y << (i ? ", " : "") << a.loraTargets[i];
      y << "]}\n";
    }
  }
  // DINO's local crops are a training setting: the spec's train section
  // gives them (and the student temperature of the loss).
  if (a.dino())
    y << "train:\n  regime: dino\n  batch_size: 2\n  steps: 1\n"
      << "  data: {format: idx, train: unused}\n"
      << "  dino: {global_crop_size: " << a.image
      << ", local_crops: " << (a.localCrop ? 2 : 0)
      << ", local_crop_size: " << (a.localCrop ? a.localCrop : a.image)
      << ", student_temp: " << a.studentTemp << "}\n";
  return y.str();
}

//===----------------------------------------------------------------------===//
// The reference
//===----------------------------------------------------------------------===//

/// Head kind coefficients (alpha, beta): the table in docs/spec.md, or the
/// architecture's own definitions.
std::pair<double, double> kindCoefficients(const Arch &a,
                                           const std::string &kind) {
  if (kind == "attn")
    return {1, 0};
  if (kind == "laplacian")
    return {-1, 1};
  if (auto it = a.defined.find(kind); it != a.defined.end())
    return it->second;
  throw std::runtime_error("unknown head kind " + kind);
}

class Reference {
public:
  Reference(const Arch &a, const Params &p) : a(a), p(p) {}

  /// The mean loss; `logits` gets [B, T, vocab], [B, classes] or [B,
  /// prototypes], and `streams` the residual stream after the embedding and
  /// each block. Images are of the size their tensor's length says.
  /// Image models: the pooled, normed features (lap_model_embed).
  Vec embedding(const Batch &batch) const {
    Vec out;
    embedded = &out;
    loss(batch);
    embedded = nullptr;
    return out;
  }

  double loss(const Batch &batch, Vec *logits = nullptr,
              std::vector<Vec> *streams = nullptr) const {
    recorded = streams;
    if (recorded)
      recorded->clear();
    return a.gpt() ? gptLoss(batch, logits) : vitLoss(batch, logits);
  }

private:
  void record(const Vec &x) const {
    if (recorded)
      recorded->push_back(x);
  }

  const Vec *get(const std::string &name) const {
    auto it = p.find(name);
    return it == p.end() ? nullptr : &it->second;
  }
  /// (alpha, beta) of head hd of layer l: its kind's, or, learned, column
  /// i of blocks.l.attn.coefficients [2, N] for the layer's i-th learned
  /// head.
  std::pair<double, double> coefficients(int64_t l, int64_t hd) const {
    const auto &kinds = a.kinds[size_t(l)];
    if (!a.learnable.count(kinds[size_t(hd)]))
      return kindCoefficients(a, kinds[size_t(hd)]);
    int64_t column = 0, N = 0;
    for (int64_t h = 0; h < int64_t(kinds.size()); ++h)
      if (a.learnable.count(kinds[size_t(h)]))
        column += h < hd, ++N;
    const Vec &c = at("blocks." + std::to_string(l) + ".attn.coefficients");
    return {c[size_t(column)], c[size_t(N + column)]};
  }

  const Vec &at(const std::string &name) const {
    const Vec *v = get(name);
    if (!v)
      throw std::runtime_error("the reference needs parameter " + name);
    return *v;
  }

  /// The spec's norm over each row of c, in place.
  void norm(Vec &x, int64_t c, const std::string &name) const {
    const Vec *w = get(name + ".weight"), *b = get(name + ".bias");
    for (size_t r = 0; r < x.size() / size_t(c); ++r) {
      double *row = &x[r * size_t(c)];
      double mean = 0, sq = 0;
      if (a.layerNorm) {
        for (int64_t i = 0; i < c; ++i)
          mean += row[i];
        mean /= double(c);
      }
      for (int64_t i = 0; i < c; ++i)
        sq += (row[i] - mean) * (row[i] - mean);
      double inv = 1 / std::sqrt(sq / double(c) + a.eps);
      for (int64_t i = 0; i < c; ++i)
        row[i] = (row[i] - mean) * inv * (w ? (*w)[i] : 1) + (b ? (*b)[i] : 0);
    }
  }

  /// y [n, out] = x [n, in] W^T + b, W [out, in]; with LoRA adapters
  /// A [rank, in] and B [out, rank], + (x A^T) B^T alpha / rank.
  Vec linear(const Vec &x, int64_t in, int64_t out, const std::string &name,
             const Vec *weight = nullptr) const {
    const Vec &w = weight ? *weight : at(name + ".weight");
    const Vec *b = get(name + ".bias");
    size_t n = x.size() / size_t(in);
    Vec y(n * size_t(out));
    for (size_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double s = b ? (*b)[o] : 0;
        for (int64_t i = 0; i < in; ++i)
          s += x[r * size_t(in) + size_t(i)] * w[size_t(o * in + i)];
        y[r * size_t(out) + size_t(o)] = s;
      }
    const Vec *down = get(name + ".lora_A.weight");
    if (!down)
      return y;
    const Vec &up = at(name + ".lora_B.weight");
    const int64_t rank = a.loraRank;
    const double scale = a.loraAlpha / double(rank);
    for (size_t r = 0; r < n; ++r)
      for (int64_t k = 0; k < rank; ++k) {
        double low = 0;
        for (int64_t i = 0; i < in; ++i)
          low += x[r * size_t(in) + size_t(i)] * (*down)[size_t(k * in + i)];
        for (int64_t o = 0; o < out; ++o)
          y[r * size_t(out) + size_t(o)] +=
              scale * low * up[size_t(o * rank + k)];
      }
    return y;
  }

  double activation(double x) const {
    if (a.activation == "relu2")
      return x > 0 ? x * x : 0;
    if (a.activation == "gelu")
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }

  /// Rotates channel pairs (i, i + D/2) of x [B, T, heads, D] by t
  /// base^(-2i/D).
  void rope(Vec &x, int64_t B, int64_t T, int64_t heads) const {
    int64_t D = a.headDim, half = D / 2;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < heads; ++h) {
          double *v = &x[size_t(((b * T + t) * heads + h) * D)];
          for (int64_t i = 0; i < half; ++i) {
            double angle =
                double(t) * std::pow(a.ropeBase, -2.0 * double(i) / double(D));
            double c = std::cos(angle), s = std::sin(angle);
            double x0 = v[i], x1 = v[i + half];
            v[i] = x0 * c - x1 * s;
            v[i + half] = x0 * s + x1 * c;
          }
        }
  }

  /// Multi-head attention of layer l on the normed residual h [B, T, width],
  /// through the output projection.
  Vec attention(const Vec &h, int64_t B, int64_t T, int64_t l) const {
    const int64_t H = a.heads, KV = a.kvHeads, D = a.headDim, C = a.width;
    std::string prefix = "blocks." + std::to_string(l) + ".attn";
    Vec qkv = linear(h, C, (H + 2 * KV) * D, prefix + ".qkv");
    Vec q(size_t(B * T * H * D)), k(size_t(B * T * KV * D)), v(k.size());
    for (int64_t r = 0; r < B * T; ++r) {
      const double *row = &qkv[size_t(r * (H + 2 * KV) * D)];
      std::copy(row, row + H * D, &q[size_t(r * H * D)]);
      std::copy(row + H * D, row + (H + KV) * D, &k[size_t(r * KV * D)]);
      std::copy(row + (H + KV) * D, row + (H + 2 * KV) * D,
                &v[size_t(r * KV * D)]);
    }
    if (a.qkNorm) {
      norm(q, D, prefix + ".q_norm");
      norm(k, D, prefix + ".k_norm");
    }
    if (a.positions == "rope") {
      rope(q, B, T, H);
      rope(k, B, T, KV);
    }
    bool causal = a.gpt();
    double scale = 1 / std::sqrt(double(D));
    Vec merged(size_t(B * T * H * D), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hd = 0; hd < H; ++hd) {
        int64_t g = hd / (H / KV); // the query head's kv group
        auto [alpha, beta] = coefficients(l, hd);
        auto Q = [&](int64_t t, int64_t d) {
          return q[size_t(((b * T + t) * H + hd) * D + d)];
        };
        auto K = [&](int64_t s, int64_t d) {
          return k[size_t(((b * T + s) * KV + g) * D + d)];
        };
        auto V = [&](int64_t s, int64_t d) {
          return v[size_t(((b * T + s) * KV + g) * D + d)];
        };
        // Query t sees keys [first, keys): causal, under the layer's
        // window the last `window` of them, in documents its own's, none
        // of the padding (which may leave it none at all: P = 0).
        const int64_t window = a.windows.empty() ? 0 : a.windows[size_t(l)];
        std::vector<Vec> P(size_t(T), Vec(size_t(T), 0.0));
        for (int64_t t = 0; t < T; ++t) {
          int64_t keys = causal ? t + 1 : T;
          int64_t first = window > 0 ? std::max<int64_t>(0, keys - window) : 0;
          if (!lengths.empty())
            keys = std::min(keys, lengths[size_t(b)]);
          if (!starts.empty())
            first = std::max(first, starts[size_t(b * T + t)]);
          double top = -std::numeric_limits<double>::infinity(), sum = 0;
          for (int64_t s = first; s < keys; ++s) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += Q(t, d) * K(s, d);
            P[t][s] = scale * dot;
            top = std::max(top, P[t][s]);
          }
          for (int64_t s = first; s < keys; ++s)
            sum += (P[t][s] = std::exp(P[t][s] - top));
          for (int64_t s = first; s < keys; ++s)
            P[t][s] /= sum;
        }
        for (int64_t t = 0; t < T; ++t)
          for (int64_t d = 0; d < D; ++d) {
            double pv = 0;
            for (int64_t s = 0; s < T; ++s)
              pv += P[t][s] * V(s, d);
            merged[size_t(((b * T + t) * H + hd) * D + d)] =
                alpha * pv + beta * V(t, d);
          }
      }
    return linear(merged, H * D, C, prefix + ".proj");
  }

  /// A pre-norm block: x + ls1 * attn(norm1 x), then + ls2 * mlp(norm2 x).
  void block(Vec &x, int64_t B, int64_t T, int64_t l) const {
    const int64_t C = a.width;
    std::string prefix = "blocks." + std::to_string(l);
    auto residual = [&](const Vec &branch, const std::string &gamma) {
      const Vec *g = get(prefix + "." + gamma);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] += branch[i] * (g ? (*g)[i % size_t(C)] : 1);
    };
    Vec h = x;
    norm(h, C, prefix + ".norm1");
    residual(attention(h, B, T, l), "ls1");
    h = x;
    norm(h, C, prefix + ".norm2");
    Vec f = linear(h, C, a.hidden, prefix + ".mlp.fc1");
    for (double &e : f)
      e = activation(e);
    residual(linear(f, a.hidden, C, prefix + ".mlp.fc2"), "ls2");
  }

  double gptLoss(const Batch &batch, Vec *logitsOut) const {
    const int64_t B = batch.batch, T = batch.seq, C = a.width, V = a.vocab;
    // Padded: each sequence's length.
    lengths.assign(batch.lengths.begin(), batch.lengths.end());
    if (!a.padded)
      lengths.clear();
    // With documents, token t's starts at the last bos at or before it.
    starts.assign(size_t(B * T), 0);
    if (a.documents)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0, start = 0; t < T; ++t) {
          if (batch.tokens[size_t(b * T + t)] == a.bos())
            start = t;
          starts[size_t(b * T + t)] = start;
        }
    const Vec &wte = at("wte.weight");
    const Vec *wpe = get("wpe.weight");
    Vec x(size_t(B * T * C));
    for (int64_t r = 0; r < B * T; ++r)
      for (int64_t c = 0; c < C; ++c)
        x[size_t(r * C + c)] = wte[size_t(batch.tokens[size_t(r)] * C + c)] +
                               (wpe ? (*wpe)[size_t((r % T) * C + c)] : 0);
    if (a.embeddingNorm)
      norm(x, C, "embedding_norm");
    record(x);
    for (int64_t l = 0; l < a.layers; ++l) {
      block(x, B, T, l);
      record(x);
    }
    if (a.finalNorm)
      norm(x, C, "norm");
    Vec logits = linear(x, C, V, "lm_head", a.tied ? &wte : nullptr);
    if (a.softcap > 0)
      for (double &z : logits)
        z = a.softcap * std::tanh(z / a.softcap);
    // Mean over the positions whose target is not -1.
    double total = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < B * T; ++r) {
      int32_t target = batch.targets[size_t(r)];
      if (target < 0 || (!lengths.empty() && r % T >= lengths[size_t(r / T)]))
        continue;
      const double *z = &logits[size_t(r * V)];
      double top = *std::max_element(z, z + V), sum = 0;
      for (int64_t i = 0; i < V; ++i)
        sum += std::exp(z[i] - top);
      total += top + std::log(sum) - z[target];
      ++count;
    }
    if (logitsOut)
      *logitsOut = std::move(logits);
    return count ? total / double(count) : 0;
  }

  /// PyTorch's cubic convolution kernel (A = -0.75) at distance d.
  static double cubic(double d) {
    const double A = -0.75;
    d = std::abs(d);
    if (d <= 1)
      return ((A + 2) * d - (A + 3)) * d * d + 1;
    if (d < 2)
      return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
    return 0;
  }

  /// DINO's interpolate_pos_encoding: the positions of a G x G patch grid
  /// (after `keep` rows copied as they are) resampled bicubically to g x g.
  /// Output i of an axis reads source coordinate s = (i + 0.5) G / (g + 0.1)
  /// - 0.5 through the taps floor(s) - 1 .. floor(s) + 2, those outside the
  /// grid reading its border; the same along y and x.
  Vec interpolatePositions(const Vec &pos, int64_t keep, int64_t G,
                           int64_t g) const {
    const int64_t C = a.width;
    std::vector<std::vector<std::pair<int64_t, double>>> taps(
        static_cast<size_t>(g));
    for (int64_t i = 0; i < g; ++i) {
      double s = (double(i) + 0.5) * double(G) / (double(g) + 0.1) - 0.5;
      int64_t first = int64_t(std::floor(s)) - 1;
      for (int64_t j = first; j < first + 4; ++j)
        taps[size_t(i)].push_back(
            {std::clamp<int64_t>(j, 0, G - 1), cubic(s - double(j))});
    }
    Vec out(size_t((keep + g * g) * C), 0.0);
    std::copy(pos.begin(), pos.begin() + keep * C, out.begin());
    for (int64_t y = 0; y < g; ++y)
      for (int64_t x = 0; x < g; ++x)
        for (auto [sy, wy] : taps[size_t(y)])
          for (auto [sx, wx] : taps[size_t(x)])
            for (int64_t c = 0; c < C; ++c)
              out[size_t((keep + y * g + x) * C + c)] +=
                  wy * wx * pos[size_t((keep + sy * G + sx) * C + c)];
    return out;
  }

  /// DINO's head on the pooled features [B, width]: linears with exact GELU
  /// between them down to the bottleneck, L2 normalisation, then the
  /// weight-normed last layer (row k of W is g_k v_k / ||v_k||, no bias):
  /// logits [B, prototypes].
  Vec dinoHead(const Vec &pooled) const {
    Vec z = pooled;
    int64_t in = a.width;
    for (int64_t i = 0; i < a.headLayers; ++i) {
      bool last = i + 1 == a.headLayers;
      int64_t out = last ? a.bottleneck : a.headHidden;
      z = linear(z, in, out, "dino_head.mlp." + std::to_string(i));
      if (!last)
        for (double &e : z)
          e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
      in = out;
    }
    for (size_t r = 0; r < z.size() / size_t(in); ++r) {
      double sq = 0;
      for (int64_t i = 0; i < in; ++i)
        sq += z[r * size_t(in) + size_t(i)] * z[r * size_t(in) + size_t(i)];
      double length = std::max(std::sqrt(sq), 1e-12);
      for (int64_t i = 0; i < in; ++i)
        z[r * size_t(in) + size_t(i)] /= length;
    }
    const Vec &v = at("dino_head.last_layer.weight_v"),
              &g = at("dino_head.last_layer.weight_g");
    Vec w(v.size());
    for (int64_t k = 0; k < a.prototypes; ++k) {
      double sq = 0;
      for (int64_t i = 0; i < in; ++i)
        sq += v[size_t(k * in + i)] * v[size_t(k * in + i)];
      for (int64_t i = 0; i < in; ++i)
        w[size_t(k * in + i)] =
            g[size_t(k)] * v[size_t(k * in + i)] / std::sqrt(sq);
    }
    return linear(z, in, a.prototypes, "dino_head.last_layer", &w);
  }

  double vitLoss(const Batch &batch, Vec *logitsOut) const {
    const int64_t B = batch.batch, C = a.width, Ch = a.channels, p = a.patch;
    const int64_t size = int64_t(
        std::lround(std::sqrt(double(batch.images.size()) / double(B * Ch))));
    if (size != a.image && (!a.localCrop || size != a.localCrop))
      throw std::runtime_error("images of " + std::to_string(size) +
                               " pixels are of no size of the model");
    const int64_t side = size / p, N = side * side, F = Ch * p * p;
    // Patches in row-major order, each flattened channel-major (c, dy, dx).
    Vec patches(size_t(B * N * F));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t py = 0; py < side; ++py)
        for (int64_t px = 0; px < side; ++px)
          for (int64_t c = 0; c < Ch; ++c)
            for (int64_t dy = 0; dy < p; ++dy)
              for (int64_t dx = 0; dx < p; ++dx)
                patches[size_t(((b * N + py * side + px) * F) +
                               (c * p + dy) * p + dx)] =
                    batch.images[size_t(((b * Ch + c) * size + py * p + dy) *
                                            size +
                                        px * p + dx)];
    Vec e = linear(patches, F, C, "patch_embed");
    const Vec *pos = get("pos_embed");
    // Images other than the compiled size (DINO's local crops) get the
    // positions resampled to their grid; a CLS position stays as it is.
    Vec resampled;
    if (pos && size != a.image) {
      resampled = interpolatePositions(*pos, a.cls && !a.patchesOnly ? 1 : 0,
                                       a.image / p, side);
      pos = &resampled;
    }
    // Tokens: [registers, CLS, patches]; positions on CLS and patches, or
    // on patches only.
    const int64_t lead = a.registers + (a.cls ? 1 : 0), T = lead + N;
    Vec x(size_t(B * T * C), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < C; ++c) {
          double value = 0;
          if (t < a.registers) {
            value = at("registers")[size_t(t * C + c)];
          } else if (t < lead) {
            value = at("cls_token")[size_t(c)];
            if (pos && !a.patchesOnly)
              value += (*pos)[size_t(c)];
          } else {
            int64_t n = t - lead;
            value = e[size_t((b * N + n) * C + c)];
            if (pos)
              value += (*pos)[size_t(
                  (a.patchesOnly ? n : n + (a.cls ? 1 : 0)) * C + c)];
          }
          x[size_t((b * T + t) * C + c)] = value;
        }
    if (a.embeddingNorm)
      norm(x, C, "embedding_norm");
    record(x);
    for (int64_t l = 0; l < a.layers; ++l) {
      block(x, B, T, l);
      record(x);
    }
    if (a.finalNorm)
      norm(x, C, "norm");
    Vec pooled(size_t(B * C), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        if (!a.meanPool) {
          pooled[size_t(b * C + c)] = x[size_t((b * T + a.registers) * C + c)];
          continue;
        }
        for (int64_t t = lead; t < T; ++t)
          pooled[size_t(b * C + c)] +=
              x[size_t((b * T + t) * C + c)] / double(T - lead);
      }
    if (embedded)
      *embedded = pooled;
    // The classifier and soft cross-entropy against the target
    // distributions, or DINO's head and cross-entropy against the teacher's
    // distributions of softmax(logits / student_temp).
    const int64_t K = a.dino() ? a.prototypes : a.classes;
    const double temperature = a.dino() ? a.studentTemp : 1;
    Vec logits =
        a.dino() ? dinoHead(pooled) : linear(pooled, C, a.classes, "head");
    double total = 0;
    for (int64_t b = 0; b < B; ++b) {
      Vec z(&logits[size_t(b * K)], &logits[size_t((b + 1) * K)]);
      for (double &e : z)
        e /= temperature;
      double top = *std::max_element(z.begin(), z.end()), sum = 0;
      for (int64_t k = 0; k < K; ++k)
        sum += std::exp(z[size_t(k)] - top);
      for (int64_t k = 0; k < K; ++k)
        total -= batch.distributions[size_t(b * K + k)] *
                 (z[size_t(k)] - top - std::log(sum));
    }
    if (logitsOut)
      *logitsOut = std::move(logits);
    return total / double(B);
  }

  const Arch &a;
  const Params &p;
  mutable std::vector<Vec> *recorded = nullptr;
  /// gpt: where each token's document starts (0 without documents).
  mutable std::vector<int64_t> starts;
  /// gpt, padded: each sequence's length (empty otherwise).
  mutable std::vector<int64_t> lengths;
  /// Where embedding() wants the pooled features.
  mutable Vec *embedded = nullptr;
};

//===----------------------------------------------------------------------===//
// The cases
//===----------------------------------------------------------------------===//

/// An architecture, compiled for (maxBatch, maxSeq), run at (batch, seq)
/// below those maxima.
struct Case {
  Arch arch;
  int64_t maxBatch, maxSeq, batch, seq;
};

/// Names the case in gtest's messages.
void PrintTo(const Case &c, std::ostream *os) { *os << c.arch.name; }

std::vector<Case> cases() {
  std::vector<Case> all;
  {
    // nanochat-like: RoPE, QK-norm, parameter-free RMSNorm (also after the
    // embedding), ReLU^2, softcap, no biases, untied; GQA with 2 kv heads;
    // documents packed into the sequences.
    Arch a;
    a.name = "gpt_rope_gqa";
    a.documents = true;
    a.kvHeads = 2;
    a.normWeight = false;
    a.embeddingNorm = true;
    a.qkNorm = true;
    a.positions = "rope";
    a.softcap = 3; // small, so the cap bends the logits
    a.kinds = {{"attn", "laplacian", "attn", "laplacian"},
               {"laplacian", "laplacian", "attn", "laplacian"}};
    a.init = "{distribution: uniform, std: fan_in, embedding_std: 1.0, "
             "head_std: 0.3, "
             "zero_out_proj: false}";
    all.push_back({a, 3, 16, 2, 11});
  }
  {
    // Kinds the spec defines, with coefficients off {-1, 0, 1}, beside the
    // built-in ones (a layer with a defined kind is lowered by coefficients),
    // under a sliding window of 4 keys in the first layer (none in the
    // second), in padded batches.
    Arch a;
    a.name = "gpt_defined_kinds";
    a.kvHeads = 2;
    a.positions = "rope";
    a.windows = {4, 0};
    a.padded = true;
    a.defined = {
        {"half", {0.5, 0.5}}, {"tilted", {0.3, -0.7}}, {"sharp", {1.75, 0}}};
    a.kinds = {{"half", "attn", "tilted", "laplacian"},
               {"sharp", "tilted", "half", "attn"}};
    a.init = "{distribution: normal, std: 0.2, embedding_std: 0.5, "
             "position_std: 0.3, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 16, 2, 11});
  }
  {
    // Learned kinds (built in and defined, started off {-1, 0, 1} by the
    // perturbation in load()) beside fixed ones, one layer without any.
    Arch a;
    a.name = "gpt_learned_kinds";
    a.kvHeads = 2;
    a.positions = "rope";
    a.defined = {{"soft_lap", {-1, 1}}, {"half", {0.5, 0.5}}};
    a.learnable = {"learnable", "soft_lap"};
    a.kinds = {{"learnable", "attn", "soft_lap", "half"},
               {"laplacian", "attn", "half", "attn"},
               {"soft_lap", "learnable", "learnable", "laplacian"}};
    a.layers = 3;
    a.init = "{distribution: normal, std: 0.2, embedding_std: 0.5, "
             "position_std: 0.3, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 16, 2, 11});
  }
  {
    // Learned kinds in a ViT (self-attention without a mask).
    Arch a;
    a.name = "vit_learned_kinds";
    a.family = "vit";
    a.hidden = 64;
    a.activation = "gelu";
    a.layerNorm = true;
    a.normBias = true;
    a.bias = true;
    a.defined = {{"soft_lap", {-1, 1}}};
    a.learnable = {"learnable", "soft_lap"};
    a.kinds = {{"attn", "learnable", "laplacian", "soft_lap"},
               {"soft_lap", "soft_lap", "attn", "learnable"}};
    a.init = "{distribution: trunc_normal, std: 0.2, embedding_std: 0.3, "
             "position_std: 0.5, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 5, 2, 5});
  }
  {
    // GPT-2-like: learned positions, LayerNorm with weight and bias,
    // GELU(tanh), biases, tied embeddings; head_dim * heads != width, and the
    // placement in the trailing-count shorthand.
    Arch a;
    a.name = "gpt_learned_layernorm";
    a.headDim = 6;
    a.hidden = 48;
    a.activation = "gelu_tanh";
    a.layerNorm = true;
    a.normBias = true;
    a.bias = true;
    a.tied = true;
    a.kinds = {{"attn", "attn", "attn", "laplacian"},
               {"attn", "laplacian", "laplacian", "laplacian"}};
    a.placement = "laplacian_heads: [1, 3]";
    a.init = "{distribution: normal, std: 0.2, embedding_std: 0.5, "
             "position_std: 0.3, "
             "head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 16, 2, 11});
  }
  {
    // DeiT-3-like: CLS token, positions on patches only, LayerScale,
    // QK-norm (LayerNorm over head_dim), exact GELU, CLS pooling.
    Arch a;
    a.name = "vit_cls";
    a.family = "vit";
    a.hidden = 64;
    a.activation = "gelu";
    a.layerNorm = true;
    a.normBias = true;
    a.eps = 1e-6;
    a.qkNorm = true;
    a.bias = true;
    a.patchesOnly = true;
    a.layerScale = 0.5;
    a.kinds = {{"attn", "laplacian", "laplacian", "attn"},
               {"laplacian", "attn", "attn", "attn"}};
    a.init = "{distribution: trunc_normal, std: 0.2, embedding_std: 0.3, "
             "position_std: 0.5, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 5, 2, 5});
  }
  {
    // A register token, positions on CLS and patches, RMSNorm with weight
    // (also after the embedding), no final norm, GQA, mean pooling.
    Arch a;
    a.name = "vit_registers_mean";
    a.family = "vit";
    a.hidden = 64;
    a.kvHeads = 2;
    a.activation = "gelu_tanh";
    a.embeddingNorm = true;
    a.finalNorm = false;
    a.registers = 1;
    a.meanPool = true;
    a.layerScale = 0.5;
    a.kinds = {{"laplacian", "attn", "laplacian", "laplacian"},
               {"attn", "laplacian", "attn", "laplacian"}};
    a.init = "{distribution: normal, std: 0.2, embedding_std: 0.3, "
             "position_std: 0.5, "
             "head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 6, 2, 6});
  }
  {
    // LoRA (train.lora) on every linear layer of the blocks, rank 2,
    // alpha 3, beside mixed kinds with RoPE and GQA: only the adapters
    // have gradients; the decode path computes them too.
    Arch a;
    a.name = "gpt_lora";
    a.kvHeads = 2;
    a.positions = "rope";
    a.qkNorm = true;
    a.kinds = {{"attn", "laplacian", "attn", "laplacian"},
               {"laplacian", "attn", "attn", "attn"}};
    a.loraRank = 2;
    a.loraAlpha = 3;
    a.loraTargets = {"qkv", "proj", "fc1", "fc2"};
    a.init = "{distribution: normal, std: 0.2, embedding_std: 0.5, "
             "head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 16, 2, 11});
  }
  {
    // LoRA on a ViT's attention output and second MLP layer, which have
    // biases (the adapters have none).
    Arch a;
    a.name = "vit_lora";
    a.family = "vit";
    a.hidden = 64;
    a.activation = "gelu";
    a.layerNorm = true;
    a.normBias = true;
    a.bias = true;
    a.kinds = {{"laplacian", "attn", "attn", "laplacian"},
               {"attn", "laplacian", "attn", "attn"}};
    a.loraRank = 3;
    a.loraAlpha = 6;
    a.loraTargets = {"proj", "fc2"};
    a.init = "{distribution: trunc_normal, std: 0.2, embedding_std: 0.3, "
             "position_std: 0.5, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 5, 2, 5});
  }
  {
    // DINO (ViT-S-like backbone): CLS token with a position, LayerNorm,
    // exact GELU, CLS pooling, the projection head; local crops of 8
    // pixels, whose 2 x 2 grid reads the positions of the compiled 3 x 3
    // one (the CLS position copied).
    Arch a;
    a.name = "dino";
    a.family = "dino";
    a.width = 16;
    a.headDim = 4;
    a.hidden = 32;
    a.activation = "gelu";
    a.layerNorm = true;
    a.normBias = true;
    a.eps = 1e-6;
    a.bias = true;
    a.image = 12;
    a.classes = 0;
    a.localCrop = 8;
    a.kinds = {{"attn", "laplacian", "laplacian", "attn"},
               {"laplacian", "attn", "attn", "attn"}};
    a.init = "{distribution: trunc_normal, std: 0.2, embedding_std: 0.3, "
             "position_std: 0.5, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 10, 2, 10});
  }
  {
    // DINO with positions on the patches only (none kept as they are),
    // a register, LayerScale, GQA, a three-layer head and another student
    // temperature; local crops of 12 pixels: a 4 x 4 grid resampled to
    // 3 x 3.
    Arch a;
    a.name = "dino_patches_only";
    a.family = "dino";
    a.width = 24;
    a.headDim = 6;
    a.kvHeads = 2;
    a.hidden = 48;
    a.activation = "gelu";
    a.layerNorm = true;
    a.normBias = true;
    a.eps = 1e-6;
    a.bias = true;
    a.patchesOnly = true;
    a.registers = 1;
    a.layerScale = 0.5;
    a.image = 16;
    a.classes = 0;
    a.headLayers = 3;
    a.localCrop = 12;
    a.studentTemp = 0.2;
    a.kinds = {{"laplacian", "attn", "attn", "laplacian"},
               {"attn", "attn", "laplacian", "attn"}};
    a.init = "{distribution: trunc_normal, std: 0.2, embedding_std: 0.3, "
             "position_std: 0.5, head_std: 0.3, zero_out_proj: false}";
    all.push_back({a, 3, 18, 2, 18});
  }
  return all;
}

/// The first case `pick` accepts, and its model compiled at the case's
/// maxima with the spec's initialisation (seed 7); no model when no case
/// is picked or the initialisation fails (a test failure).
template <typename Pick>
std::pair<Case, std::unique_ptr<ModelRun>> firstCase(Pick pick) {
  std::vector<Case> all = cases();
  auto it = std::find_if(all.begin(), all.end(), pick);
  if (it == all.end()) {
    ADD_FAILURE() << "no case is picked";
    return {Case{}, nullptr};
  }
  auto run = std::make_unique<ModelRun>(
      compiled(it->arch.name, specYaml(it->arch), it->maxBatch, it->maxSeq));
  if (run->model.initParams(run->param(), 7) != LAP_OK) {
    ADD_FAILURE() << run->model.lastError();
    return {*it, nullptr};
  }
  return {*it, std::move(run)};
}

class ModelGradientTest : public ::testing::TestWithParam<Case> {
protected:
  /// The model with the spec's initialisation, then constant-initialised
  /// tensors (biases, norm weights, LayerScale, learned head coefficients)
  /// moved off their constants so that the forward pass depends on every
  /// parameter.
  std::unique_ptr<ModelRun> load() {
    const Case &c = GetParam();
    auto run = std::make_unique<ModelRun>(
        compiled(c.arch.name, specYaml(c.arch), c.maxBatch, c.maxSeq));
    EXPECT_EQ(run->model.initParams(run->param(), 7), LAP_OK);
    std::mt19937 rng(11);
    std::normal_distribution<float> noise(0.0f, 0.2f);
    for (const ParameterInfo &p : run->model.parameters())
      if (p.init == "constant" || p.init == "values")
        for (int64_t i = 0; i < p.elements; ++i)
          run->param()[p.offset + i] += noise(rng);
    return run;
  }

  /// The image sizes the case's model runs: the compiled one (false), then
  /// the local crops' (true) for DINO with local crops.
  std::vector<bool> imageSizes() const {
    if (GetParam().arch.localCrop > 0)
      return {false, true};
    return {false};
  }

  /// Images with their target distributions (DINO: the teacher's, rows of
  /// probabilities); gpt: tokens with two targets ignored.
  Batch batch(int64_t B, int64_t T, uint32_t seed) const {
    const Arch &a = GetParam().arch;
    if (!a.gpt())
      return imageBatch(B, a.channels, a.image,
                        a.dino() ? a.prototypes : a.classes, seed);
    Batch b = textBatch(B, T, a.vocab, seed);
    // Two ignored targets: the loss is the mean over the others.
    b.targets[1] = -1;
    b.targets[size_t(B * T - 2)] = -1;
    // Documents: each sequence's second starts after a few tokens (the
    // first began before it), a third in the last sequence.
    if (a.documents) {
      for (int64_t r = 0; r < B; ++r)
        b.tokens[size_t(r * T + std::min<int64_t>(T - 1, 2 + r))] = a.bos();
      b.tokens[size_t(B * T - 3)] = a.bos();
    }
    // Padded: the first sequence whole, the others shorter (the second's
    // last queries see no key under the first layer's window of 4).
    for (int64_t r = 0; a.padded && r < B; ++r)
      b.lengths.push_back(int32_t(std::max<int64_t>(1, T - 5 * r)));
    return b;
  }

  /// A batch of DINO's local crops, of the model's second image size: its
  /// pixels and tokens as the manifest gives them, lap_batch.seq the
  /// tokens (which selects @forward_local and @train_step_local).
  Batch localBatch(const ModelRun &run, int64_t B, uint32_t seed) const {
    const Arch &a = GetParam().arch;
    const nlohmann::json &images = run.model.manifest()["images"];
    EXPECT_EQ(images["sizes"].size(), 2u);
    int64_t size = images["sizes"][1], tokens = images["tokens"][1];
    int64_t side = a.localCrop / a.patch;
    EXPECT_EQ(size, a.localCrop);
    EXPECT_EQ(tokens, a.registers + (a.cls ? 1 : 0) + side * side);
    Batch b = imageBatch(B, a.channels, size, a.prototypes, seed);
    b.seq = tokens;
    return b;
  }

  void expectGradients(ModelRun &run, Batch &b);

  static Params doubles(ModelRun &run) {
    Params p;
    for (const ParameterInfo &info : run.model.parameters())
      p[info.name] = Vec(run.param() + info.offset,
                         run.param() + info.offset + info.elements);
    return p;
  }
};

// The kernels compute in float32 and the reference in double, so they agree
// to float32 rounding accumulated over a few layers: the loss to 1e-5
// relative and the logits to 1e-5 of the largest logit (observed: below
// 1e-7 and 1e-6). DINO at both image sizes: @forward on the compiled one,
// @forward_local on the local crops'.
TEST_P(ModelGradientTest, ForwardMatchesReference) {
  const Case &c = GetParam();
  auto run = load();
  Params p = doubles(*run);
  Reference ref(c.arch, p);
  // At the run-time sizes below the maxima, then at the maxima themselves.
  for (bool local : imageSizes())
    for (auto [B, T] :
         {std::pair{c.batch, c.seq}, std::pair{c.maxBatch, c.maxSeq}}) {
      Batch b = local ? localBatch(*run, B, 3) : batch(B, T, 3);
      SCOPED_TRACE("batch " + std::to_string(B) + ", seq " +
                   std::to_string(local ? b.seq : T) +
                   (local ? " (local crops)" : ""));
      std::vector<float> logits;
      float loss = run->forward(b, &logits);
      Vec expected;
      double expectedLoss = ref.loss(b, &expected);
      EXPECT_NEAR(loss, expectedLoss, 1e-5 * std::abs(expectedLoss));
      ASSERT_EQ(logits.size(), expected.size());
      double largest = 0, worst = 0;
      size_t at = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        largest = std::max(largest, std::abs(expected[i]));
        if (std::abs(logits[i] - expected[i]) > worst)
          worst = std::abs(logits[i] - expected[i]), at = i;
      }
      EXPECT_LE(worst, 1e-5 * largest)
          << "logit " << at << ": " << logits[at] << " vs " << expected[at];
      // train_step's loss is the forward's (no dropout in these specs).
      EXPECT_NEAR(run->trainStep(b), loss, 1e-6 * std::abs(loss));
    }
}

// The residual streams lap_model_features returns, layer by layer, against
// the reference's, to 1e-5 of each layer's largest magnitude (as the
// logits).
TEST_P(ModelGradientTest, FeaturesMatchReference) {
  const Case &c = GetParam();
  auto run = load();
  const nlohmann::json &features = run->model.manifest()["features"];
  ASSERT_EQ(features["layers"].get<int64_t>(), c.arch.layers + 1);
  ASSERT_EQ(features["width"].get<int64_t>(), c.arch.width);
  Params p = doubles(*run);
  Reference ref(c.arch, p);
  Batch b = batch(c.batch, c.seq, 9);
  std::vector<Vec> streams;
  ref.loss(b, nullptr, &streams);
  ASSERT_EQ(streams.size(), size_t(c.arch.layers + 1));
  size_t layer = streams[0].size();
  std::vector<float> got(streams.size() * layer, NAN);
  lap_batch view = b.view();
  ASSERT_EQ(
      run->model.features(run->param(), &view, run->workspace.data, got.data()),
      LAP_OK)
      << run->model.lastError();
  for (size_t l = 0; l < streams.size(); ++l) {
    double largest = 0, worst = 0;
    for (size_t i = 0; i < layer; ++i) {
      largest = std::max(largest, std::abs(streams[l][i]));
      worst = std::max(worst, std::abs(got[l * layer + i] - streams[l][i]));
    }
    EXPECT_LE(worst, 1e-5 * largest) << "layer " << l;
  }
}

// Image models' embedding (lap_model_embed): the final norm's output,
// pooled, as the reference computes it before the head; language models
// have none and say so.
TEST_P(ModelGradientTest, EmbedMatchesReference) {
  const Case &c = GetParam();
  auto run = load();
  Batch b = batch(c.batch, c.seq, 10);
  lap_batch view = b.view();
  std::vector<float> got(size_t(c.batch * c.arch.width), NAN);
  if (c.arch.gpt()) {
    EXPECT_EQ(
        run->model.embed(run->param(), &view, run->workspace.data, got.data()),
        LAP_INVALID_ARGUMENT);
    EXPECT_NE(run->model.lastError().find("no embed function"),
              std::string::npos)
        << run->model.lastError();
    return;
  }
  Params p = doubles(*run);
  Reference ref(c.arch, p);
  Vec expected = ref.embedding(b);
  ASSERT_EQ(expected.size(), got.size());
  ASSERT_EQ(
      run->model.embed(run->param(), &view, run->workspace.data, got.data()),
      LAP_OK)
      << run->model.lastError();
  double largest = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    largest = std::max(largest, std::abs(expected[i]));
    worst = std::max(worst, std::abs(got[i] - expected[i]));
  }
  EXPECT_LE(worst, 1e-5 * largest);
}

// Decoding: the sequence fed through lap_model_decode in chunks (a prompt,
// single tokens, a chunk of three, then to the end) must give the
// reference's logits for every position, with the same tolerance as the
// forward; image models have no decode and say so.
TEST_P(ModelGradientTest, DecodeMatchesReference) {
  const Case &c = GetParam();
  auto run = load();
  const nlohmann::json &decode = run->model.manifest()["decode"];
  std::vector<float> logits(
      size_t(c.batch * c.maxSeq * std::max<int64_t>(c.arch.vocab, 1)));
  if (!c.arch.gpt()) {
    EXPECT_TRUE(decode.is_null());
    float cache = 0;
    int32_t token = 0;
    EXPECT_EQ(run->model.decode(run->param(), &token, 1, 1, 0, &cache,
                                run->workspace.data, logits.data()),
              LAP_INVALID_ARGUMENT);
    EXPECT_NE(run->model.lastError().find("no decode"), std::string::npos)
        << run->model.lastError();
    return;
  }
  ASSERT_EQ(decode["capacity"].get<int64_t>(), c.maxSeq);
  // A windowed layer's cache keeps the window's positions, the others every
  // one; the cache starts as NaN, so reading a slot never written shows.
  std::vector<int64_t> slots;
  for (int64_t l = 0; l < c.arch.layers; ++l) {
    int64_t window = c.arch.windows.empty() ? 0 : c.arch.windows[size_t(l)];
    slots.push_back(window > 0 ? std::min(window, c.maxSeq) : c.maxSeq);
  }
  EXPECT_EQ(decode["slots"].get<std::vector<int64_t>>(), slots);
  EXPECT_EQ(decode["cache_floats_per_sequence"].get<int64_t>(),
            2 * std::accumulate(slots.begin(), slots.end(), int64_t(0)) *
                decode["kv_heads"].get<int64_t>() *
                decode["head_dim"].get<int64_t>());
  Params p = doubles(*run);
  // Decoding continues one document: what the forward computes without
  // document packing.
  Arch oneDocument = c.arch;
  oneDocument.documents = false;
  oneDocument.padded = false;
  Reference ref(oneDocument, p);
  const int64_t B = c.batch, T = c.maxSeq, V = c.arch.vocab;
  Batch b = batch(B, T, 5);
  Vec expected;
  ref.loss(b, &expected);
  std::vector<float> cache(
      size_t(B * decode["cache_floats_per_sequence"].get<int64_t>()), NAN);
  std::vector<float> got(expected.size(), NAN);
  int64_t first = 0;
  for (int64_t chunk : {4, 1, 1, 3, 100}) {
    int64_t count = std::min(chunk, T - first);
    std::vector<int32_t> tokens;
    for (int64_t r = 0; r < B; ++r)
      tokens.insert(tokens.end(), b.tokens.begin() + r * T + first,
                    b.tokens.begin() + r * T + first + count);
    ASSERT_EQ(run->model.decode(run->param(), tokens.data(), B, count, first,
                                cache.data(), run->workspace.data,
                                logits.data()),
              LAP_OK)
        << run->model.lastError();
    for (int64_t r = 0; r < B; ++r)
      std::copy(logits.begin() + r * count * V,
                logits.begin() + (r + 1) * count * V,
                got.begin() + (r * T + first) * V);
    first += count;
  }
  ASSERT_EQ(first, T);
  double largest = 0, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    largest = std::max(largest, std::abs(expected[i]));
    if (!(std::abs(got[i] - expected[i]) <= worst))
      worst = std::abs(got[i] - expected[i]), at = i;
  }
  EXPECT_LE(worst, 1e-5 * largest)
      << "logit " << at << ": " << got[at] << " vs " << expected[at];

  // Past the cache, or a token outside the vocabulary: an error, not a write.
  int32_t token = 0;
  EXPECT_EQ(run->model.decode(run->param(), &token, 1, 1, T, cache.data(),
                              run->workspace.data, logits.data()),
            LAP_INVALID_ARGUMENT);
  EXPECT_NE(run->model.lastError().find("do not fit the cache"),
            std::string::npos)
      << run->model.lastError();
  token = int32_t(V);
  EXPECT_EQ(run->model.decode(run->param(), &token, 1, 1, 0, cache.data(),
                              run->workspace.data, logits.data()),
            LAP_INVALID_ARGUMENT);
  EXPECT_NE(run->model.lastError().find("outside the vocabulary"),
            std::string::npos)
      << run->model.lastError();
}

// Gradients against central differences of the double reference, with step
// h = 1e-5 max(1, |w|): truncation O(h^2) and rounding O(1e-16 / h) keep
// the difference within ~1e-9 of the exact derivative, so what remains is
// the kernels' float32 arithmetic. That error is relative to the size of the
// sums that make each gradient, so the bound is 1e-3 of the entry plus 1e-4
// of the largest gradient of the tensor (a wrong kernel is off by O(1) of
// the entry), plus 1e-7 for tensors whose gradient is all but zero. `b`'s
// image size selects the entry point (@train_step or @train_step_local).
void ModelGradientTest::expectGradients(ModelRun &run, Batch &b) {
  // Every gradient is written: a NaN left over would fail below.
  std::fill(run.grad(), run.grad() + run.elements(),
            std::numeric_limits<float>::quiet_NaN());
  run.trainStep(b);
  // Gradients cover the trainable parameters (under train.lora the
  // adapters), laid out as the parameters from the first of them.
  auto gradOf = [&](const ParameterInfo &info) {
    return run.grad() + (info.offset - run.model.trainableOffset());
  };
  bool written = true;
  for (const ParameterInfo &info : run.model.parameters()) {
    if (!info.trainable)
      continue;
    int64_t unwritten = 0;
    for (int64_t i = 0; i < info.elements; ++i)
      unwritten += !std::isfinite(gradOf(info)[i]);
    EXPECT_EQ(unwritten, 0) << "of " << info.elements << " gradient entries of "
                            << info.name << " are not written";
    written &= unwritten == 0;
  }
  ASSERT_TRUE(written);

  Params p = doubles(run);
  Reference ref(GetParam().arch, p);
  std::set<int32_t> used(b.tokens.begin(), b.tokens.end());
  std::mt19937 rng(13);
  for (const ParameterInfo &info : run.model.parameters()) {
    if (!info.trainable)
      continue;
    SCOPED_TRACE(info.name);
    // Every entry of small tensors and of the learned image positions (each
    // output of the resampling mixes several); 24 seeded entries of the
    // others (for the token table, rows of tokens in the batch, plus 4
    // anywhere).
    std::vector<int64_t> entries;
    if (info.elements <= 64 || info.name == "pos_embed") {
      for (int64_t i = 0; i < info.elements; ++i)
        entries.push_back(i);
    } else {
      std::uniform_int_distribution<int64_t> any(0, info.elements - 1);
      std::vector<int32_t> rows(used.begin(), used.end());
      std::uniform_int_distribution<size_t> row(0, rows.size() - 1);
      int64_t width = info.shape.back();
      for (int i = 0; i < 24; ++i) {
        bool table = info.name == "wte.weight" && i >= 4;
        entries.push_back(table ? rows[row(rng)] * width + any(rng) % width
                                : any(rng));
      }
    }
    Vec &w = p.at(info.name);
    std::vector<std::pair<double, double>> pairs; // (model, finite difference)
    double largest = 0;
    for (int64_t i : entries) {
      double saved = w[size_t(i)], h = 1e-5 * std::max(1.0, std::abs(saved));
      w[size_t(i)] = saved + h;
      double up = ref.loss(b);
      w[size_t(i)] = saved - h;
      double down = ref.loss(b);
      w[size_t(i)] = saved;
      double fd = (up - down) / (2 * h);
      pairs.push_back({gradOf(info)[i], fd});
      largest = std::max(largest, std::abs(fd));
    }
    for (size_t j = 0; j < entries.size(); ++j) {
      auto [g, fd] = pairs[j];
      EXPECT_NEAR(g, fd, 1e-3 * std::abs(fd) + 1e-4 * largest + 1e-7)
          << "entry " << entries[j] << " (largest " << largest << ")";
    }
  }
}

// Every model's train_step; DINO's also at the local crops' size, where
// pos_embed's gradient comes back through the resampling to their grid.
// Document packing: a document packed after another computes what it
// computes alone, at the start of its own sequence (RoPE: attention sees
// relative positions only), to float rounding: the logits of its tokens
// within 1e-5 of the largest. On the case that packs documents.
TEST(PackedDocuments, ComputeWhatTheyComputeAlone) {
  auto [packing, model] =
      firstCase([](const Case &c) { return c.arch.documents; });
  ASSERT_TRUE(model);
  ModelRun &run = *model;
  const Arch &a = packing.arch;
  ASSERT_EQ(a.positions, "rope");
  const int64_t T = packing.maxSeq, V = a.vocab, split = 5;
  Batch packed = textBatch(1, T, a.vocab, 21);
  for (int32_t &token : packed.tokens)
    token = token == a.bos() ? 0 : token;
  packed.tokens[split] = a.bos();
  Batch alone = textBatch(1, T - split, a.vocab, 22);
  std::copy(packed.tokens.begin() + split, packed.tokens.end(),
            alone.tokens.begin());
  std::vector<float> together, apart;
  run.forward(packed, &together);
  run.forward(alone, &apart);
  double largest = 0, worst = 0;
  for (int64_t i = 0; i < (T - split) * V; ++i) {
    largest = std::max(largest, double(std::abs(apart[size_t(i)])));
    worst = std::max(worst, double(std::abs(together[size_t(split * V + i)] -
                                            apart[size_t(i)])));
  }
  EXPECT_GT(largest, 0.0);
  EXPECT_LE(worst, 1e-5 * largest);
}

// Padded batches: what lies past a sequence's length, its tokens and its
// targets, changes nothing: not the loss, not the logits of the tokens
// before it, not a gradient. On the case with padding (the loss's mean
// over the counted targets is ForwardMatchesReference's).
TEST(PaddedBatches, PaddingNeitherAttendsNorCounts) {
  auto [padding, model] =
      firstCase([](const Case &c) { return c.arch.padded; });
  ASSERT_TRUE(model);
  ModelRun &run = *model;
  const int64_t B = padding.maxBatch, T = padding.maxSeq,
                V = padding.arch.vocab;
  Batch b = textBatch(B, T, V, 31);
  for (int64_t r = 0; r < B; ++r)
    b.lengths.push_back(int32_t(T - 4 * r - 1));
  Batch other = b, noise = textBatch(B, T, V, 32);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = b.lengths[size_t(r)]; t < T; ++t) {
      other.tokens[size_t(r * T + t)] = noise.tokens[size_t(r * T + t)];
      other.targets[size_t(r * T + t)] = noise.targets[size_t(r * T + t)];
    }
  std::vector<float> logits, otherLogits;
  EXPECT_EQ(run.forward(b, &logits), run.forward(other, &otherLogits));
  for (int64_t r = 0; r < B; ++r)
    for (int64_t i = 0; i < b.lengths[size_t(r)] * V; ++i)
      ASSERT_EQ(logits[size_t(r * T * V + i)],
                otherLogits[size_t(r * T * V + i)])
          << "sequence " << r << ", logit " << i;
  const float loss = run.trainStep(b);
  std::vector<float> grads(run.grad(), run.grad() + run.elements());
  EXPECT_EQ(run.trainStep(other), loss);
  for (int64_t i = 0; i < run.elements(); ++i)
    ASSERT_EQ(run.grad()[i], grads[size_t(i)]) << "gradient " << i;
}

TEST_P(ModelGradientTest, TrainStepMatchesFiniteDifferences) {
  const Case &c = GetParam();
  auto run = load();
  for (bool local : imageSizes()) {
    SCOPED_TRACE(local ? "train_step_local" : "train_step");
    Batch b = local ? localBatch(*run, c.batch, 5) : batch(c.batch, c.seq, 5);
    expectGradients(*run, b);
    if (HasFatalFailure())
      return;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGradientTest,
                         ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.arch.name;
                         });

} // namespace
