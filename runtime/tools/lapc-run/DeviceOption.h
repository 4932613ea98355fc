//===- DeviceOption.h - `--device`: where a library runs --------*- C++ -*-===//

#ifndef LAP_RUNTIME_TOOLS_LAPCRUN_DEVICEOPTION_H
#define LAP_RUNTIME_TOOLS_LAPCRUN_DEVICEOPTION_H

#include "runtime/model/LoadedModel.h"
#include "runtime/train/TrainDevice.h"

#include <memory>
#include <string>

namespace lap::cli {

/// The device `option` names for `model` ("cpu", "cuda", "cuda:N"; "": the
/// library's own), which must be the one the library was compiled for: the
/// host (null), or GPU N (0 for "cuda"), made this thread's device. Throws
/// naming the library when they differ or no GPU here runs its code.
std::unique_ptr<train::TrainDevice> openDevice(const LoadedModel &model,
                                               const std::string &option);

} // namespace lap::cli

#endif // LAP_RUNTIME_TOOLS_LAPCRUN_DEVICEOPTION_H
