//===- Segmentation.cpp - lapc-run eval --task segmentation -----*- C++ -*-===//
//
// The linear segmentation probe (analysis/Segmentation.h) on a trained
// image model's frozen patch tokens: the residual stream after the last
// block, or the last few concatenated per patch as DINOv2's multi-layer
// probe reads them (lap_model_features; a dino run's teacher), for the images
// of a segmentation set in ADE20K's layout (data/SegmentationData.h) resized to
// the model's image size. Writes segmentation.json (the scores, per-class
// IoU, the probe's settings) and segmentation.png (image, truth and
// prediction of a few validation images, side by side).
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Segmentation.h"
#include "runtime/analysis/Plot.h"
#include "runtime/data/SegmentationData.h"
#include "runtime/platform/Files.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/train/DinoRegime.h"
#include "runtime/train/ImageLoader.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <stdexcept>

using namespace lap;

namespace {

/// Images of one split, model-ready, with their label maps.
struct Split {
  std::vector<float> features;    ///< [images, patches, layers * width]
  std::vector<int32_t> labels;    ///< [images, size, size]
  std::vector<data::Image> shown; ///< the first few, before normalisation
  int64_t images = 0;
};

/// `samples` (at most `limit`; 0: all) through the model of `spec` in
/// batches: the patch tokens of the last `last` blocks, side by side.
Split embedSplit(ModelCalls &calls, const dsl::Spec &spec, const float *params,
                 const std::vector<data::SegmentationSample> &samples,
                 int64_t limit, int64_t classes, int64_t batch, int64_t keep,
                 int64_t last) {
  const nlohmann::json &m = calls.model().manifest();
  const int64_t size = spec.model.imageSize, channels = spec.model.channels,
                grid = size / spec.model.patch, patches = grid * grid;
  const int64_t width = m["features"]["width"],
                layers = m["features"]["layers"];
  const int64_t tokens = m["images"]["tokens"][0];
  const int64_t second =
      m["batch"][1]["shape"][1].get<int64_t>(); // targets or teacher width
  std::vector<float> mean, std;
  train::defaultNormalization(channels, mean, std);

  Split out;
  out.images = limit > 0 ? std::min<int64_t>(limit, int64_t(samples.size()))
                         : int64_t(samples.size());
  const int64_t dims = last * width;
  out.features.resize(size_t(out.images * patches * dims));
  std::vector<float> pixels(size_t(batch * channels * size * size)),
      zeros(size_t(batch * second), 0.0f),
      streams(size_t(layers * batch * tokens * width));
  for (int64_t begin = 0; begin < out.images; begin += batch) {
    const int64_t n = std::min(batch, out.images - begin);
    for (int64_t i = 0; i < n; ++i) {
      data::LabelledImage s = data::loadSegmentationSample(
          samples[size_t(begin + i)], size, classes);
      if (s.image.channels != channels)
        throw std::runtime_error(fmt::format(
            "{}: {} channels; the model reads {}",
            samples[size_t(begin + i)].image, s.image.channels, channels));
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t p = 0; p < size * size; ++p)
          pixels[size_t(((i * channels) + c) * size * size + p)] =
              (s.image.pixels[size_t(c * size * size + p)] - mean[size_t(c)]) /
              std[size_t(c)];
      out.labels.insert(out.labels.end(), s.labels.begin(), s.labels.end());
      if (begin + i < keep)
        out.shown.push_back(std::move(s.image));
    }
    const void *tensors[] = {pixels.data(), zeros.data()};
    calls.features(params, {n, 0, 2, tensors}, streams.data());
    // Each image's patch tokens ([registers, CLS, patches]) of the last
    // blocks, the earliest first.
    for (int64_t l = 0; l < last; ++l) {
      const float *layer =
          streams.data() + (layers - last + l) * n * tokens * width;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < patches; ++p) {
          const float *token =
              layer + (i * tokens + tokens - patches + p) * width;
          std::copy(token, token + width,
                    out.features.begin() + ((begin + i) * patches + p) * dims +
                        l * width);
        }
    }
  }
  return out;
}

/// A class's colour in the picture: spread over the hues; unlabelled
/// black.
std::array<uint8_t, 3> classColour(int32_t c) {
  if (c < 0)
    return {0, 0, 0};
  return analysis::seriesColor(size_t(c));
}

/// Rows of (image, truth, prediction), each pixel drawn as a square of
/// `zoom` so that an image is at least 128 pixels wide.
void writePicture(const std::string &path, const Split &validation,
                  const std::vector<int32_t> &predictions, int64_t size) {
  const int64_t rows = int64_t(validation.shown.size()), cols = 3;
  const int64_t zoom = std::max<int64_t>(1, (128 + size - 1) / size),
                side = size * zoom;
  std::vector<uint8_t> rgb(size_t(rows * side * cols * side * 3), 255);
  auto put = [&](int64_t row, int64_t col, int64_t y, int64_t x,
                 std::array<uint8_t, 3> colour) {
    for (int64_t dy = 0; dy < zoom; ++dy)
      for (int64_t dx = 0; dx < zoom; ++dx) {
        size_t at = size_t(((row * side + y * zoom + dy) * cols * side +
                            col * side + x * zoom + dx) *
                           3);
        for (int k = 0; k < 3; ++k)
          rgb[at + size_t(k)] = colour[size_t(k)];
      }
  };
  for (int64_t r = 0; r < rows; ++r) {
    const data::Image &image = validation.shown[size_t(r)];
    for (int64_t y = 0; y < size; ++y)
      for (int64_t x = 0; x < size; ++x) {
        std::array<uint8_t, 3> pixel;
        for (int64_t k = 0; k < 3; ++k)
          pixel[size_t(k)] = uint8_t(std::lround(
              255.0f *
              std::clamp(image.at(std::min(k, image.channels - 1), y, x), 0.0f,
                         1.0f)));
        put(r, 0, y, x, pixel);
        put(r, 1, y, x,
            classColour(validation.labels[size_t((r * size + y) * size + x)]));
        put(r, 2, y, x,
            classColour(predictions[size_t((r * size + y) * size + x)]));
      }
  }
  analysis::writeRgbPng(path, rgb.data(), int(cols * side), int(rows * side));
}

} // namespace

int lap::cli::evaluateSegmentation(const EvalOptions &options) {
  ModelInstance run(options.model, options.device);
  const LoadedModel &model = run.model;
  dsl::Spec spec = train::specOf(model);
  if (spec.model.family == dsl::Family::GPT)
    throw std::runtime_error(options.model +
                             ": segmentation evaluates image models");
  if (options.data.empty())
    throw std::runtime_error("--task segmentation needs --data (a set in "
                             "ADE20K's layout)");
  std::string checkpoint =
      train::checkpointOf(options.runDir, options.checkpoint);
  LoadedCheckpoint loaded = run.restore(checkpoint);
  // A dino run is evaluated by its teacher, as DINO evaluates.
  device::Array teacher;
  const float *params = run.params.data();
  if (spec.train.regime == dsl::Regime::DINO) {
    teacher = device::Array(run.device, model.parameterElements());
    train::restoreTeacher(model, loaded, teacher.data(), run.device);
    params = teacher.data();
  }
  fmt::print("model {} at step {} ({}){}\n", spec.name, loaded.state.step,
             checkpoint,
             spec.train.regime == dsl::Regime::DINO ? ", its teacher" : "");

  const int64_t size = spec.model.imageSize, grid = size / spec.model.patch;
  const int64_t batch = model.maxBatch(), keep = 4;
  const int64_t width = model.manifest()["features"]["width"],
                blocks = model.manifest()["features"]["layers"].get<int64_t>() -
                         1; // the stream after the embedding is no block's
  if (options.layers > blocks)
    throw std::runtime_error(fmt::format("--layers {}: {} has {} blocks",
                                         options.layers, options.model,
                                         blocks));
  std::vector<data::SegmentationSample> trainSamples =
      data::segmentationSamples(options.data, options.trainSplit);
  std::vector<data::SegmentationSample> valSamples =
      data::segmentationSamples(options.data, options.valSplit);
  Split train =
      embedSplit(run.calls, spec, params, trainSamples, options.images,
                 options.classes, batch, 0, options.layers);
  Split validation =
      embedSplit(run.calls, spec, params, valSamples, options.images,
                 options.classes, batch, keep, options.layers);
  analysis::LinearProbeOptions probe;
  probe.seed = options.seed;
  analysis::SegmentationResult r = analysis::segmentationProbe(
      {train.features.data(), train.labels.data(), train.images},
      {validation.features.data(), validation.labels.data(), validation.images},
      grid, size, options.layers * width, options.classes, probe,
      int64_t(validation.shown.size()));

  std::error_code error;
  std::filesystem::create_directories(options.out, error);
  if (error)
    throw std::runtime_error(options.out +
                             ": cannot create it: " + error.message());
  nlohmann::json iou = nlohmann::json::array();
  for (double v : r.validation.iou)
    iou.push_back(std::isnan(v) ? nlohmann::json() : nlohmann::json(v));
  nlohmann::json doc = {{"model", spec.name},
                        {"checkpoint", checkpoint},
                        {"features", options.layers == 1
                                         ? "last block's patch tokens"
                                         : fmt::format("the last {} blocks' "
                                                       "patch tokens",
                                                       options.layers)},
                        {"layers", options.layers},
                        {"data", options.data},
                        {"classes", options.classes},
                        {"train_images", train.images},
                        {"validation_images", validation.images},
                        {"image_size", size},
                        {"patch_grid", grid},
                        {"mIoU", r.validation.meanIoU},
                        {"pixel_accuracy", r.validation.pixelAccuracy},
                        {"train_mIoU", r.train.meanIoU},
                        {"probe_patch_accuracy", r.probe.testAccuracy},
                        {"probe",
                         {{"epochs", probe.epochs},
                          {"lr", probe.lr},
                          {"batch", probe.batch},
                          {"seed", probe.seed}}},
                        {"iou", iou}};
  platform::writeFileAtomically(options.out + "/segmentation.json",
                                doc.dump(2) + "\n");
  writePicture(options.out + "/segmentation.png", validation, r.predictions,
               size);
  fmt::print("segmentation ({} classes, {} train and {} validation images "
             "at {} px, {}x{} patches): mIoU {:.4f}, pixel accuracy {:.4f} "
             "(train mIoU {:.4f})\nwrote {}/segmentation.json, "
             "{}/segmentation.png\n",
             options.classes, train.images, validation.images, size, grid, grid,
             r.validation.meanIoU, r.validation.pixelAccuracy, r.train.meanIoU,
             options.out, options.out);
  return 0;
}
