//===- ImageRegime.cpp - Supervised image classification --------*- C++ -*-===//

#include "runtime/train/ImageRegime.h"

#include "runtime/kernels/cpu/Parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace lap::train {

namespace {

/// PREFIX-KIND-idxN-ubyte, gzipped or not.
std::string idxFile(const std::string &prefix, const std::string &kind) {
  std::string name = prefix + "-" + kind + "-ubyte";
  if (fs::exists(name + ".gz"))
    return name + ".gz";
  if (fs::exists(name))
    return name;
  throw std::runtime_error(
      name + "[.gz]: no such file (format: idx takes the path prefix, "
             "e.g. /usr/share/datasets/fashion-mnist/train)");
}

/// The CIFAR batch files of `path`: the file itself, or the directory's
/// files named like the split (data_batch_* / train.bin for training).
std::vector<std::string> cifarFiles(const std::string &path, bool train,
                                    bool cifar100) {
  if (!fs::is_directory(path))
    return {path};
  std::vector<std::string> files;
  for (const auto &entry : fs::directory_iterator(path)) {
    std::string name = entry.path().filename().string();
    bool match = cifar100 ? name == (train ? "train.bin" : "test.bin")
                          : (train ? name.rfind("data_batch_", 0) == 0
                                   : name == "test_batch.bin");
    if (match)
      files.push_back(entry.path().string());
  }
  if (files.empty())
    throw std::runtime_error(path + ": no CIFAR " +
                             (train ? "training" : "test") +
                             " batches in this directory");
  std::sort(files.begin(), files.end());
  return files;
}

std::unique_ptr<data::ImageDataset>
openSplit(const dsl::DataSpec &data, const std::string &path, bool train) {
  switch (data.format) {
  case dsl::DataFormat::IDX:
    return data::readIdx(idxFile(path, "images-idx3"),
                         idxFile(path, "labels-idx1"));
  case dsl::DataFormat::CIFAR10:
    return data::readCifar(cifarFiles(path, train, false), false);
  case dsl::DataFormat::CIFAR100:
    return data::readCifar(cifarFiles(path, train, true), true);
  case dsl::DataFormat::ImageFolder:
    return data::openImageFolder(path, data.strict);
  default:
    throw std::runtime_error(
        "the supervised regime reads idx, cifar10, cifar100 or "
        "imagefolder data");
  }
}

} // namespace

ImageSplits openImageSplits(const dsl::DataSpec &data) {
  ImageSplits splits;
  splits.train = openSplit(data, data.train, true);
  if (!data.val.empty())
    splits.val = openSplit(data, data.val, false);
  return splits;
}

std::unique_ptr<data::ImageDataset>
openAnalysisSplit(const dsl::DataSpec &data) {
  return data.val.empty() ? openSplit(data, data.train, true)
                          : openSplit(data, data.val, false);
}

ImageTransform evaluationTransform(const dsl::ModelSpec &model) {
  ImageTransform t;
  t.size = model.imageSize;
  t.channels = model.channels;
  defaultNormalization(model.channels, t.mean, t.std);
  return t;
}

std::vector<int64_t> evaluationImages(int64_t size, int64_t limit) {
  int64_t count = limit > 0 ? std::min(limit, size) : size;
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    indices[size_t(i)] = i * size / count;
  return indices;
}

void loadImages(const data::ImageDataset &set, const ImageTransform &transform,
                const int64_t *indices, int64_t n, float *images,
                std::vector<int32_t> &labels) {
  const int64_t pixels = transform.channels * transform.size * transform.size;
  std::mt19937_64 unused; // the evaluation transform draws nothing
  for (int64_t i = 0; i < n; ++i) {
    data::Image x = transform(set.image(indices[i]), unused);
    std::copy(x.pixels.begin(), x.pixels.end(), images + i * pixels);
    labels.push_back(set.label(indices[i]));
  }
}

nlohmann::json evaluateImages(ModelCalls &calls, const float *params,
                              const data::ImageDataset &set,
                              const ImageTransform &transform, int64_t batch,
                              int64_t limit) {
  // Targets and logits have the model's classes (the data may have fewer).
  const int64_t classes =
      calls.model().manifest()["outputs"][1]["shape"].back().get<int64_t>();
  const int64_t pixels = transform.channels * transform.size * transform.size;
  const std::vector<int64_t> chosen = evaluationImages(set.size(), limit);
  const int64_t total = int64_t(chosen.size());
  std::vector<float> images(size_t(batch * pixels)),
      targets(size_t(batch * classes)), logits(size_t(batch * classes));
  int64_t top1 = 0, top5 = 0;
  double nats = 0;
  for (int64_t begin = 0; begin < total; begin += batch) {
    int64_t n = std::min(batch, total - begin);
    std::vector<int32_t> labels;
    loadImages(set, transform, chosen.data() + begin, n, images.data(), labels);
    std::fill(targets.begin(), targets.end(), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      targets[size_t(i * classes + labels[size_t(i)])] = 1.0f;
    const void *tensors[] = {images.data(), targets.data()};
    lap_batch view{n, 0, 2, tensors};
    float loss = calls.forward(params, view, logits.data());
    nats += double(loss) * double(n);
    for (int64_t i = 0; i < n; ++i) {
      const float *row = logits.data() + i * classes;
      const int32_t label = labels[size_t(i)];
      float truth = row[label];
      // Rank of the true class: how many classes score at least as high
      // (ties and NaN count against it, so neither a constant nor a broken
      // model is credited).
      int64_t above = 0;
      for (int64_t k = 0; k < classes; ++k)
        above += k != label && !(row[k] < truth);
      top1 += above < 1;
      top5 += above < 5;
    }
  }
  if (total == 0)
    throw std::runtime_error(set.description() + ": no images to evaluate");
  return {{"top1", double(top1) / double(total)},
          {"top5", double(top5) / double(total)},
          {"val_loss", nats / double(total)}};
}

ImageRegime::ImageRegime(const dsl::Spec &spec, ModelCalls &calls,
                         const float *params, int64_t batch, uint64_t seed,
                         std::FILE *log, DataShard shard)
    : spec(spec), calls(calls), params(params), batch(batch),
      splits(openImageSplits(spec.train.data)) {
  const dsl::ModelSpec &m = spec.model;
  for (const auto *set : {splits.train.get(), splits.val.get()})
    if (set && set->numClasses() > m.classes)
      throw std::runtime_error(fmt::format(
          "{}: {} classes, but model '{}' has {}", set->description(),
          set->numClasses(), spec.name, m.classes));
  fmt::print(log, "data: train {}\n", splits.train->description());
  if (splits.val)
    fmt::print(log, "data: test  {}\n", splits.val->description());
  else
    fmt::print(log, "data: no test split (data.val): no evaluation\n");

  ImageTransform train = evaluationTransform(m);
  train.augment = &spec.train.augment;
  const dsl::AugmentSpec &a = spec.train.augment;
  data::MixConfig mix;
  mix.mixupAlpha = a.mixup;
  mix.cutmixAlpha = a.cutmix;
  mix.switchProb = a.switchProb;
  mix.prob = a.mixProb;
  mix.labelSmoothing = spec.train.labelSmoothing;
  // By default as many workers as the rank has threads.
  int64_t workers = spec.train.data.workers > 0
                        ? spec.train.data.workers
                        : std::max<int64_t>(1, omp_get_max_threads());
  loader = std::make_unique<ImageLoader>(*splits.train, train, mix, batch,
                                         m.classes, seed, workers, shard);
}

int64_t ImageRegime::stepsPerEpoch(int64_t accumulation) const {
  return std::max<int64_t>(1, loader->batchesPerEpoch() / accumulation);
}

int64_t ImageRegime::next(lap_batch &out) {
  loader->next(current);
  pointers = {current.images.data(), current.targets.data()};
  out = {current.batch, 0, 2, pointers.data()};
  return current.batch;
}

nlohmann::json ImageRegime::evaluate(int64_t batches) {
  if (!splits.val)
    throw std::runtime_error(
        "the spec names no test split (data.val) to evaluate on");
  return evaluateImages(calls, params, *splits.val,
                        evaluationTransform(spec.model), batch,
                        batches * batch);
}

} // namespace lap::train
