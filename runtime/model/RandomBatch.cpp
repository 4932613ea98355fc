//===- RandomBatch.cpp - Random inputs for a compiled model -----*- C++ -*-===//

#include "runtime/model/RandomBatch.h"

#include <random>

using namespace lap;

int64_t lap::elementsAt(const std::vector<int64_t> &shape, int64_t batch,
                        int64_t seq) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    n *= shape[i] >= 0 ? shape[i] : i == 0 ? batch : seq;
  return n;
}

RandomBatch::RandomBatch(const nlohmann::json &manifest, int64_t batch,
                         int64_t seq, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int64_t vocab = manifest["limits"]["vocab"];
  for (auto &t : manifest["batch"]) {
    auto shape = t["shape"].get<std::vector<int64_t>>();
    int64_t n = elementsAt(shape, batch, seq);
    buffers.push_back(std::make_unique<AlignedBuffer>(size_t(n) * 4));
    AlignedBuffer &b = *buffers.back();
    if (t["name"] == "lengths") { // a padded batch's: 1 .. seq
      std::uniform_int_distribution<int32_t> length(1, int32_t(seq));
      for (int64_t i = 0; i < n; ++i)
        b.as<int32_t>()[i] = length(rng);
    } else if (t["dtype"] == "int32") {
      std::uniform_int_distribution<int32_t> token(0, int32_t(vocab - 1));
      for (int64_t i = 0; i < n; ++i)
        b.as<int32_t>()[i] = token(rng);
    } else if (t["name"] == "images") {
      std::normal_distribution<float> pixel;
      for (int64_t i = 0; i < n; ++i)
        b.as<float>()[i] = pixel(rng);
    } else { // one-hot target distributions [B, classes]
      int64_t classes = shape.back();
      std::uniform_int_distribution<int64_t> label(0, classes - 1);
      for (int64_t r = 0; r < n / classes; ++r)
        b.as<float>()[r * classes + label(rng)] = 1;
    }
    pointers.push_back(b.data);
  }
  view = {batch, seq, int32_t(pointers.size()), pointers.data()};
}

int64_t RandomBatch::bytes() const {
  int64_t total = 0;
  for (const auto &b : buffers)
    total += int64_t(b->bytes);
  return total;
}
