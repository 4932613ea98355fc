//===- Info.cpp - lapc-run info ----------------------------------*- C++ -*-===//

#include "runtime/model/LoadedModel.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/Units.h"
#include "runtime/train/SpecConfig.h"

#include <fmt/format.h>

namespace {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? " x " : "") + (shape[i] < 0 ? std::string(i == 0 ? "B" : "T")
                                          : std::to_string(shape[i]));
  return s.empty() ? "scalar" : s;
}

} // namespace

int lap::cli::info(const std::string &path) {
  LoadedModel model(path, LoadedModel::Devices::Any);
  const auto &m = model.manifest();
  const auto &target = m["target"];
  bool cuda = model.device() == "cuda";
  fmt::print("model      {} ({}), ABI {}, compiled for {} ({})\n",
             m["name"].get<std::string>(), m["family"].get<std::string>(),
             m["abi_version"].get<int>(), model.device(),
             cuda ? target["arch"].get<std::string>() + ", host code for " +
                        target["cpu"].get<std::string>()
                  : target["cpu"].get<std::string>());
  std::string features;
  for (const auto &f : target["features"])
    features += (features.empty() ? "" : " ") + f.get<std::string>();
  fmt::print("needs      {}\n",
             features.empty() ? "no CPU features lap can check" : features);
  if (cuda) {
    std::string gpus = model.kernelIsas();
    fmt::print("kernels    {} (GPUs here that run them: {})\n",
               model.kernelIsa(), gpus.empty() ? "none" : gpus);
  } else {
    fmt::print("kernels    {} (this CPU runs: {}; LAP_CPU_ISA picks one)\n",
               model.kernelIsa(), model.kernelIsas());
  }
  fmt::print("limits     batch <= {}, sequence <= {}\n", model.maxBatch(),
             model.maxSeq());
  dsl::Spec spec = train::specOf(model);
  bool bf16Model = spec.train.precision == dsl::Precision::BF16;
  fmt::print("precision  {}\n",
             bf16Model ? "bf16 activations and working copies of the "
                         "parameters; fp32 master weights, gradients, "
                         "losses and accumulation (train.precision)"
                       : "fp32");
  fmt::print("products   {}\n", train::matmulPrecision(spec) == LAP_MATMUL_BF16
                                    ? "bf16 operands, fp32 accumulation"
                                    : "fp32");
  if (const auto &images = m["images"]; !images.is_null()) {
    std::string sizes;
    for (size_t i = 0; i < images["sizes"].size(); ++i)
      sizes += fmt::format("{}{} x {} ({} tokens)", i ? ", " : "",
                           images["sizes"][i].get<int64_t>(),
                           images["sizes"][i].get<int64_t>(),
                           images["tokens"][i].get<int64_t>());
    fmt::print("images     {}\n", sizes);
  }
  if (const auto &decode = m["decode"]; !decode.is_null()) {
    std::string slots;
    for (const auto &n : decode["slots"])
      slots += (slots.empty() ? "" : " ") + std::to_string(n.get<int64_t>());
    fmt::print("decoding   cache of {} floats per sequence (positions per "
               "layer: {})\n",
               decode["cache_floats_per_sequence"].get<int64_t>(), slots);
  }
  for (auto &t : m["batch"])
    fmt::print("input      {} {} [{}]\n", t["name"].get<std::string>(),
               t["dtype"].get<std::string>(),
               shapeString(t["shape"].get<std::vector<int64_t>>()));
  for (auto &t : m["outputs"])
    fmt::print("output     {} [{}]\n", t["name"].get<std::string>(),
               shapeString(t["shape"].get<std::vector<int64_t>>()));

  int64_t count = 0, trainable = 0;
  for (const ParameterInfo &p : model.parameters()) {
    count += p.elements;
    trainable += p.trainable ? p.elements : 0;
  }
  fmt::print("\nparameters {} in {} tensors", count, model.parameters().size());
  if (const dsl::LoraSpec &lora = spec.train.lora; lora.enabled()) {
    std::string targets;
    for (const std::string &t : lora.targets)
      targets += (targets.empty() ? "" : ", ") + t;
    fmt::print("; trainable {}: LoRA adapters of rank {}, alpha {} on {} "
               "(the rest frozen)",
               trainable, lora.rank, lora.alpha, targets);
  }
  fmt::print("\n  {:<40} {:<16} {:>12} {:>12}  {}\n", "name", "shape",
             "elements", "offset", "init");
  for (const ParameterInfo &p : model.parameters())
    fmt::print("  {:<40} {:<16} {:>12} {:>12}  {} {}{}\n", p.name,
               shapeString(p.shape), p.elements, p.offset, p.init, p.initValue,
               p.trainable ? "" : " (frozen)");

  // The optimizer keeps AdamW's two moments, or Muon's momentum, per
  // trainable parameter.
  int64_t stateFloats = 0;
  std::vector<train::TensorInfo> tensors = train::trainableTensorsOf(model);
  for (const train::ParamGroup &g :
       train::assignGroups(tensors, train::optimizerConfig(spec)))
    for (size_t t : g.tensors)
      stateFloats +=
          tensors[t].elements * (g.rule == train::UpdateRule::AdamW ? 2 : 1);
  double params = double(model.parameterElements()) * 4,
         grads = double(model.gradientElements()) * 4,
         state = double(stateFloats) * 4;
  const auto &mem = m["memory"];
  fmt::print("\nmemory     parameters {}, gradients {}, optimizer state {}\n",
             mebibytes(params), mebibytes(grads), mebibytes(state));
  fmt::print("           workspace {} (forward {}, train_step {})\n",
             mebibytes(model.workspaceBytes()),
             mebibytes(mem["forward_workspace_bytes"].get<double>()),
             mebibytes(mem["train_step_workspace_bytes"].get<double>()));
  fmt::print("           a training step needs {} plus the batch\n",
             mebibytes(params + grads + state + model.workspaceBytes()));
  return 0;
}
