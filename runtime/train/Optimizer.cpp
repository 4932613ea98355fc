//===- Optimizer.cpp - AdamW, Muon, gradient clipping -----------*- C++ -*-===//
//
// Groups, the optimizers' per-step scalars and state, and clipping; the
// arithmetic itself is the device's (runtime/device: the host's and a GPU's).
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Optimizer.h"

#include "runtime/train/Schedule.h"

#include <algorithm>
#include <cmath>

namespace lap::train {

namespace {

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

/// The spans of the tensors `indices` of `table`, their state at
/// stateOffset (when given).
std::vector<device::Span> spansOf(const std::vector<TensorInfo> &table,
                                  const std::vector<size_t> &indices,
                                  const std::vector<int64_t> *stateOffset) {
  std::vector<device::Span> spans;
  for (size_t t : indices)
    for (int64_t b = 0; b < table[t].elements; b += device::kSpan)
      spans.push_back({table[t].offset + b,
                       std::min(table[t].elements - b, device::kSpan),
                       stateOffset ? (*stateOffset)[t] + b : 0});
  return spans;
}

/// Where each tensor's spans begin in spansOf(tensors), and their end.
std::vector<size_t> firstSpans(const std::vector<TensorInfo> &tensors) {
  std::vector<size_t> first;
  size_t k = 0;
  for (const TensorInfo &t : tensors) {
    first.push_back(k);
    k += size_t((t.elements + device::kSpan - 1) / device::kSpan);
  }
  first.push_back(k);
  return first;
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
// Optimizer
//===----------------------------------------------------------------------===//

Optimizer::Optimizer(std::vector<TensorInfo> tensors, OptimizerConfig config,
                     device::Device &device)
    : table(std::move(tensors)), cfg(std::move(config)), dev(device) {
  groupList = assignGroups(table, cfg);
  rules.resize(table.size());
  stateOffset.resize(table.size());
  int64_t adamwElements = 0, muonElements = 0, largest = 0;
  for (const ParamGroup &g : groupList)
    for (size_t t : g.tensors) {
      rules[t] = g.rule;
      int64_t &used =
          g.rule == UpdateRule::AdamW ? adamwElements : muonElements;
      stateOffset[t] = used;
      used += table[t].elements;
      if (g.rule == UpdateRule::Muon)
        largest = std::max(largest, table[t].elements);
    }
  for (const ParamGroup &g : groupList)
    adamwSpans.push_back(g.rule == UpdateRule::AdamW
                             ? spansOf(table, g.tensors, &stateOffset)
                             : std::vector<device::Span>());
  expAvg = device::Array(dev, adamwElements);
  expAvgSq = device::Array(dev, adamwElements);
  momentumBuffer = device::Array(dev, muonElements);
  work = device::Array(dev, largest);
}

double Optimizer::currentMomentum() const {
  return muonMomentum(steps, cfg.momentumStart, cfg.momentum,
                      cfg.momentumWarmupSteps);
}

void Optimizer::step(float *params, const float *grads, double lrMultiplier,
                     double weightDecayMultiplier) {
  double momentum = currentMomentum(); // nanochat: of the step's index
  ++steps;                             // PyTorch: step += 1 before the update
  for (size_t i = 0; i < groupList.size(); ++i) {
    ParamGroup g = groupList[i];
    if (!frozenTensors.empty())
      g.tensors.erase(
          std::remove_if(g.tensors.begin(), g.tensors.end(),
                         [&](size_t t) { return frozenTensors[t]; }),
          g.tensors.end());
    double lr = g.lr * lrMultiplier, wd = g.weightDecay * weightDecayMultiplier;
    if (g.rule == UpdateRule::Muon)
      muonStep(g, params, grads, lr, wd, momentum);
    else if (g.tensors.size() != groupList[i].tensors.size()) // some frozen
      adamwStep(spansOf(table, g.tensors, &stateOffset), params, grads, lr, wd);
    else
      adamwStep(adamwSpans[i], params, grads, lr, wd);
  }
}

void Optimizer::adamwStep(const std::vector<device::Span> &spans, float *params,
                          const float *grads, double lr, double wd) {
  if (spans.empty())
    return;
  // torch.optim.AdamW (_single_tensor_adamw), scalars in double as Python's.
  double bc1 = 1 - std::pow(cfg.beta1, double(steps));
  double bc2 = 1 - std::pow(cfg.beta2, double(steps));
  device::AdamWScalars s{float(1 - lr * wd),   float(1 - cfg.beta1),
                         float(cfg.beta2),     float(1 - cfg.beta2),
                         float(cfg.eps),       float(lr / bc1),
                         float(std::sqrt(bc2))};
  dev.adamw(params, grads, expAvg.data(), expAvgSq.data(), spans, s);
}

void Optimizer::muonStep(const ParamGroup &group, float *params,
                         const float *grads, double lr, double wd,
                         double momentumValue) {
  float decay = float(1 - lr * wd);
  for (size_t t : group.tensors) {
    const TensorInfo &info = table[t];
    int64_t rows = info.shape[0], cols = info.shape[1];
    // nanochat: buf.lerp_(g, 1 - momentum); g.lerp_(buf, momentum) (Nesterov)
    dev.muonMomentum(momentumBuffer.data() + stateOffset[t],
                     grads + info.offset, work.data(), info.elements,
                     float(momentumValue), float(1 - momentumValue),
                     cfg.nesterov);
    dev.orthogonalize(work.data(), rows, cols, cfg.nsSteps,
                      cfg.matmulPrecision);
    // Tall matrices' orthogonal rows are short; sqrt(rows/cols) restores
    // an RMS update comparable to wide ones (Keller Jordan's scaling).
    float scale =
        float(lr * std::sqrt(std::max(1.0, double(rows) / double(cols))));
    dev.applyUpdate(params + info.offset, work.data(), info.elements, decay,
                    scale);
  }
}

std::vector<StateTensor> Optimizer::state() const {
  std::vector<StateTensor> out;
  for (size_t t = 0; t < table.size(); ++t) {
    int64_t n = table[t].elements;
    if (rules[t] == UpdateRule::Muon) {
      out.push_back({table[t].name + ".momentum_buffer",
                     momentumBuffer.data() + stateOffset[t], n});
    } else {
      out.push_back(
          {table[t].name + ".exp_avg", expAvg.data() + stateOffset[t], n});
      out.push_back(
          {table[t].name + ".exp_avg_sq", expAvgSq.data() + stateOffset[t], n});
    }
  }
  return out;
}

int64_t Optimizer::stateBytes() const {
  return (expAvg.size() + expAvgSq.size() + momentumBuffer.size()) * 4;
}

//===----------------------------------------------------------------------===//
// Clipping and finiteness
//===----------------------------------------------------------------------===//

std::vector<device::Span> spansOf(const std::vector<TensorInfo> &tensors) {
  std::vector<size_t> all(tensors.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  return spansOf(tensors, all, nullptr);
}

std::vector<double> squaredNormPartials(const float *grads,
                                        const std::vector<TensorInfo> &tensors,
                                        device::Device &device) {
  std::vector<device::Span> spans = spansOf(tensors);
  std::vector<double> partial(spans.size());
  device.squaredNorms(grads, spans, partial.data());
  return partial;
}

double normOfPartials(const std::vector<double> &partials) {
  double total = 0;
  for (double s : partials)
    total += s;
  return std::sqrt(total);
}

void clipToNorm(float *grads, const std::vector<TensorInfo> &tensors,
                double norm, double maxNorm, device::Device &device) {
  if (maxNorm <= 0 || !std::isfinite(norm) || norm <= maxNorm)
    return;
  device.scale(grads, spansOf(tensors), float(maxNorm / (norm + 1e-6)));
}

void clipEachTensor(float *grads, const std::vector<TensorInfo> &tensors,
                    double maxNorm, device::Device &device) {
  if (maxNorm <= 0)
    return;
  std::vector<double> partials = squaredNormPartials(grads, tensors, device);
  std::vector<size_t> first = firstSpans(tensors);
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::vector<double> mine(partials.begin() + long(first[t]),
                             partials.begin() + long(first[t + 1]));
    clipToNorm(grads, {tensors[t]}, normOfPartials(mine), maxNorm, device);
  }
}

double clipGradients(float *grads, const std::vector<TensorInfo> &tensors,
                     double maxNorm, device::Device &device) {
  double norm = normOfPartials(squaredNormPartials(grads, tensors, device));
  clipToNorm(grads, tensors, norm, maxNorm, device);
  return norm;
}

std::optional<size_t>
firstNonFiniteTensor(const std::vector<double> &partials,
                     const std::vector<TensorInfo> &tensors) {
  std::vector<size_t> first = firstSpans(tensors);
  for (size_t t = 0; t < tensors.size(); ++t)
    for (size_t k = first[t]; k < first[t + 1]; ++k)
      if (!std::isfinite(partials[k]))
        return t;
  return std::nullopt;
}

std::optional<std::string>
firstNonFinite(const float *data, const std::vector<TensorInfo> &tensors,
               device::Device &device) {
  if (std::optional<size_t> t = firstNonFiniteTensor(
          squaredNormPartials(data, tensors, device), tensors))
    return tensors[*t].name;
  return std::nullopt;
}

} // namespace lap::train
