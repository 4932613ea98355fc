//===- DinoRegime.cpp - DINO self-distillation ------------------*- C++ -*-===//

#include "runtime/train/DinoRegime.h"

#include "runtime/analysis/Probe.h"
#include "runtime/comm/Communicator.h"
#include "runtime/kernels/cpu/Parallel.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace lap::train {

namespace {

const char *const kLastLayer = "dino_head.last_layer.";
const char *const kCenter = "dino.center";
const char *const kTeacher = "teacher.";

/// The teacher's entropy below this fraction of log K: one prototype takes
/// every image (DINO's first collapse); above (1 - it) with the student
/// matching it: the uniform collapse.
constexpr double kCollapseFraction = 0.02;

/// The embeddings of `indices` of `set`, [n, width], and their labels.
void embed(ModelCalls &calls, const float *params,
           const data::ImageDataset &set, const ImageTransform &transform,
           int64_t batch, const std::vector<int64_t> &indices,
           std::vector<float> &out, std::vector<int32_t> &labels) {
  const LoadedModel &model = calls.model();
  const int64_t width = model.manifest()["features"]["width"];
  const int64_t pixels = transform.channels * transform.size * transform.size;
  const int64_t k = model.manifest()["outputs"][1]["shape"].back();
  std::vector<float> images(size_t(batch * pixels)),
      teacher(size_t(batch * k), 0.0f);
  const int64_t total = int64_t(indices.size());
  out.resize(size_t(total * width));
  labels.clear();
  for (int64_t begin = 0; begin < total; begin += batch) {
    int64_t n = std::min(batch, total - begin);
    loadImages(set, transform, indices.data() + begin, n, images.data(),
               labels);
    const void *tensors[] = {images.data(), teacher.data()};
    calls.embed(params, {n, 0, 2, tensors}, out.data() + begin * width);
  }
}

/// A tensor of a checkpoint's optimizer file the dino regime wrote.
const std::vector<float> &dinoState(const LoadedCheckpoint &checkpoint,
                                    const std::string &name, int64_t elements) {
  auto it = checkpoint.optimizer.tensors.find(name);
  if (it == checkpoint.optimizer.tensors.end() ||
      int64_t(it->second.f32.size()) != elements)
    throw std::runtime_error(checkpoint.path +
                             "/optimizer.safetensors: no DINO state '" + name +
                             "' of " + std::to_string(elements) +
                             " values (not a checkpoint of a dino run?)");
  return it->second.f32;
}

} // namespace

void restoreTeacher(const LoadedModel &model,
                    const LoadedCheckpoint &checkpoint, float *teacher,
                    device::Device &device) {
  for (const ParameterInfo &p : model.parameters())
    device.upload(teacher + p.offset,
                  dinoState(checkpoint, kTeacher + p.name, p.elements).data(),
                  p.elements);
}

nlohmann::json evaluateEmbeddings(ModelCalls &calls, const float *params,
                                  const data::ImageDataset &bank,
                                  const data::ImageDataset &queries,
                                  const ImageTransform &transform,
                                  int64_t batch, int64_t queryImages) {
  const int64_t width = calls.model().manifest()["features"]["width"];
  const int64_t classes = std::max(bank.numClasses(), queries.numClasses());
  std::vector<float> bankFeatures, queryFeatures;
  std::vector<int32_t> bankLabels, queryLabels;
  embed(calls, params, bank, transform, batch,
        evaluationImages(bank.size(), kBankPerQuery * queryImages),
        bankFeatures, bankLabels);
  embed(calls, params, queries, transform, batch,
        evaluationImages(queries.size(), queryImages), queryFeatures,
        queryLabels);
  const int64_t n = int64_t(bankLabels.size()), m = int64_t(queryLabels.size());
  analysis::KnnResult knn = analysis::knnClassifier(
      bankFeatures.data(), bankLabels.data(), n, queryFeatures.data(),
      queryLabels.data(), m, width, classes);
  analysis::LinearProbeResult probe = analysis::linearProbe(
      bankFeatures.data(), bankLabels.data(), n, queryFeatures.data(),
      queryLabels.data(), m, width, classes);
  return {{"knn_top1", knn.top1},
          {"knn_top5", knn.top5},
          {"linear_top1", probe.testAccuracy}};
}

DinoRegime::DinoRegime(const dsl::Spec &spec, ModelCalls &calls,
                       device::Device &device, const float *params,
                       int64_t batch, uint64_t seed, std::FILE *log,
                       DataShard shard, comm::Communicator *ranks)
    : spec(spec), dino(spec.train.dino), calls(calls), model(calls.model()),
      device(device), params(params), log(log), ranks(ranks), batch(batch),
      globalViews(dino.globalCrops), views(dino.globalCrops + dino.localCrops),
      prototypes(spec.model.dinoHead.prototypes),
      splits(openImageSplits(spec.train.data)),
      teacher(device, model.parameterElements()),
      viewGrads(device, model.gradientElements()),
      terms(dino::viewTerms(globalViews, views)),
      center(size_t(prototypes), 0.0f), centerSums(size_t(prototypes), 0.0) {
  const nlohmann::json &images = model.manifest()["images"];
  if (dino.localCrops > 0) {
    std::vector<int64_t> sizes = images["sizes"], tokens = images["tokens"];
    if (sizes.size() < 2 || sizes[1] != dino.localCropSize)
      throw std::runtime_error(fmt::format(
          "{}: no entry for local crops of {} pixels (recompile the spec with "
          "lapc)",
          model.path(), dino.localCropSize));
    localTokens = tokens[1];
  }
  device.copy(teacher.data(), params, teacher.size());
  fmt::print(log, "data: train {}\n", splits.train->description());
  if (splits.val)
    fmt::print(log, "data: test  {} (k-NN and linear probe)\n",
               splits.val->description());
  else
    fmt::print(log, "data: no test split (data.val): no evaluation\n");

  data::MultiCropConfig crops;
  crops.globalCrops = dino.globalCrops;
  crops.globalSize = dino.globalCropSize;
  crops.globalMinScale = dino.globalScaleMin;
  crops.globalMaxScale = dino.globalScaleMax;
  crops.localCrops = dino.localCrops;
  crops.localSize = dino.localCropSize;
  crops.localMinScale = dino.localScaleMin;
  crops.localMaxScale = dino.localScaleMax;
  // DINO's blur radii are pixels of 224-pixel global (96-pixel local)
  // crops: smaller crops get them in proportion, so that a blur removes as
  // much of the image as DINO's does.
  double pixels = double(dino.globalCropSize) / 224.0;
  crops.minSigma *= pixels;
  crops.maxSigma *= pixels;
  defaultNormalization(spec.model.channels, crops.mean, crops.stddev);
  int64_t workers = spec.train.data.workers > 0
                        ? spec.train.data.workers
                        : std::max<int64_t>(1, omp_get_max_threads());
  loader = std::make_unique<ImageLoader>(
      *splits.train, crops, spec.model.channels, batch, seed, workers, shard);
  teacherProbabilities.resize(size_t(globalViews));
  zeros.assign(size_t(batch * prototypes), 0.0f);
  logits.resize(size_t(batch * prototypes));
}

void DinoRegime::setSteps(int64_t total, int64_t perEpoch) {
  steps = total;
  epochSteps = std::max<int64_t>(1, perEpoch);
  freezeSteps = std::llround(dino.freezeLastLayerEpochs * double(epochSteps));
}

int64_t DinoRegime::stepsPerEpoch(int64_t accumulation) const {
  return std::max<int64_t>(1, loader->batchesPerEpoch() / accumulation);
}

int64_t DinoRegime::trainStep(const float *student, float *grads, uint64_t seed,
                              float &loss) {
  loader->next(current);
  const int64_t b = current.batch, k = prototypes;
  const double temperature = teacherTemperature(currentStep);
  // The teacher: logits of the global views, their column sums for the
  // centre, then its centred and sharpened probabilities.
  for (int64_t g = 0; g < globalViews; ++g) {
    const void *tensors[] = {current.views[size_t(g)].data(), zeros.data()};
    calls.forward(teacher.data(), {b, 0, 2, tensors}, logits.data());
    for (int64_t r = 0; r < b; ++r)
      for (int64_t j = 0; j < k; ++j)
        centerSums[size_t(j)] += logits[size_t(r * k + j)];
    centerRows += b;
    auto &p = teacherProbabilities[size_t(g)];
    p.resize(size_t(b * k));
    dino::sharpen(logits.data(), center.data(), b, k, temperature, p.data());
    entropySum += dino::meanEntropy(p.data(), b, k) / double(globalViews);
  }
  // The student: one step per view, weighted into `grads`.
  loss = 0;
  double kl = 0;
  bool first = true;
  for (int64_t v = 0; v < views; ++v) {
    const dino::ViewTerm &term = terms[size_t(v)];
    if (term.teachers.empty())
      continue;
    dino::viewTarget(teacherProbabilities, term.teachers, target);
    const void *tensors[] = {current.views[size_t(v)].data(), target.data()};
    lap_batch view{b, v < globalViews ? 0 : localTokens, 2, tensors};
    uint64_t viewSeed = seed + uint64_t(v) * 0x9E3779B97F4A7C15ull;
    float *out = first ? grads : viewGrads.data();
    float viewLoss = calls.trainStep(student, out, view, viewSeed);
    // grads = w × its view's gradients, then += w × each other view's.
    device.accumulate(grads, out, float(term.weight), model.gradientElements(),
                      first);
    first = false;
    loss += float(term.weight * viewLoss);
    // KL(target || student) = cross-entropy - the target's entropy.
    kl += term.weight * (viewLoss - dino::meanEntropy(target.data(), b, k));
  }
  klSum += kl;
  ++microBatches;
  return b;
}

double DinoRegime::teacherTemperature(int64_t step) const {
  return dino::teacherTemperature(step / epochSteps, dino.warmupTeacherTemp,
                                  dino.teacherTemp,
                                  std::llround(dino.warmupTeacherTempEpochs));
}

void DinoRegime::afterUpdate(const float *student, int64_t step) {
  const double momentum = dino::teacherMomentum(
      step, steps, dino.teacherMomentum, dino.teacherMomentumEnd);
  dino::movingAverage(device, teacher.data(), student,
                      model.parameterElements(), momentum);
  if (ranks && ranks->size() > 1) {
    // Every rank's teacher logits and monitors (DINO's all-reduce of the
    // centre's batch sum).
    std::vector<double> sums = centerSums;
    sums.insert(sums.end(),
                {double(centerRows), double(microBatches), entropySum, klSum});
    ranks->allReduceSum(sums.data(), int64_t(sums.size()));
    std::copy(sums.begin(), sums.begin() + prototypes, centerSums.begin());
    centerRows = int64_t(sums[size_t(prototypes)]);
    microBatches = int64_t(sums[size_t(prototypes) + 1]);
    entropySum = sums[size_t(prototypes) + 2];
    klSum = sums[size_t(prototypes) + 3];
  }
  dino::updateCenter(center, centerSums, centerRows, dino.centerMomentum);
  double entropy = entropySum / double(microBatches),
         kl = klSum / double(microBatches);
  lastMetrics = {{"teacher_entropy", entropy},
                 {"teacher_student_kl", kl},
                 {"teacher_temp", teacherTemperature(step)},
                 {"teacher_momentum", momentum}};
  // Collapse: one prototype for every image, or the teacher uniform and
  // the student matching it (after the first epoch, when both start near
  // uniform).
  double most = std::log(double(prototypes));
  bool collapsing = entropy < kCollapseFraction * most ||
                    (step >= epochSteps &&
                     entropy > (1 - kCollapseFraction) * most && kl < 1e-3);
  if (collapsing && !collapsed)
    fmt::print(log,
               "warning: step {}: the teacher is collapsing (entropy {:.4f} "
               "of at most {:.4f} nats, KL to the student {:.2e}); lower "
               "teacher_temp or raise center_momentum\n",
               step + 1, entropy, most, kl);
  collapsed = collapsing;
  std::fill(centerSums.begin(), centerSums.end(), 0.0);
  centerRows = microBatches = 0;
  entropySum = klSum = 0;
  currentStep = step + 1;
}

bool DinoRegime::frozen(const std::string &name, int64_t step) const {
  bool last = name.rfind(kLastLayer, 0) == 0;
  return (last && step < freezeSteps) ||
         (spec.model.dinoHead.normLastLayer &&
          name == std::string(kLastLayer) + "weight_g");
}

std::vector<TensorRef> DinoRegime::state() {
  std::vector<TensorRef> state;
  const float *t = teacher.data();
  if (!device.onHost()) {
    teacherOnHost.resize(size_t(teacher.size()));
    device.download(teacherOnHost.data(), t, teacher.size());
    t = teacherOnHost.data();
  }
  for (const ParameterInfo &p : model.parameters())
    state.push_back(TensorRef(kTeacher + p.name, p.shape, t + p.offset));
  state.push_back(TensorRef(kCenter, {prototypes}, center.data()));
  return state;
}

void DinoRegime::restore(const LoadedCheckpoint &checkpoint) {
  restoreTeacher(model, checkpoint, teacher.data(), device);
  center = dinoState(checkpoint, kCenter, prototypes);
  currentStep = checkpoint.state.step;
}

nlohmann::json DinoRegime::evaluate(bool student) {
  if (!splits.val)
    throw std::runtime_error(
        "the spec names no test split (data.val) to evaluate on");
  int64_t queries = spec.train.eval.batches * batch;
  return evaluateEmbeddings(calls, student ? params : teacher.data(),
                            *splits.train, *splits.val,
                            evaluationTransform(spec.model), batch, queries);
}

} // namespace lap::train
