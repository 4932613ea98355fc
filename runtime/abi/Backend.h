//===- Backend.h - Where a model library's code runs ------------*- C++ -*-===//
//
// ModelEntry.cpp, the C ABI over the generated code, is the same for every
// target; what depends on where the code runs is here, implemented once
// for the CPU (CpuBackend.cpp, in libLapModelEntry.a) and once for CUDA
// GPUs (CudaBackend.cpp, in libLapModelEntryCUDA.a). lapc links one of
// them into model.so with its target's kernel library. The attention
// libraries (AttentionEntry.cpp, lap/attention.h) are built on them too.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ABI_BACKEND_H
#define LAP_RUNTIME_ABI_BACKEND_H

#include "lap/model.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace lap::model::backend {

/// Null when the library's kernels can run here; otherwise why not (the
/// CPU: LAP_CPU_ISA names what this CPU lacks; CUDA: no suitable GPU).
const char *kernelError();
/// lap_model_kernel_isa and lap_model_kernel_isas.
const char *kernelIsa();
const char *kernelIsas();

/// Whether the entry points can read batch tensors to check their ids
/// (host memory); on a GPU the kernels bound them instead.
bool readsBatches();

/// Lets `fill` write `elements` floats of parameters in host memory, then
/// puts them at `params` (device memory on a GPU; a failure is reported by
/// finish).
void initialise(float *params, int64_t elements,
                const std::function<void(float *)> &fill);

/// Copies `bytes` of the library's memory at `from` to the host's `to`, once
/// the thread's stream has run what it holds (a failure is reported by
/// finish).
void toHost(void *to, const void *from, size_t bytes);

/// lap_model_set_stream: the stream this thread's later calls enqueue on.
lap_status setStream(void *stream);

/// After the generated code has run (or been enqueued): LAP_OK, or the
/// failure a kernel recorded, in `error`.
lap_status finish(std::string &error);

} // namespace lap::model::backend

#endif // LAP_RUNTIME_ABI_BACKEND_H
