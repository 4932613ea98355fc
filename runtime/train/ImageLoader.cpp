//===- ImageLoader.cpp - Augmented image batches, prepared ahead -*- C++ -*-===//

#include "runtime/train/ImageLoader.h"

#include "runtime/train/RunSignals.h"

#include <algorithm>
#include <stdexcept>

namespace lap::train {

namespace {

/// A generator for stream `stream` of `seed`, independent of the others.
std::mt19937_64 generator(uint64_t seed, uint64_t stream, uint64_t slot) {
  std::seed_seq seq{uint32_t(seed),   uint32_t(seed >> 32),
                    uint32_t(stream), uint32_t(stream >> 32),
                    uint32_t(slot),   uint32_t(slot >> 32)};
  return std::mt19937_64(seq);
}

/// torchvision's RandomCrop(size, padding): zero padding, then a uniform
/// window.
data::Image randomCrop(const data::Image &in, int64_t size, int64_t pad,
                       std::mt19937_64 &rng) {
  int64_t y0 = data::uniformIndex(rng, in.height + 2 * pad - size + 1);
  int64_t x0 = data::uniformIndex(rng, in.width + 2 * pad - size + 1);
  data::Image out(in.channels, size, size);
  for (int64_t c = 0; c < in.channels; ++c)
    for (int64_t y = 0; y < size; ++y)
      for (int64_t x = 0; x < size; ++x) {
        int64_t sy = y0 + y - pad, sx = x0 + x - pad;
        bool inside = sy >= 0 && sy < in.height && sx >= 0 && sx < in.width;
        out.at(c, y, x) = inside ? in.at(c, sy, sx) : 0.0f;
      }
  return out;
}

/// Grey to colour by repetition, colour to grey by luma.
data::Image toChannels(data::Image in, int64_t channels) {
  if (in.channels == channels)
    return in;
  if (in.channels == 1 && channels == 3) {
    data::Image out(3, in.height, in.width);
    for (int64_t c = 0; c < 3; ++c)
      std::copy(in.pixels.begin(), in.pixels.end(),
                out.pixels.begin() + c * in.height * in.width);
    return out;
  }
  if (in.channels == 3 && channels == 1) {
    data::grayscale(in);
    in.pixels.resize(size_t(in.height * in.width));
    in.channels = 1;
    return in;
  }
  throw std::runtime_error("cannot turn an image of " +
                           std::to_string(in.channels) + " channels into " +
                           std::to_string(channels));
}

} // namespace

void defaultNormalization(int64_t channels, std::vector<float> &mean,
                          std::vector<float> &std) {
  if (channels == 3) {
    mean = {0.485f, 0.456f, 0.406f};
    std = {0.229f, 0.224f, 0.225f};
  } else {
    mean.assign(size_t(channels), 0.5f);
    std.assign(size_t(channels), 0.5f);
  }
}

data::Image ImageTransform::operator()(const data::Image &image,
                                       std::mt19937_64 &rng) const {
  data::Image x;
  bool sized = image.height == size && image.width == size;
  if (!augment || augment->crop == dsl::Crop::None)
    x = sized ? image
              : data::centerCrop(data::resizeShorter(image, size), size);
  else if (augment->crop == dsl::Crop::RandomResized)
    x = data::randomResizedCrop(image, size, rng, augment->scaleMin,
                                augment->scaleMax, augment->ratioMin,
                                augment->ratioMax);
  else // DeiT-3's simple random crop: resize, then a padded random crop
    x = randomCrop(sized ? image : data::resizeShorter(image, size), size,
                   size / 8, rng);
  if (augment) {
    if (augment->hflip > 0 && data::uniform(rng, 0, 1) < augment->hflip)
      data::horizontalFlip(x);
    if (augment->threeAugment)
      data::threeAugment(x, rng);
    if (augment->colorJitter > 0) {
      float v = float(augment->colorJitter);
      data::colorJitter(x, v, v, v, rng);
    }
  }
  x = toChannels(std::move(x), channels);
  data::normalize(x, mean, std);
  return x;
}

ImageLoader::ImageLoader(const data::ImageDataset &set,
                         ImageTransform transform, data::MixConfig mix,
                         int64_t batch, int64_t classes, uint64_t seed,
                         int64_t workers, DataShard shard)
    : ImageLoader(set, std::move(transform), mix, std::nullopt, batch, classes,
                  seed, workers, shard) {}

ImageLoader::ImageLoader(const data::ImageDataset &set,
                         data::MultiCropConfig multiCrop, int64_t channels,
                         int64_t batch, uint64_t seed, int64_t workers,
                         DataShard shard)
    : ImageLoader(set, ImageTransform{0, channels, nullptr, {}, {}}, {},
                  std::move(multiCrop), batch, 0, seed, workers, shard) {}

ImageLoader::ImageLoader(const data::ImageDataset &set,
                         ImageTransform transform, data::MixConfig mix,
                         std::optional<data::MultiCropConfig> multiCrop,
                         int64_t batch, int64_t classes, uint64_t seed,
                         int64_t workers, DataShard shard)
    : set(set), transform(std::move(transform)), mix(mix),
      multiCrop(std::move(multiCrop)), batch(batch), classes(classes),
      seed(seed), workers(std::clamp<int64_t>(workers, 1, kMaxWorkers)),
      shard(shard) {
  if (batch < 1)
    throw std::runtime_error("the image batch size must be positive");
  if (batchesPerEpoch() < 1)
    throw std::runtime_error(set.description() +
                             ": fewer images than one batch of " +
                             std::to_string(batch));
  start();
}

ImageLoader::~ImageLoader() { stop(); }

void ImageLoader::start() {
  stopping = false;
  // The run's signals go to the training thread (RunSignals.h).
  withRunSignalsBlocked([&] {
    for (int64_t i = 0; i < workers; ++i)
      threads.emplace_back([this] { work(); });
  });
}

void ImageLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  for (std::thread &t : threads)
    t.join();
  threads.clear();
}

void ImageLoader::seek(uint64_t position) {
  stop();
  ready.clear();
  failure = nullptr;
  served = shard.local(position);
  nextBatch = nextToMake = served / uint64_t(batch);
  start();
}

std::vector<int64_t> ImageLoader::samplesOf(uint64_t epoch,
                                            uint64_t index) const {
  uint64_t n = uint64_t(set.size());
  std::lock_guard<std::mutex> lock(orderMutex);
  std::vector<uint64_t> &order = orders[epoch];
  if (order.empty()) {
    // Fisher-Yates with the draws written out: the same order everywhere.
    order.resize(n);
    for (uint64_t i = 0; i < n; ++i)
      order[i] = i;
    std::mt19937_64 rng = generator(seed, epoch, ~uint64_t(0));
    for (uint64_t i = n - 1; i > 0; --i)
      std::swap(order[i], order[rng() % (i + 1)]);
  }
  std::vector<int64_t> samples(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i)
    samples[size_t(i)] = int64_t(order[index * uint64_t(batch) + uint64_t(i)]);
  // Keep two epochs: the oldest other one goes.
  if (orders.size() > 2)
    orders.erase(orders.begin()->first == epoch ? std::next(orders.begin())
                                                : orders.begin());
  return samples;
}

ImageBatch ImageLoader::make(uint64_t index) const {
  // Batch `index` is batch index % batchesPerEpoch of its epoch: the last
  // partial batch of every epoch is dropped.
  uint64_t perEpoch = uint64_t(batchesPerEpoch());
  std::vector<int64_t> samples = samplesOf(index / perEpoch, index % perEpoch);
  ImageBatch b;
  b.batch = batch;
  if (multiCrop) {
    b.labels.resize(size_t(batch));
    for (int64_t i = 0; i < batch; ++i) {
      std::mt19937_64 rng = generator(seed, index, uint64_t(i));
      std::vector<data::Image> views = data::multiCropViews(
          toChannels(set.image(samples[size_t(i)]), transform.channels),
          *multiCrop, rng);
      b.views.resize(views.size());
      for (size_t v = 0; v < views.size(); ++v) {
        size_t pixels = views[v].pixels.size();
        b.views[v].resize(size_t(batch) * pixels);
        std::copy(views[v].pixels.begin(), views[v].pixels.end(),
                  b.views[v].begin() + i * int64_t(pixels));
      }
      b.labels[size_t(i)] = set.label(samples[size_t(i)]);
    }
    return b;
  }
  int64_t pixels = transform.channels * transform.size * transform.size;
  b.images.resize(size_t(batch * pixels));
  b.labels.resize(size_t(batch));
  b.targets.resize(size_t(batch * classes));
  for (int64_t i = 0; i < batch; ++i) {
    std::mt19937_64 rng = generator(seed, index, uint64_t(i));
    data::Image x = transform(set.image(samples[size_t(i)]), rng);
    std::copy(x.pixels.begin(), x.pixels.end(), b.images.begin() + i * pixels);
    b.labels[size_t(i)] = set.label(samples[size_t(i)]);
  }
  std::mt19937_64 rng = generator(seed, index, uint64_t(batch));
  data::mixBatch(b.images.data(), batch, transform.channels, transform.size,
                 transform.size, b.labels.data(), classes, b.targets.data(),
                 mix, rng);
  return b;
}

void ImageLoader::work() {
  const size_t depth = size_t(workers) + 1;
  for (;;) {
    uint64_t index;
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock,
                   [&] { return stopping || nextToMake < nextBatch + depth; });
      if (stopping)
        return;
      index = nextToMake++;
    }
    // A failure (a corrupt file) reaches the trainer through next().
    try {
      ImageBatch b =
          make(shard.global(index * uint64_t(batch)) / uint64_t(batch));
      std::lock_guard<std::mutex> lock(mutex);
      ready.emplace_back(index, std::move(b));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failure)
        failure = std::current_exception();
    }
    changed.notify_all();
  }
}

void ImageLoader::next(ImageBatch &out) {
  std::unique_lock<std::mutex> lock(mutex);
  auto found = ready.end();
  changed.wait(lock, [&] {
    found = std::find_if(ready.begin(), ready.end(),
                         [&](auto &entry) { return entry.first == nextBatch; });
    return found != ready.end() || failure;
  });
  if (found == ready.end())
    std::rethrow_exception(failure);
  out = std::move(found->second);
  ready.erase(found);
  ++nextBatch;
  served += uint64_t(batch);
  lock.unlock();
  changed.notify_all();
}

} // namespace lap::train
