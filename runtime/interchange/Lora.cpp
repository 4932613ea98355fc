//===- Lora.cpp - LoRA adapters folded into their layers --------*- C++ -*-===//

#include "runtime/interchange/Lora.h"

#include "runtime/data/Safetensors.h"

#include <algorithm>
#include <map>
#include <stdexcept>

using namespace lap::interchange;

std::vector<NamedTensor>
lap::interchange::mergeLora(const std::vector<NamedTensor> &tensors,
                            double scale) {
  std::map<std::string, const NamedTensor *> byName;
  for (const NamedTensor &t : tensors)
    byName[t.name] = &t;
  auto find = [&](const std::string &name, const std::string &from) {
    auto it = byName.find(name);
    if (it == byName.end())
      throw std::runtime_error("the adapter '" + from + "' has no '" + name +
                               "'");
    return it->second;
  };
  // Each adapted layer's weight, by name: its (A, B).
  std::map<std::string, std::pair<const NamedTensor *, const NamedTensor *>>
      adapted;
  for (const NamedTensor &t : tensors) {
    std::string layer = dsl::loraLayerOf(t.name);
    if (layer.empty())
      continue;
    if (t.name != layer + dsl::kLoraDown) { // B: its A must be there
      find(layer + dsl::kLoraDown, t.name);
      continue;
    }
    const NamedTensor *up = find(layer + dsl::kLoraUp, t.name);
    const NamedTensor *weight = find(layer + ".weight", t.name);
    bool chain = t.shape.size() == 2 && up->shape.size() == 2 &&
                 weight->shape.size() == 2 && up->shape[1] == t.shape[0] &&
                 weight->shape[0] == up->shape[0] &&
                 weight->shape[1] == t.shape[1];
    if (!chain)
      throw std::runtime_error("the adapters of '" + layer + ".weight' " +
                               lap::shapeText(weight->shape) + " are " +
                               lap::shapeText(t.shape) + " and " +
                               lap::shapeText(up->shape) +
                               ", not [rank, in] and [out, rank]");
    adapted[layer + ".weight"] = {&t, up};
  }

  std::vector<NamedTensor> merged;
  for (const NamedTensor &t : tensors) {
    if (dsl::isLoraAdapter(t.name))
      continue;
    merged.push_back(t);
    auto it = adapted.find(t.name);
    if (it == adapted.end())
      continue;
    const NamedTensor &a = *it->second.first, &b = *it->second.second;
    const int64_t out = t.shape[0], in = t.shape[1], rank = a.shape[0];
    std::vector<float> &w = merged.back().data;
    std::vector<double> row(static_cast<size_t>(in));
    for (int64_t o = 0; o < out; ++o) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t r = 0; r < rank; ++r) {
        const double bor = b.data[size_t(o * rank + r)];
        const float *ar = a.data.data() + r * in;
        for (int64_t i = 0; i < in; ++i)
          row[size_t(i)] += bor * double(ar[i]);
      }
      float *wo = w.data() + o * in;
      for (int64_t i = 0; i < in; ++i)
        wo[i] = float(double(wo[i]) + scale * row[size_t(i)]);
    }
  }
  return merged;
}

std::vector<NamedTensor>
lap::interchange::loraAdapters(const std::vector<NamedTensor> &tensors) {
  std::vector<NamedTensor> adapters;
  for (const NamedTensor &t : tensors)
    if (dsl::isLoraAdapter(t.name))
      adapters.push_back(t);
  return adapters;
}
