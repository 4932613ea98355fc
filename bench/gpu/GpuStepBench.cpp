//===- GpuStepBench.cpp - Time a CUDA library's training step ---*- C++ -*-===//
//
// lap-gpu-step-bench MODEL.so [--batch N] [--seq N] [--warmup N] [--iters N]
//
// Loads a library built with `lapc --target=cuda`, puts parameters,
// gradients, workspace and one random batch on the GPU and times
// lap_model_train_step (forward and backward, as bench/torch_step.py's
// default): each step enqueued on one stream and timed with CUDA events,
// and the same step captured once in a CUDA graph and replayed. The
// ceilings are measured in the same run: an fp32 GEMM of 8192^3 through the
// kernel library's cuBLASLt wrapper (the library computes in fp32 without
// TF32), and a bf16 one through cuBLAS, the peak MFU is quoted against.
// Prints one JSON object. A profiler started with --profile-from-start off
// sees the plain steps alone (warmup + iters).
//
//===----------------------------------------------------------------------===//

#include "bench/StepArgs.h"
#include "bench/gpu/CudaTiming.h"
#include "runtime/device/Device.h"
#include "runtime/kernels/cuda/Context.h"
#include "runtime/kernels/cuda/Gemm.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/model/RandomBatch.h"

#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace lap;
using namespace lap::bench;

namespace {

nlohmann::json summary(const std::vector<double> &ms) {
  return {
      {"median", ms[ms.size() / 2]}, {"min", ms.front()}, {"max", ms.back()}};
}

/// TFLOP/s of an fp32 8192^3 GEMM through the library's cuBLASLt wrapper.
double gemmCeiling(cudaStream_t stream) {
  const int64_t n = 8192;
  std::mt19937 rng(1);
  auto a = randomElements(n * n, rng), b = randomElements(n * n, rng),
       c = randomElements(n * n, rng, true);
  lap::cuda::setStream(stream);
  std::vector<double> ms = timeRuns(stream, 2, 5, [&](int64_t) {
    lap::cuda::gemm(LAP_MATMUL_FP32, 'N', 'T', n, n, n, a->as<float>(), n,
                    b->as<float>(), n, 0.0f, c->as<float>(), n);
  });
  if (std::string failure = lap::cuda::takeFailure(); !failure.empty())
    throw std::runtime_error(failure);
  return 2.0 * n * n * n / (ms[ms.size() / 2] * 1e-3) / 1e12;
}

/// TFLOP/s of a bf16 8192^3 GEMM (fp32 accumulation) through cuBLAS: the
/// peak that MFU is quoted against (nanochat, llm.c); NaN when cuBLAS
/// cannot run it.
double bf16GemmCeiling(cudaStream_t stream) {
  const int64_t n = 8192;
  // bf16 of uniform [-1, 1] floats: their upper 16 bits.
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<uint16_t> host(size_t(n * n));
  DeviceBuffer a(host.size() * 2), b(host.size() * 2), c(host.size() * 2);
  for (DeviceBuffer *d : {&a, &b}) {
    for (uint16_t &x : host) {
      float f = value(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      x = uint16_t(bits >> 16);
    }
    check(cudaMemcpy(d->data, host.data(), host.size() * 2,
                     cudaMemcpyHostToDevice),
          "cudaMemcpy");
  }
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    return std::nan("");
  cublasSetStream(handle, stream);
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::vector<double> ms = timeRuns(stream, 2, 5, [&](int64_t) {
    cublasStatus_t s = cublasGemmEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_T, int(n), int(n), int(n), &one, a.data,
        CUDA_R_16BF, int(n), b.data, CUDA_R_16BF, int(n), &zero, c.data,
        CUDA_R_16BF, int(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      status = s;
  });
  cublasDestroy(handle);
  if (status != CUBLAS_STATUS_SUCCESS)
    return std::nan("");
  return 2.0 * n * n * n / (ms[ms.size() / 2] * 1e-3) / 1e12;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: lap-gpu-step-bench MODEL.so [--batch N] [--seq N] "
                 "[--warmup N] [--iters N]\n";
    return 2;
  }
  try {
    LoadedModel model(argv[1], LoadedModel::Devices::Any);
    if (model.device() != "cuda")
      throw std::runtime_error(std::string(argv[1]) +
                               " is not a CUDA library (lapc --target=cuda)");
    const auto &m = model.manifest();
    int64_t batch = flag(argc, argv, "--batch", model.maxBatch());
    int64_t seq = flag(argc, argv, "--seq", model.maxSeq());
    int64_t warmup = flag(argc, argv, "--warmup", 3);
    int64_t iters = flag(argc, argv, "--iters", 20);

    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreate");
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    double ceiling = gemmCeiling(stream), bf16Ceiling = bf16GemmCeiling(stream);

    auto ok = [&](lap_status s) {
      if (s != LAP_OK)
        throw std::runtime_error(model.lastError());
    };
    std::unique_ptr<device::Device> gpu = device::openCuda(0);
    using device::Buffer;
    Buffer params(*gpu, model.parameterElements() * 4),
        grads(*gpu, model.parameterElements() * 4),
        workspace(*gpu, model.workspaceBytes()), loss(*gpu, 4);
    ok(model.initParams(params.as<float>(), 1));
    RandomBatch host(m, batch, seq, 1);
    ModelCalls calls(model, *gpu, workspace.data());
    const lap_batch &view = *calls.place(host.view);

    // One seed for every timed step: uploading a new one would synchronise.
    const uint64_t stepSeed = 1;
    Buffer seed(*gpu, sizeof stepSeed);
    gpu->upload(seed.as<uint64_t>(), &stepSeed, 1);
    // The timed steps queue on the benchmark's own stream (ModelCalls set
    // the device's), after the copies above.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    ok(model.setStream(stream));
    auto step = [&](int64_t) {
      ok(model.trainStep(params.as<float>(), grads.as<float>(), &view,
                         seed.as<const uint64_t>(), workspace.data(),
                         loss.as<float>()));
    };
    // The steps a profiler started with --profile-from-start off sees
    // (bench/gpu/profile.sh): these, not the ceilings' GEMMs or the replays.
    check(cudaProfilerStart(), "cudaProfilerStart");
    std::vector<double> eager = timeRuns(stream, warmup, iters, step);
    check(cudaProfilerStop(), "cudaProfilerStop");

    // One step captured, replayed: the launches' host cost gone.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
    step(0);
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    std::vector<double> replay = timeRuns(stream, warmup, iters, [&](int64_t) {
      check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    });
    float lossValue = 0;
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    gpu->download(&lossValue, loss.as<float>(), 1);

    bool text = m["family"] == "gpt";
    // The spec's train.precision and train.matmul_precision, as the
    // manifest prints it.
    const std::string spec = m["spec"];
    const bool bf16Model =
                   spec.find("\n  precision: bf16") != std::string::npos,
               bf16Products =
                   bf16Model ||
                   spec.find("\n  matmul_precision: bf16") != std::string::npos;
    double median = replay[replay.size() / 2];
    double tflops =
        bench::trainStepFlops(m, batch, seq) / (median * 1e-3) / 1e12;
    size_t freeBytes = 0, totalBytes = 0;
    cudaMemGetInfo(&freeBytes, &totalBytes);

    nlohmann::json out{
        {"framework", "lap"},
        {"device", prop.name},
        {"model", m["name"]},
        {"precision", bf16Model ? "bf16" : "fp32"},
        {"matmul_precision", bf16Products ? "bf16" : "fp32"},
        {"batch", batch},
        {"seq", seq},
        {"parameters", model.parameterElements()},
        {"loss", lossValue},
        {"ms_per_step", summary(replay)},
        {"ms_per_step_without_graph", summary(eager)},
        {"samples_per_s", double(batch) / (median * 1e-3)},
        {"tokens_per_s", text ? double(batch * seq) / (median * 1e-3) : 0.0},
        {"tflops", tflops},
        {"fp32_gemm_tflops", ceiling},
        {"fraction_of_fp32_gemm", tflops / ceiling},
        {"bf16_gemm_tflops", bf16Ceiling},
        // MFU as nanochat and llm.c quote it: against the bf16 peak.
        {"fraction_of_bf16_gemm", tflops / bf16Ceiling},
        {"planned_bytes", 2 * model.parameterElements() * 4 +
                              model.workspaceBytes() + host.bytes()},
        {"device_bytes_in_use", int64_t(totalBytes - freeBytes)},
    };
    std::cout << out.dump() << "\n";
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "lap-gpu-step-bench: error: " << e.what() << "\n";
    return 2;
  }
}
