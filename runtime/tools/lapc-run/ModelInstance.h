//===- ModelInstance.h - A library on the device `--device` names -*- C++ -*-===//

#ifndef LAP_RUNTIME_TOOLS_LAPCRUN_MODELINSTANCE_H
#define LAP_RUNTIME_TOOLS_LAPCRUN_MODELINSTANCE_H

#include "runtime/device/Device.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/Checkpoint.h"

#include <memory>
#include <string>

namespace lap::cli {

/// Where a process runs among the ranks of its host (one GPU each).
struct HostRank {
  int rank = 0, ranks = 1;
};

/// The device `option` names for `model` ("cpu", "cuda", "cuda:N"; "": the
/// library's own), which must be the one the library was compiled for: the
/// host (null), or GPU N, made this thread's device. "cuda" is GPU 0, or a
/// host's rank r of several GPU r ("cuda:N" is refused there). Throws naming
/// the library when they differ or no GPU here runs its code.
std::unique_ptr<device::Device> openDevice(const LoadedModel &model,
                                           const std::string &option,
                                           HostRank where = {});

/// The library `path` on the device `option` names (openDevice), with its
/// parameters (zero) and workspace there: what the commands that run a
/// model start from.
struct ModelInstance {
  ModelInstance(const std::string &path, const std::string &option,
                HostRank where = {});

  /// Reads the parameters of checkpoint directory `dir` into `params`.
  LoadedCheckpoint restore(const std::string &dir);

  LoadedModel model;
  std::unique_ptr<device::Device> gpu; ///< null: the host
  device::Device &device;
  device::Array params;
  device::Buffer workspace;
  ModelCalls calls;
};

} // namespace lap::cli

#endif // LAP_RUNTIME_TOOLS_LAPCRUN_MODELINSTANCE_H
