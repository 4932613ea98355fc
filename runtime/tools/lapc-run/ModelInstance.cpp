//===- ModelInstance.cpp - A library on the device `--device` names ---------===//

#include "runtime/tools/lapc-run/ModelInstance.h"

#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <optional>
#include <regex>
#include <stdexcept>

std::unique_ptr<lap::device::Device>
lap::cli::openDevice(const LoadedModel &model, const std::string &option,
                     HostRank where) {
  std::smatch parts;
  static const std::regex form("(cpu|cuda)(?::([0-9]{1,4}))?");
  if (!option.empty() && (!std::regex_match(option, parts, form) ||
                          (parts[1] == "cpu" && parts[2].matched)))
    throw std::runtime_error("--device " + option +
                             ": expected cpu, cuda or cuda:N (N a GPU's "
                             "index, from 0)");
  const std::string library = model.device();
  if (!option.empty() && parts[1] != library)
    throw std::runtime_error(fmt::format(
        "{}: compiled for {}, so it runs there, not on {} (lapc --target={} "
        "compiles the spec for that device)",
        model.path(), library, option, std::string(parts[1])));
  if (library == "cpu")
    return nullptr;
  // "cuda:N" (parts are only read when there is an option).
  std::optional<int> numbered;
  if (!option.empty() && parts[2].matched)
    numbered = std::stoi(parts[2]);
  if (numbered && where.ranks > 1)
    throw std::runtime_error(fmt::format(
        "--device {}: the {} ranks on this host take a GPU each (rank r GPU "
        "r); give --device cuda",
        option, where.ranks));
  if (model.kernelIsas().empty())
    throw std::runtime_error(model.path() + ": no GPU here runs its " +
                             model.kernelIsa() + " code (lapc-run info " +
                             model.path() + " describes it)");
  int ordinal = numbered.value_or(where.rank);
  try {
    return device::openCuda(ordinal);
  } catch (const std::exception &e) {
    throw std::runtime_error(fmt::format(
        "GPU {}{}: {} (GPUs here that run {}: {})", ordinal,
        where.ranks > 1 ? fmt::format(" (rank {} of the {} on this host)",
                                      where.rank, where.ranks)
                        : "",
        e.what(), model.path(), model.kernelIsas()));
  }
}

lap::cli::ModelInstance::ModelInstance(const std::string &path,
                                       const std::string &option,
                                       HostRank where)
    : model(path, LoadedModel::Devices::Any),
      gpu(openDevice(model, option, where)),
      device(gpu ? *gpu : device::host()),
      params(device, model.parameterElements()),
      workspace(device, size_t(model.workspaceBytes())),
      calls(model, device, workspace.data()) {}

lap::LoadedCheckpoint lap::cli::ModelInstance::restore(const std::string &dir) {
  return train::restoreParameters(model, dir, params.data(), false, device);
}
