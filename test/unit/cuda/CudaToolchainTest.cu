//===- CudaToolchainTest.cu - nvcc, cuBLASLt and NCCL work together -*- C++ -*-===//
//
// The GPU stack the backend builds on, checked end to end: a kernel compiled
// for sm_90, a cuBLASLt matmul and an NCCL all-reduce, each against a plain
// CPU computation. Library versions are checked everywhere; the rest skips
// with a visible message when no GPU is present.
//
//===----------------------------------------------------------------------===//

#include "test/unit/cuda/RequireGpu.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

#define EXPECT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_CUBLAS(call) ASSERT_EQ((call), CUBLAS_STATUS_SUCCESS) << #call
#define EXPECT_NCCL(call) ASSERT_EQ((call), ncclSuccess) << #call

__global__ void axpb(float *y, const float *x, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + b;
}

/// A device buffer of floats, copied from and to the host.
struct DeviceBuffer {
  float *ptr = nullptr;
  size_t n;
  explicit DeviceBuffer(const std::vector<float> &host) : n(host.size()) {
    cudaMalloc(&ptr, n * sizeof(float));
    cudaMemcpy(ptr, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  }
  std::vector<float> read() const {
    std::vector<float> host(n);
    cudaMemcpy(host.data(), ptr, n * sizeof(float), cudaMemcpyDeviceToHost);
    return host;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
};

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * float(int(i % 17) - 8);
  return v;
}

} // namespace

TEST(CudaToolchain, LibrariesAreTheExpectedVersions) {
  int nccl = 0;
  EXPECT_NCCL(ncclGetVersion(&nccl));
  EXPECT_GE(nccl, 22800) << "NCCL 2.28 or newer";
  EXPECT_GE(cublasLtGetVersion(), size_t(130000)) << "cuBLASLt from CUDA 13";
  int runtime = 0;
  EXPECT_CUDA(cudaRuntimeGetVersion(&runtime));
  EXPECT_GE(runtime, 13000);
}

TEST(CudaToolchain, KernelMatchesCpu) {
  REQUIRE_GPU();
  const int n = 1000;
  std::vector<float> x = ramp(n, 0.5f);
  DeviceBuffer dx(x), dy(std::vector<float>(n, 0.f));
  axpb<<<(n + 255) / 256, 256>>>(dy.ptr, dx.ptr, 3.f, -1.f, n);
  EXPECT_CUDA(cudaDeviceSynchronize());
  std::vector<float> y = dy.read();
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(y[i], 3.f * x[i] - 1.f) << i;
}

TEST(CudaToolchain, CublasLtMatmulMatchesCpu) {
  REQUIRE_GPU();
  // Column-major C[m x n] = A[m x k] * B[k x n], fp32.
  const int m = 64, n = 48, k = 32;
  std::vector<float> a = ramp(size_t(m) * k, 0.25f),
                     b = ramp(size_t(k) * n, 0.125f);
  DeviceBuffer da(a), db(b), dc(std::vector<float>(size_t(m) * n, 0.f));
  cublasLtHandle_t handle;
  EXPECT_CUBLAS(cublasLtCreate(&handle));
  cublasLtMatmulDesc_t op;
  EXPECT_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, lc;
  EXPECT_CUBLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
  EXPECT_CUBLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
  EXPECT_CUBLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
  float one = 1.f, zero = 0.f;
  EXPECT_CUBLAS(cublasLtMatmul(handle, op, &one, da.ptr, la, db.ptr, lb, &zero,
                               dc.ptr, lc, dc.ptr, lc, nullptr, nullptr, 0, 0));
  EXPECT_CUDA(cudaDeviceSynchronize());
  std::vector<float> c = dc.read();
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double ref = 0;
      for (int p = 0; p < k; ++p)
        ref += double(a[size_t(p) * m + i]) * b[size_t(j) * k + p];
      EXPECT_NEAR(c[size_t(j) * m + i], ref, 1e-3 * (1 + std::fabs(ref)));
    }
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(handle);
}

TEST(CudaToolchain, NcclAllReduceOnOneDevice) {
  REQUIRE_GPU();
  ncclComm_t comm;
  int device = 0;
  EXPECT_NCCL(ncclCommInitAll(&comm, 1, &device));
  std::vector<float> x = ramp(256, 1.f);
  DeviceBuffer buf(x);
  EXPECT_NCCL(
      ncclAllReduce(buf.ptr, buf.ptr, x.size(), ncclFloat, ncclSum, comm, 0));
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(buf.read(), x) << "a sum over one rank is the identity";
  ncclCommDestroy(comm);
}
