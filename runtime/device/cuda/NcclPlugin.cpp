//===- NcclPlugin.cpp - The NCCL communicator's plugin entry point --------===//
//
// lap_device_nccl_communicator, the CUDA device's communicator (through
// CudaPlugins.cpp's ncclCommunicator): an error comes back as text.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cuda/NcclCommunicator.h"

#include <cuda_runtime.h>

#include <exception>
#include <stdexcept>
#include <string>

extern "C" __attribute__((visibility("default"))) lap::comm::Communicator *
lap_device_nccl_communicator(lap::comm::Communicator *ranks,
                             std::string *error) {
  try {
    int device = 0;
    if (cudaError_t status = cudaGetDevice(&device); status != cudaSuccess)
      throw std::runtime_error(std::string("cudaGetDevice failed: ") +
                               cudaGetErrorString(status));
    return lap::comm::ncclCommunicator(*ranks, device, nullptr).release();
  } catch (const std::exception &e) {
    *error = e.what();
    return nullptr;
  }
}
