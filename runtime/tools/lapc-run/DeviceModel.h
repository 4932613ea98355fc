//===- DeviceModel.h - A library on the device `--device` names -*- C++ -*-===//

#ifndef LAP_RUNTIME_TOOLS_LAPCRUN_DEVICEMODEL_H
#define LAP_RUNTIME_TOOLS_LAPCRUN_DEVICEMODEL_H

#include "runtime/model/ModelOnDevice.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainDevice.h"

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
std::unique_ptr<train::TrainDevice> openDevice(const LoadedModel &model,
                                               const std::string &option,
                                               HostRank where = {});

/// The library `path` on the device `option` names (openDevice), with its
/// parameters (zero) and workspace there: what the commands that run a
/// model start from.
struct DeviceModel {
  DeviceModel(const std::string &path, const std::string &option,
              HostRank where = {});

  /// Reads the parameters of checkpoint directory `dir` into `params`.
  LoadedCheckpoint restore(const std::string &dir);

  LoadedModel model;
  std::unique_ptr<train::TrainDevice> gpu; ///< null: the host
  train::TrainDevice &device;
  DeviceMemory memory;
  train::DeviceArray params;
  DeviceMemory::Buffer workspace;
  ModelOnDevice calls;
};

} // namespace lap::cli

#endif // LAP_RUNTIME_TOOLS_LAPCRUN_DEVICEMODEL_H
