//===- Optimizer.cpp - AdamW, Muon, gradient clipping -----------*- C++ -*-===//
//
// Parallel loops run on the shared libgomp pool (lap::cpu::parallelFor).
// Thread-count independence: elementwise updates and reductions work on
// fixed chunks of kChunk floats (partial sums added in chunk order), and
// Muon's GEMMs on fixed blocks of kRows rows, each one dnnl_sgemm call made
// from inside the parallel region, where oneDNN runs it sequentially; a
// thread-count-dependent split of K inside oneDNN would change the rounding.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Optimizer.h"

#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/train/Schedule.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lap::train {

namespace {

using cpu::parallelFor;

constexpr int64_t kChunk = 1 << 15; ///< floats per elementwise work item
constexpr int64_t kRows = 32;       ///< rows per GEMM block in Muon

bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> splitDots(const std::string &s) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t dot; (dot = s.find('.', begin)) != std::string::npos;
       begin = dot + 1)
    parts.push_back(s.substr(begin, dot - begin));
  parts.push_back(s.substr(begin));
  return parts;
}

/// A slice [begin, end) of tensor `tensor`: the unit of elementwise work.
struct Chunk {
  size_t tensor;
  int64_t begin, end;
};

template <typename Indices>
std::vector<Chunk> chunksOf(const std::vector<TensorInfo> &table,
                            const Indices &indices) {
  std::vector<Chunk> chunks;
  for (size_t t : indices)
    for (int64_t b = 0; b < table[t].elements; b += kChunk)
      chunks.push_back({t, b, std::min(table[t].elements, b + kChunk)});
  return chunks;
}

std::vector<size_t> allIndices(size_t n) {
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i)
    all[i] = i;
  return all;
}

/// Runs f(i) for every i in [0, n), always inside a parallel region when
/// the pool has more than one thread (grain 0), so that oneDNN calls in f run
/// sequentially whatever the pool's size.
template <typename F> void forEach(int64_t n, F &&f) {
  parallelFor(n, 0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      f(i);
  });
}

/// Sum of squares of x[0, n) in double, in a fixed order.
double sumSquares(const float *x, int64_t n) {
  int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks);
  forEach(chunks, [&](int64_t c) {
    double s = 0;
    for (int64_t i = c * kChunk, e = std::min(n, i + kChunk); i < e; ++i)
      s += double(x[i]) * x[i];
    partial[c] = s;
  });
  double total = 0;
  for (double s : partial)
    total += s;
  return total;
}

/// torch.lerp's formula: start + w (end - start), from the end for w >= 0.5.
inline float lerp(float start, float end, float w) {
  return w < 0.5f ? start + w * (end - start)
                  : end - (end - start) * (1.0f - w);
}

void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc) {
  dnnl_status_t status =
      dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    std::fprintf(stderr, "lap: dnnl_sgemm failed (status %d)\n", int(status));
    std::abort();
  }
}

/// Calls f(begin, end) on the fixed kRows-row blocks of [0, rows).
template <typename F> void forRowBlocks(int64_t rows, F &&f) {
  forEach((rows + kRows - 1) / kRows, [&](int64_t blk) {
    f(blk * kRows, std::min(rows, (blk + 1) * kRows));
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

bool matchesParameterGroup(const std::string &name, const std::string &group) {
  std::vector<std::string> parts = splitDots(name);
  const std::string &last = parts.back();
  if (group == "bias")
    return last == "bias";
  if (group == "norm")
    return last == "weight_g" ||
           std::any_of(parts.begin(), parts.end(), [](const std::string &p) {
             return p.find("norm") != std::string::npos;
           });
  if (group == "layer_scale")
    return last == "ls1" || last == "ls2";
  if (group == "embedding")
    return startsWith(name, "wte.") || startsWith(name, "patch_embed.");
  if (group == "positions")
    return startsWith(name, "wpe.") || parts[0] == "pos_embed";
  if (group == "tokens")
    return parts[0] == "cls_token" || parts[0] == "registers" ||
           name == "pool.query";
  if (group == "head")
    return startsWith(name, "lm_head.") || startsWith(name, "head.") ||
           startsWith(name, "dino_head.");
  return name.find(group) != std::string::npos;
}

std::vector<ParamGroup> assignGroups(const std::vector<TensorInfo> &tensors,
                                     const OptimizerConfig &c) {
  bool muon = c.kind == OptimizerKind::Muon;
  double scale = muon && c.scaleLrByWidth && c.width > 0
                     ? std::pow(double(c.width) / 768.0, -0.5)
                     : 1.0;
  // Fixed group order, whatever the table's order.
  std::vector<ParamGroup> groups;
  auto add = [&](const char *name, UpdateRule rule, double lr) {
    groups.push_back({name, rule, lr, c.weightDecay, {}});
  };
  if (muon) {
    add("matrix", UpdateRule::Muon, c.lr);
    add("embedding", UpdateRule::AdamW, c.embeddingLr * scale);
    add("unembedding", UpdateRule::AdamW, c.unembeddingLr * scale);
    add("scalar", UpdateRule::AdamW, c.scalarLr * scale);
  } else {
    add("decay", UpdateRule::AdamW, c.lr);
  }
  size_t base = groups.size();
  for (size_t i = 0; i < base; ++i) {
    ParamGroup exempt = groups[i];
    exempt.name = muon ? exempt.name + ".no_decay" : "no_decay";
    exempt.weightDecay = 0;
    groups.push_back(exempt);
  }

  // Learned head coefficients: their own lr, no weight decay.
  const size_t coefficients = groups.size();
  groups.push_back(
      {"head_coefficients", UpdateRule::AdamW, c.headCoefficientLr, 0, {}});

  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorInfo &info = tensors[t];
    if (endsWith(info.name, ".attn.coefficients")) {
      groups[coefficients].tensors.push_back(t);
      continue;
    }
    size_t g = 0;
    if (muon) {
      if (startsWith(info.name, "blocks.") && endsWith(info.name, ".weight") &&
          info.shape.size() == 2)
        g = 0;
      else if (info.name == "wte.weight")
        g = 1;
      else if (info.name == "lm_head.weight")
        g = 2;
      else
        g = 3;
    }
    bool exempt = std::any_of(c.noDecay.begin(), c.noDecay.end(),
                              [&](const std::string &d) {
                                return matchesParameterGroup(info.name, d);
                              });
    groups[exempt ? g + base : g].tensors.push_back(t);
  }
  groups.erase(
      std::remove_if(groups.begin(), groups.end(),
                     [](const ParamGroup &g) { return g.tensors.empty(); }),
      groups.end());
  return groups;
}

//===----------------------------------------------------------------------===//
// Newton-Schulz
//===----------------------------------------------------------------------===//

void orthogonalize(const float *g, float *out, int64_t rows, int64_t cols,
                   int64_t steps) {
  const float a = 3.4445f, b = -4.7750f, c = 2.0315f;
  bool tall = rows > cols;
  // X is n x m with n <= m, so A = X Xᵀ is the smaller Gram matrix.
  int64_t n = tall ? cols : rows, m = tall ? rows : cols;
  std::vector<float> x(n * m), y(n * m), gram(n * n), poly(n * n);
  float norm = float(std::sqrt(sumSquares(g, rows * cols))) + 1e-7f;
  forRowBlocks(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < m; ++j)
        x[i * m + j] = (tall ? g[j * cols + i] : g[i * m + j]) / norm;
  });
  for (int64_t s = 0; s < steps; ++s) {
    // gram = X Xᵀ
    forRowBlocks(n, [&](int64_t i0, int64_t i1) {
      sgemm('N', 'T', i1 - i0, n, m, 1.0f, &x[i0 * m], m, x.data(), m, 0.0f,
            &gram[i0 * n], n);
    });
    // poly = b A + c A A
    forRowBlocks(n, [&](int64_t i0, int64_t i1) {
      std::memcpy(&poly[i0 * n], &gram[i0 * n], (i1 - i0) * n * sizeof(float));
      sgemm('N', 'N', i1 - i0, n, n, c, &gram[i0 * n], n, gram.data(), n, b,
            &poly[i0 * n], n);
    });
    // Y = a X + poly X
    forRowBlocks(n, [&](int64_t i0, int64_t i1) {
      std::memcpy(&y[i0 * m], &x[i0 * m], (i1 - i0) * m * sizeof(float));
      sgemm('N', 'N', i1 - i0, m, n, 1.0f, &poly[i0 * n], n, x.data(), m, a,
            &y[i0 * m], m);
    });
    x.swap(y);
  }
  if (!tall) {
    std::memcpy(out, x.data(), n * m * sizeof(float));
    return;
  }
  forRowBlocks(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < cols; ++j)
        out[r * cols + j] = x[j * m + r];
  });
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

Optimizer::Optimizer(std::vector<TensorInfo> tensors, OptimizerConfig config)
    : table(std::move(tensors)), cfg(std::move(config)) {
  groupList = assignGroups(table, cfg);
  expAvg.resize(table.size());
  expAvgSq.resize(table.size());
  momentumBuffer.resize(table.size());
  rules.resize(table.size());
  int64_t largest = 0;
  for (const ParamGroup &g : groupList)
    for (size_t t : g.tensors) {
      size_t n = size_t(table[t].elements);
      rules[t] = g.rule;
      if (g.rule == UpdateRule::AdamW) {
        expAvg[t].assign(n, 0.0f);
        expAvgSq[t].assign(n, 0.0f);
      } else {
        momentumBuffer[t].assign(n, 0.0f);
        largest = std::max(largest, table[t].elements);
      }
    }
  work.resize(size_t(largest));
}

double Optimizer::currentMomentum() const {
  return muonMomentum(steps, cfg.momentumStart, cfg.momentum,
                      cfg.momentumWarmupSteps);
}

void Optimizer::step(float *params, const float *grads, double lrMultiplier,
                     double weightDecayMultiplier) {
  double momentum = currentMomentum(); // nanochat: of the step's index
  ++steps;                             // PyTorch: step += 1 before the update
  for (ParamGroup g : groupList) {
    if (!frozenTensors.empty())
      g.tensors.erase(
          std::remove_if(g.tensors.begin(), g.tensors.end(),
                         [&](size_t t) { return frozenTensors[t]; }),
          g.tensors.end());
    double lr = g.lr * lrMultiplier, wd = g.weightDecay * weightDecayMultiplier;
    if (g.rule == UpdateRule::AdamW)
      adamwStep(g, params, grads, lr, wd);
    else
      muonStep(g, params, grads, lr, wd, momentum);
  }
}

void Optimizer::adamwStep(const ParamGroup &group, float *params,
                          const float *grads, double lr, double wd) {
  // torch.optim.AdamW (_single_tensor_adamw), scalars in double as Python's.
  float decay = float(1 - lr * wd);
  float w1 = float(1 - cfg.beta1), beta2 = float(cfg.beta2),
        w2 = float(1 - cfg.beta2), eps = float(cfg.eps);
  double bc1 = 1 - std::pow(cfg.beta1, double(steps));
  double bc2 = 1 - std::pow(cfg.beta2, double(steps));
  float stepSize = float(lr / bc1), bc2Sqrt = float(std::sqrt(bc2));
  std::vector<Chunk> chunks = chunksOf(table, group.tensors);
  forEach(int64_t(chunks.size()), [&](int64_t k) {
    const Chunk &ch = chunks[k];
    float *p = params + table[ch.tensor].offset;
    const float *gr = grads + table[ch.tensor].offset;
    float *m = expAvg[ch.tensor].data(), *v = expAvgSq[ch.tensor].data();
    for (int64_t i = ch.begin; i < ch.end; ++i) {
      float gi = gr[i];
      p[i] *= decay;
      m[i] = lerp(m[i], gi, w1);
      v[i] = v[i] * beta2 + w2 * (gi * gi);
      float denom = std::sqrt(v[i]) / bc2Sqrt + eps;
      p[i] += -stepSize * (m[i] / denom);
    }
  });
}

void Optimizer::muonStep(const ParamGroup &group, float *params,
                         const float *grads, double lr, double wd,
                         double momentumValue) {
  float mom = float(momentumValue), w = float(1 - momentumValue);
  float decay = float(1 - lr * wd);
  for (size_t t : group.tensors) {
    const TensorInfo &info = table[t];
    int64_t rows = info.shape[0], cols = info.shape[1], n = info.elements;
    float *p = params + info.offset;
    const float *gr = grads + info.offset;
    float *buf = momentumBuffer[t].data(), *u = work.data();
    // nanochat: buf.lerp_(g, 1 - momentum); g.lerp_(buf, momentum) (Nesterov)
    forEach((n + kChunk - 1) / kChunk, [&](int64_t k) {
      for (int64_t i = k * kChunk, e = std::min(n, i + kChunk); i < e; ++i) {
        buf[i] = lerp(buf[i], gr[i], w);
        u[i] = cfg.nesterov ? lerp(gr[i], buf[i], mom) : buf[i];
      }
    });
    orthogonalize(u, u, rows, cols, cfg.nsSteps);
    // Tall matrices' orthogonal rows are short; sqrt(rows/cols) restores
    // an RMS update comparable to wide ones (Keller Jordan's scaling).
    float scale =
        float(lr * std::sqrt(std::max(1.0, double(rows) / double(cols))));
    forEach((n + kChunk - 1) / kChunk, [&](int64_t k) {
      for (int64_t i = k * kChunk, e = std::min(n, i + kChunk); i < e; ++i)
        p[i] = p[i] * decay - scale * u[i];
    });
  }
}

std::vector<std::pair<std::string, std::vector<float> *>> Optimizer::state() {
  std::vector<std::pair<std::string, std::vector<float> *>> out;
  for (size_t t = 0; t < table.size(); ++t) {
    if (rules[t] == UpdateRule::Muon) {
      out.push_back({table[t].name + ".momentum_buffer", &momentumBuffer[t]});
    } else {
      out.push_back({table[t].name + ".exp_avg", &expAvg[t]});
      out.push_back({table[t].name + ".exp_avg_sq", &expAvgSq[t]});
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Clipping and finiteness
//===----------------------------------------------------------------------===//

std::vector<double>
squaredNormPartials(const float *grads,
                    const std::vector<TensorInfo> &tensors) {
  std::vector<Chunk> chunks = chunksOf(tensors, allIndices(tensors.size()));
  std::vector<double> partial(chunks.size());
  forEach(int64_t(chunks.size()), [&](int64_t k) {
    const float *g = grads + tensors[chunks[k].tensor].offset;
    double s = 0;
    for (int64_t i = chunks[k].begin; i < chunks[k].end; ++i)
      s += double(g[i]) * g[i];
    partial[k] = s;
  });
  return partial;
}

double normOfPartials(const std::vector<double> &partials) {
  double total = 0;
  for (double s : partials)
    total += s;
  return std::sqrt(total);
}

void clipToNorm(float *grads, const std::vector<TensorInfo> &tensors,
                double norm, double maxNorm) {
  if (maxNorm <= 0 || !std::isfinite(norm) || norm <= maxNorm)
    return;
  float coef = float(maxNorm / (norm + 1e-6));
  std::vector<Chunk> chunks = chunksOf(tensors, allIndices(tensors.size()));
  forEach(int64_t(chunks.size()), [&](int64_t k) {
    float *g = grads + tensors[chunks[k].tensor].offset;
    for (int64_t i = chunks[k].begin; i < chunks[k].end; ++i)
      g[i] *= coef;
  });
}

void clipEachTensor(float *grads, const std::vector<TensorInfo> &tensors,
                    double maxNorm) {
  if (maxNorm <= 0)
    return;
  for (const TensorInfo &t : tensors) {
    std::vector<TensorInfo> one{t};
    clipGradients(grads, one, maxNorm);
  }
}

double clipGradients(float *grads, const std::vector<TensorInfo> &tensors,
                     double maxNorm) {
  double norm = normOfPartials(squaredNormPartials(grads, tensors));
  clipToNorm(grads, tensors, norm, maxNorm);
  return norm;
}

std::optional<size_t>
firstNonFiniteTensor(const float *data,
                     const std::vector<TensorInfo> &tensors) {
  std::vector<Chunk> chunks = chunksOf(tensors, allIndices(tensors.size()));
  std::vector<char> bad(chunks.size(), 0);
  forEach(int64_t(chunks.size()), [&](int64_t k) {
    const float *x = data + tensors[chunks[k].tensor].offset;
    for (int64_t i = chunks[k].begin; i < chunks[k].end; ++i)
      if (!std::isfinite(x[i])) {
        bad[k] = 1;
        return;
      }
  });
  for (size_t k = 0; k < chunks.size(); ++k)
    if (bad[k])
      return chunks[k].tensor;
  return std::nullopt;
}

std::optional<std::string>
firstNonFinite(const float *data, const std::vector<TensorInfo> &tensors) {
  if (std::optional<size_t> t = firstNonFiniteTensor(data, tensors))
    return tensors[*t].name;
  return std::nullopt;
}

} // namespace lap::train
