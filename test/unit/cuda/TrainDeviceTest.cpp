//===- TrainDeviceTest.cpp - The trainer's GPU arithmetic -------*- C++ -*-===//
//
// Each operation of device::openCuda's device against lap::device::host() on
// the same seeded inputs. Tolerances:
//  - exact where the GPU does the host's float arithmetic, uncontracted and
//    correctly rounded (accumulate, scale, AdamW over several steps, Muon's
//    momentum, applyUpdate);
//  - 1e-12 relative for the fp64 sums of squares, added in another order;
//  - 1e-4 of the largest magnitude for Newton-Schulz, whose GEMMs sum in
//    another order, amplified by five iterations.
// Span lists leave gaps between tensors and put the optimizer state in
// another order than the parameters, so a stray write or a state read at
// the parameters' offset fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"
#include "runtime/device/Device.h"
#include "runtime/platform/Process.h"
#include "test/unit/cuda/RequireGpu.h"
#include "test/unit/cuda/kernels/DeviceBuffer.h"
#include "test/unit/kernels/KernelTestSupport.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace lap::test;
using lap::device::AdamWScalars;
using lap::device::Array;
using lap::device::Device;
using lap::device::kSpan;
using lap::device::Span;

using Floats = std::vector<float>;

/// Elements of the arrays the span lists cover.
constexpr int64_t kElements = 45200;

/// Three tensors in spans of at most kSpan: parameters [0, 40000), [40100,
/// 45100) and [45150], with gaps between them, and their state at 5100, 0
/// and 45150.
std::vector<Span> tensorSpans() {
  std::vector<Span> spans;
  auto add = [&](int64_t offset, int64_t size, int64_t state) {
    for (int64_t b = 0; b < size; b += kSpan)
      spans.push_back({offset + b, std::min(kSpan, size - b), state + b});
  };
  add(0, 40000, 5100);
  add(40100, 5000, 0);
  add(45150, 1, 45150);
  return spans;
}

/// got and want within `ulps` of each other elementwise (0: the same bits).
void expectUlps(const Floats &got, const Floats &want, int64_t ulps,
                const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    int32_t a, b;
    std::memcpy(&a, &got[i], sizeof a);
    std::memcpy(&b, &want[i], sizeof b);
    // Floats of one sign are ordered as their bits are.
    if (std::llabs(int64_t(a) - int64_t(b)) > ulps && ++bad <= 5)
      ADD_FAILURE() << what << " at " << i << ": " << got[i] << " vs "
                    << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": mismatches of " << got.size();
}

class TrainDeviceOnGpu : public ::testing::Test {
protected:
  void SetUp() override {
    REQUIRE_GPU();
    gpu = lap::device::openCuda(0);
  }

  /// A device copy of x.
  Array put(const Floats &x) {
    Array a(*gpu, int64_t(x.size()));
    gpu->upload(a.data(), x.data(), a.size());
    return a;
  }

  Floats get(const Array &a) {
    Floats x(size_t(a.size()));
    gpu->download(x.data(), a.data(), a.size());
    return x;
  }

  Device &host = lap::device::host();
  std::unique_ptr<Device> gpu;
  std::mt19937 rng{7};
};

// The plugin loads wherever it was built; without a GPU the device's first
// CUDA call reports why (with one, every test below goes through it).
TEST(TrainDevicePlugin, LoadsAndNamesTheMissingGpu) {
  std::string why;
  if (!lap::cuda::visibleDevices(&why).empty())
    GTEST_SKIP() << "a GPU is visible: the tests on it load the plugin";
  try {
    lap::device::openCuda(0);
    FAIL() << "a device without a GPU";
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()).rfind("cudaSetDevice: ", 0), 0u)
        << e.what();
  }
}

// The NCCL plugin loads too: without a GPU its entry point says why it has
// no device; with one, the GPU's device makes the communicator of this
// process alone through it.
TEST(CommunicatorPlugin, LoadsAndStartsNccl) {
  std::unique_ptr<lap::comm::Communicator> alone = lap::comm::singleProcess();
  std::string why;
  if (lap::cuda::visibleDevices(&why).empty()) {
    std::string path = std::filesystem::path(lap::platform::executablePath())
                           .parent_path()
                           .parent_path() /
                       "lib" / "libLapDeviceNCCL.so";
    void *plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(plugin, nullptr) << dlerror();
    using Entry =
        lap::comm::Communicator *(*)(lap::comm::Communicator *, std::string *);
    auto entry =
        reinterpret_cast<Entry>(dlsym(plugin, "lap_device_nccl_communicator"));
    ASSERT_NE(entry, nullptr) << path;
    std::string error;
    EXPECT_EQ(entry(alone.get(), &error), nullptr);
    EXPECT_EQ(error.rfind("cudaGetDevice failed: ", 0), 0u) << error;
    return;
  }
  std::unique_ptr<Device> gpu = lap::device::openCuda(0);
  std::unique_ptr<lap::comm::Communicator> nccl = gpu->communicator(*alone);
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->size(), 1);
  EXPECT_EQ(nccl->name().rfind("NCCL ", 0), 0u) << nccl->name();
}

TEST_F(TrainDeviceOnGpu, RoundTrip) {
  EXPECT_FALSE(gpu->onHost());
  Array a(*gpu, 1000);
  expectUlps(get(a), Floats(1000, 0.0f), 0, "allocated");
  Floats x = randomVector(rng, 1000);
  gpu->upload(a.data(), x.data(), a.size());
  expectUlps(get(a), x, 0, "uploaded");
  Array b(*gpu, 1000);
  gpu->copy(b.data(), a.data(), a.size());
  expectUlps(get(b), x, 0, "copied");
}

TEST_F(TrainDeviceOnGpu, Accumulate) {
  const int64_t n = 100003;
  const float scale = 1.0f / 3.0f;
  Floats g1 = randomVector(rng, n), g2 = randomVector(rng, n);
  g1[0] = -0.0f; // 0 + (-0) is +0
  Floats want = nanVector(n);
  Array acc = put(want), d1 = put(g1), d2 = put(g2);
  host.accumulate(want.data(), g1.data(), scale, n, true);
  gpu->accumulate(acc.data(), d1.data(), scale, n, true);
  expectUlps(get(acc), want, 0, "first");
  host.accumulate(want.data(), g2.data(), scale, n, false);
  gpu->accumulate(acc.data(), d2.data(), scale, n, false);
  expectUlps(get(acc), want, 0, "second");
}

TEST_F(TrainDeviceOnGpu, SquaredNorms) {
  const std::vector<Span> spans = tensorSpans();
  Floats x = randomVector(rng, kElements, -3.0f, 3.0f);
  Array dx = put(x);
  std::vector<double> want(spans.size()), got(spans.size(), NAN);
  host.squaredNorms(x.data(), spans, want.data());
  gpu->squaredNorms(dx.data(), spans, got.data());
  for (size_t k = 0; k < spans.size(); ++k)
    EXPECT_NEAR(got[k], want[k], 1e-12 * want[k]) << "span " << k;
}

TEST_F(TrainDeviceOnGpu, SquaredNormsOfNonFiniteValues) {
  const std::vector<Span> spans = tensorSpans();
  Floats x = randomVector(rng, kElements);
  x[spans[0].offset + 5] = std::numeric_limits<float>::quiet_NaN();
  x[spans[2].offset + 7] = -std::numeric_limits<float>::infinity();
  x[spans[3].offset] = std::numeric_limits<float>::infinity();
  Array dx = put(x);
  std::vector<double> want(spans.size()), got(spans.size());
  host.squaredNorms(x.data(), spans, want.data());
  gpu->squaredNorms(dx.data(), spans, got.data());
  for (size_t k = 0; k < spans.size(); ++k) {
    EXPECT_EQ(std::isfinite(got[k]), std::isfinite(want[k])) << "span " << k;
    EXPECT_EQ(std::isfinite(got[k]), k == 1) << "span " << k;
  }
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_NEAR(got[1], want[1], 1e-12 * want[1]);
}

TEST_F(TrainDeviceOnGpu, Scale) {
  Floats want = randomVector(rng, kElements);
  Array x = put(want);
  // More calls than the device keeps span lists in flight, each list a
  // temporary of its own.
  for (int round = 0; round < 20; ++round) {
    std::vector<Span> spans = tensorSpans();
    spans.erase(spans.begin() + round % spans.size());
    const float coef = 0.75f + 0.03125f * float(round);
    host.scale(want.data(), spans, coef);
    gpu->scale(x.data(), spans, coef);
  }
  expectUlps(get(x), want, 0, "scaled");
}

TEST_F(TrainDeviceOnGpu, AdamW) {
  const std::vector<Span> spans = tensorSpans();
  // torch.optim.AdamW's scalars at lr 3e-3, weight decay 0.1, betas (0.9,
  // 0.95), eps 1e-8, as Optimizer::adamwStep rounds them.
  auto scalarsAt = [](int step) {
    const double lr = 3e-3, wd = 0.1, beta1 = 0.9, beta2 = 0.95;
    const double bc1 = 1 - std::pow(beta1, step);
    const double bc2 = 1 - std::pow(beta2, step);
    return AdamWScalars{float(1 - lr * wd),
                        float(1 - beta1),
                        float(beta2),
                        float(1 - beta2),
                        1e-8f,
                        float(lr / bc1),
                        float(std::sqrt(bc2))};
  };
  Floats p = randomVector(rng, kElements), m(kElements), v(kElements);
  Array dp = put(p), dm(*gpu, kElements), dv(*gpu, kElements);
  for (int step = 1; step <= 3; ++step) {
    Floats g = randomVector(rng, kElements, -0.1f, 0.1f);
    Array dg = put(g);
    host.adamw(p.data(), g.data(), m.data(), v.data(), spans, scalarsAt(step));
    gpu->adamw(dp.data(), dg.data(), dm.data(), dv.data(), spans,
               scalarsAt(step));
  }
  expectUlps(get(dp), p, 0, "params");
  expectUlps(get(dm), m, 0, "exp_avg");
  expectUlps(get(dv), v, 0, "exp_avg_sq");
}

TEST_F(TrainDeviceOnGpu, MuonMomentum) {
  const int64_t n = 70001;
  const double momentum = 0.95;
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "Nesterov" : "plain");
    Floats buf(n), u = nanVector(n);
    Array dbuf(*gpu, n), du = put(u);
    for (int step = 0; step < 3; ++step) {
      Floats g = randomVector(rng, n);
      Array dg = put(g);
      host.muonMomentum(buf.data(), g.data(), u.data(), n, float(momentum),
                        float(1 - momentum), nesterov);
      gpu->muonMomentum(dbuf.data(), dg.data(), du.data(), n, float(momentum),
                        float(1 - momentum), nesterov);
    }
    expectUlps(get(dbuf), buf, 0, "momentum buffer");
    expectUlps(get(du), u, 0, "update");
  }
}

TEST_F(TrainDeviceOnGpu, Orthogonalize) {
  // Wide, tall, square, vectors, and one over a span (two norm partials).
  const int64_t shapes[][2] = {{64, 192}, {192, 64}, {96, 96},
                               {1, 7},    {7, 1},    {160, 256}};
  // At bf16 products: cuBLASLt's rounding against the CPU's nearest-even
  // one, which the quintic amplifies (bf16 against fp32 differs by up to
  // 5.5% on the CPU: OptimizerTest): 8e-2.
  for (auto [precision, tolerance] :
       {std::pair{LAP_MATMUL_FP32, 1e-4}, std::pair{LAP_MATMUL_BF16, 8e-2}})
    for (const auto &shape : shapes) {
      const int64_t rows = shape[0], cols = shape[1];
      SCOPED_TRACE(testing::Message()
                   << rows << " x " << cols
                   << (precision == LAP_MATMUL_BF16 ? ", bf16" : ", fp32"));
      Floats want = randomVector(rng, size_t(rows * cols));
      Array x = put(want);
      host.orthogonalize(want.data(), rows, cols, 5, precision);
      gpu->orthogonalize(x.data(), rows, cols, 5, precision);
      expectWithinScale(get(x), want, tolerance, "orthogonalized");
    }
}

TEST_F(TrainDeviceOnGpu, ApplyUpdate) {
  const int64_t n = 100003;
  Floats want = randomVector(rng, n), u = randomVector(rng, n);
  Array p = put(want), du = put(u);
  host.applyUpdate(want.data(), u.data(), n, 0.9997f, 0.02f);
  gpu->applyUpdate(p.data(), du.data(), n, 0.9997f, 0.02f);
  expectUlps(get(p), want, 0, "updated");
}

} // namespace
