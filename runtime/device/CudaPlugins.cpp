//===- CudaPlugins.cpp - The GPU's device and communicator, plugins -------===//
//
// The CUDA device and the NCCL communicator live in lib/libLapDeviceCUDA.so
// and lib/libLapDeviceNCCL.so beside the host's bin/ (built where the CUDA
// toolkit is found), loaded on the first request: a host that never trains
// on a GPU maps no CUDA library, one GPU alone no NCCL.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/Device.h"

#include "runtime/comm/Communicator.h"

#include <dlfcn.h>

#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace {

/// The entry point `name` of plugin `library`, as an `Entry`.
template <typename Entry>
Entry pluginEntry(const std::string &library, const char *name) {
  namespace fs = std::filesystem;
  std::string path =
      (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" /
       library)
          .string();
  void *plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!plugin)
    throw std::runtime_error(
        std::string("cannot run a model on a GPU: ") + dlerror() +
        " (lap builds it where the CUDA toolkit and NCCL are installed)");
  auto entry = reinterpret_cast<Entry>(dlsym(plugin, name));
  if (!entry)
    throw std::runtime_error(path + ": not lap's plugin (no " + name + ")");
  return entry;
}

/// The NCCL plugin's communicator of `ranks` (the CUDA device's way to its
/// communicator), or null with the reason in `error`.
lap::comm::Communicator *ncclCommunicator(lap::comm::Communicator *ranks,
                                          std::string *error) {
  using Entry =
      lap::comm::Communicator *(*)(lap::comm::Communicator *, std::string *);
  try {
    return pluginEntry<Entry>("libLapDeviceNCCL.so",
                              "lap_device_nccl_communicator")(ranks, error);
  } catch (const std::exception &e) {
    *error = e.what();
    return nullptr;
  }
}

} // namespace

std::unique_ptr<lap::device::Device> lap::device::openCuda(int ordinal) {
  using Entry = Device *(*)(int, decltype(&ncclCommunicator));
  auto entry =
      pluginEntry<Entry>("libLapDeviceCUDA.so", "lap_device_cuda_open");
  return std::unique_ptr<Device>(entry(ordinal, &ncclCommunicator));
}
