//===- NcclCommunicatorTest.cpp - The NCCL communicator on one GPU --------===//
//
// One rank, bootstrapped by the single-process communicator: the NCCL calls,
// the grouped uneven blocks and the stream waits, on device memory. Skips
// with a visible message when no GPU is present. (Several GPUs: the same
// collectives as lap-comm-tests checks over MPI.)
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cuda/NcclCommunicator.h"
#include "test/unit/cuda/RequireGpu.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

using namespace lap::comm;

namespace {

TEST(NcclCommunicator, CollectivesOfOneRankOnDeviceMemory) {
  REQUIRE_GPU();
  std::unique_ptr<Communicator> bootstrap = singleProcess();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::unique_ptr<Communicator> nccl = ncclCommunicator(*bootstrap, 0, stream);
  EXPECT_EQ(nccl->size(), 1);
  EXPECT_NE(nccl->name().find("NCCL"), std::string::npos);

  const int64_t n = 1 << 20;
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    host[size_t(i)] = float(i % 1000);
  float *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, size_t(n) * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, size_t(n) * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(a, host.data(), size_t(n) * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  nccl->allReduceSum(a, n); // one rank: the sum is the value
  nccl->reduceScatter(a, b, {n}, DataType::F32);
  nccl->allGather(b, {n}, DataType::F32);
  nccl->broadcast(b, n * 4, 0);
  nccl->barrier();
  std::vector<float> back(static_cast<size_t>(n));
  ASSERT_EQ(cudaMemcpy(back.data(), b, size_t(n) * 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(back, host);
  cudaFree(a);
  cudaFree(b);
  nccl.reset();
  cudaStreamDestroy(stream);
}

} // namespace
