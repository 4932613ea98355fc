//===- DeviceOption.cpp - `--device`: where a library runs ----------------===//

#include "runtime/tools/lapc-run/DeviceOption.h"

#include <fmt/format.h>

#include <regex>
#include <stdexcept>

std::unique_ptr<lap::train::TrainDevice>
lap::cli::openDevice(const LoadedModel &model, const std::string &option) {
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
  if (model.kernelIsas().empty())
    throw std::runtime_error(model.path() + ": no GPU here runs its " +
                             model.kernelIsa() + " code (lapc-run info " +
                             model.path() + " describes it)");
  return train::cudaTrainDevice(parts[2].matched ? std::stoi(parts[2]) : 0);
}
