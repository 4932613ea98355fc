//===- Rope.cpp - rotary position embedding ---------------------*- C++ -*-===//
//
// The cos/sin table [T, D/2] depends only on (T, D, base), which are the same
// for every layer and step, so the last few tables are kept. Angles are
// computed in double: at t ~ 10^4 a float angle would be off by ~10^-3 rad.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Bf16.h"
#include "runtime/kernels/cpu/Kernels.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

using lap::bf16::load;
using lap::bf16::store;
using lap::cpu::parallelFor;

namespace {

struct RopeTable {
  int64_t T, D;
  float base;
  std::vector<float> cos, sin; // [T, D/2]
};

std::shared_ptr<const RopeTable> buildTable(int64_t T, int64_t D, float base) {
  auto table = std::make_shared<RopeTable>();
  int64_t half = D / 2;
  table->T = T;
  table->D = D;
  table->base = base;
  table->cos.resize(T * half);
  table->sin.resize(T * half);
  std::vector<double> invFreq(half);
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] = std::pow(double(base), -2.0 * double(i) / double(D));
  parallelFor(T, std::max<int64_t>(1, 256 / std::max<int64_t>(half, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t t = begin; t < end; ++t)
                  for (int64_t i = 0; i < half; ++i) {
                    double angle = double(t) * invFreq[i];
                    table->cos[t * half + i] = float(std::cos(angle));
                    table->sin[t * half + i] = float(std::sin(angle));
                  }
              });
  return table;
}

/// A table covering at least T positions. The shared pointer keeps a table
/// alive for its user while another thread replaces it in the cache.
std::shared_ptr<const RopeTable> ropeTable(int64_t T, int64_t D, float base) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const RopeTable>> cache;
  constexpr size_t kCacheSize = 4;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &entry : cache)
      if (entry->D == D && entry->base == base && entry->T >= T)
        return entry;
  }
  std::shared_ptr<const RopeTable> table = buildTable(T, D, base);
  std::lock_guard<std::mutex> lock(mutex);
  // Replace a smaller table for the same (D, base), else the oldest entry.
  auto same = std::find_if(cache.begin(), cache.end(), [&](auto &entry) {
    return entry->D == D && entry->base == base;
  });
  if (same != cache.end())
    cache.erase(same);
  else if (cache.size() == kCacheSize)
    cache.erase(cache.begin());
  cache.push_back(table);
  return table;
}

/// Rotates each head's channel pairs (i, i + D/2) by Sign * angle. y may
/// equal x: each pair is read before it is written and pairs are disjoint.
/// Element is the tensors' type (fp32 or bf16); the rotation is in fp32.
template <int Sign, typename Element>
void rotate(Element *y, const Element *x, int64_t B, int64_t T, int64_t H,
            int64_t D, float base, int64_t first) {
  if (B * T * H == 0)
    return;
  std::shared_ptr<const RopeTable> table = ropeTable(first + T, D, base);
  int64_t half = D / 2;
  parallelFor(B * T * H, std::max<int64_t>(1, 8192 / D),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  int64_t t = first + (r / H) % T;
                  const float *cs = table->cos.data() + t * half;
                  const float *sn = table->sin.data() + t * half;
                  const Element *xr = x + r * D;
                  Element *yr = y + r * D;
#pragma clang loop vectorize(assume_safety)
                  for (int64_t i = 0; i < half; ++i) {
                    float a = load(xr[i]), b = load(xr[i + half]);
                    float c = cs[i], s = Sign * sn[i];
                    store(yr[i], a * c - b * s);
                    store(yr[i + half], a * s + b * c);
                  }
                  if (D % 2) // an odd last channel has no partner
                    yr[D - 1] = xr[D - 1];
                }
              });
}

} // namespace

extern "C" void lap_cpu_rope_forward(float *y, const float *x, int64_t B,
                                     int64_t T, int64_t H, int64_t D,
                                     float base, int64_t first) {
  rotate<1>(y, x, B, T, H, D, base, first);
}

extern "C" void lap_cpu_rope_backward(float *dx, const float *dy, int64_t B,
                                      int64_t T, int64_t H, int64_t D,
                                      float base, int64_t first) {
  rotate<-1>(dx, dy, B, T, H, D, base, first);
}

extern "C" void lap_cpu_rope_forward_bf16(lap_bf16 *y, const lap_bf16 *x,
                                          int64_t B, int64_t T, int64_t H,
                                          int64_t D, float base,
                                          int64_t first) {
  rotate<1>(y, x, B, T, H, D, base, first);
}

extern "C" void lap_cpu_rope_backward_bf16(lap_bf16 *dx, const lap_bf16 *dy,
                                           int64_t B, int64_t T, int64_t H,
                                           int64_t D, float base,
                                           int64_t first) {
  rotate<-1>(dx, dy, B, T, H, D, base, first);
}
