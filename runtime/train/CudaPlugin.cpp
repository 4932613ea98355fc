//===- CudaPlugin.cpp - cudaTrainDevice: the GPU device's plugin ----------===//
//
// The CUDA device lives in lib/libLapTrainCUDA.so beside the host's bin/
// (built where the CUDA toolkit is found), loaded on the first request: a
// host that never trains on a GPU maps no CUDA library.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TrainDevice.h"

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>
#include <string>

std::unique_ptr<lap::train::TrainDevice>
lap::train::cudaTrainDevice(int ordinal) {
  namespace fs = std::filesystem;
  static const std::string path =
      (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" /
       "libLapTrainCUDA.so")
          .string();
  void *plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!plugin)
    throw std::runtime_error(
        std::string("cannot run a model on a GPU: ") + dlerror() +
        " (lap builds it where the CUDA toolkit is installed)");
  using Entry = TrainDevice *(*)(int);
  auto entry = reinterpret_cast<Entry>(dlsym(plugin, "lap_train_cuda_device"));
  if (!entry)
    throw std::runtime_error(path + ": not lap's CUDA training plugin");
  return std::unique_ptr<TrainDevice>(entry(ordinal));
}
