//===- Analyze.cpp - lapc-run analyze -----------------------------*- C++ -*-===//
//
// The geometry of token representations, layer by layer, for one trained
// model or two side by side (e.g. a baseline and its Laplacian twin), as
// the Laplacian-heads paper measures it. Image models: accuracy on the
// analysed images, the variance decomposition (within a sequence, between
// sequences, between classes), neural collapse of the sequence means (NC1,
// distance from a simplex ETF, alignment with the classifier rows at the
// last layer) and spectral decay. Language models: spectral decay and the
// collapse of tokens that share a next-token target. Models with learned
// head kinds: each learned head's (alpha, beta), against where it started.
// DINO models: the teacher's features, k-NN and linear-probe accuracy for
// classification. Image models also get PCA pictures: the first three
// principal components of the last layer's patch tokens of a few images as
// RGB, one row per model (pca.png). Writes analysis.json, geometry.csv,
// spectrum.csv and one PNG per measure; prints a table.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Geometry.h"
#include "runtime/analysis/PatchPca.h"
#include "runtime/analysis/Plot.h"
#include "runtime/platform/Csv.h"
#include "runtime/platform/Files.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/train/DinoRegime.h"
#include "runtime/train/ImageRegime.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

using namespace lap;

namespace {

/// One layer's measures; NaN where a measure does not apply.
struct LayerGeometry {
  std::string name;
  analysis::VarianceDecomposition variance{NAN, NAN, NAN, NAN, NAN};
  analysis::NeuralCollapse collapse{NAN, NAN, NAN, {}};
  analysis::SpectralDecay spectral{NAN, {}};
};

/// A head whose (alpha, beta) the model learned.
struct LearnedHead {
  int64_t layer = 0, head = 0;
  std::string kind;
  double alpha = 0, beta = 0, startAlpha = 0, startBeta = 0;
};

struct ModelGeometry {
  std::string name, checkpoint;
  bool language = false;
  int64_t sequences = 0, tokens = 0;
  nlohmann::json accuracy;
  std::vector<LayerGeometry> layers;
  std::vector<LearnedHead> learned;
  /// Image models: the last layer's patch tokens of the first images, as
  /// PCA colours, and those images.
  std::optional<analysis::PatchPca> pca;
  std::vector<data::Image> pcaImages;
};

/// Images of the PCA pictures.
constexpr int64_t kPcaImages = 6;

/// The learned heads' coefficients in `params`: column i of
/// blocks.l.attn.coefficients [2, N] is the layer's i-th learned head.
std::vector<LearnedHead> learnedHeads(const LoadedModel &model,
                                      const dsl::Spec &spec,
                                      const float *params) {
  std::vector<LearnedHead> out;
  const dsl::AttentionSpec &a = spec.attention;
  for (size_t l = 0; l < a.layers.size(); ++l) {
    std::vector<int64_t> heads = a.learnedHeads(l);
    std::string name = fmt::format("blocks.{}.attn.coefficients", l);
    for (const ParameterInfo &p : model.parameters()) {
      if (p.name != name)
        continue;
      if (p.elements != 2 * int64_t(heads.size()))
        throw std::runtime_error(model.path() + ": " + name + " holds " +
                                 std::to_string(p.elements) + " values for " +
                                 std::to_string(heads.size()) +
                                 " learned heads");
      const float *c = params + p.offset;
      for (size_t i = 0; i < heads.size(); ++i) {
        dsl::HeadKind kind = a.kind(a.layers[l][size_t(heads[i])]);
        out.push_back({int64_t(l), heads[i], std::string(kind.name), c[i],
                       c[heads.size() + i], kind.alpha, kind.beta});
      }
    }
  }
  return out;
}

/// Representations of every layer for a set of sequences: [layers][N, T, C].
struct Streams {
  int64_t n = 0, t = 0, c = 0;
  std::vector<std::vector<float>> layers;

  /// Appends the rows of one lap_model_features call ([layers, B, T, C]).
  void append(const std::vector<float> &out, int64_t batch) {
    size_t rows = size_t(batch * t * c);
    for (size_t l = 0; l < layers.size(); ++l)
      layers[l].insert(layers[l].end(), out.begin() + l * rows,
                       out.begin() + (l + 1) * rows);
    n += batch;
  }
};

/// `params` are on the model's device; `hostParams` what the host reads.
ModelGeometry analyzeImages(ModelCalls &calls, const dsl::Spec &spec,
                            const float *params, const float *hostParams,
                            int64_t samples) {
  const LoadedModel &model = calls.model();
  std::unique_ptr<data::ImageDataset> opened =
      train::openAnalysisSplit(spec.train.data);
  const data::ImageDataset &set = *opened;
  const bool dino = spec.model.family == dsl::Family::DINO;
  // The batch's second tensor: targets [B, classes], or the teacher's
  // probabilities [B, prototypes] (unused by the features).
  const int64_t batch = model.maxBatch(),
                outputs = model.manifest()["outputs"][1]["shape"].back(),
                classes = dino ? set.numClasses() : spec.model.classes;
  const std::vector<int64_t> chosen =
      train::evaluationImages(set.size(), samples);
  const int64_t count = int64_t(chosen.size());
  train::ImageTransform transform = train::evaluationTransform(spec.model);

  ModelGeometry g;
  if (dino) {
    std::unique_ptr<data::ImageDataset> bank =
        train::openImageSplits(spec.train.data).train;
    g.accuracy = train::evaluateEmbeddings(calls, params, *bank, set, transform,
                                           batch, samples);
  } else {
    g.accuracy =
        train::evaluateImages(calls, params, set, transform, batch, samples);
  }
  const nlohmann::json &f = model.manifest()["features"];
  Streams s;
  s.t = model.maxSeq();
  s.c = f["width"];
  s.layers.resize(f["layers"].get<size_t>());
  int64_t pixels = transform.channels * transform.size * transform.size;
  std::vector<float> images(size_t(batch * pixels)),
      targets(size_t(batch * outputs)),
      out(s.layers.size() * size_t(batch * s.t * s.c));
  std::vector<int32_t> labels;
  for (int64_t begin = 0; begin < count; begin += batch) {
    int64_t n = std::min(batch, count - begin);
    train::loadImages(set, transform, chosen.data() + begin, n, images.data(),
                      labels);
    const void *tensors[] = {images.data(), targets.data()};
    calls.features(params, {n, 0, 2, tensors}, out.data());
    s.append(out, n);
  }
  // Collapse is measured over the classes the subset holds, renumbered;
  // the classifier rows (which act on the last layer, through the final
  // norm) follow.
  std::vector<int32_t> present(labels.begin(), labels.end());
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  std::vector<int32_t> renumbered;
  for (int32_t label : labels)
    renumbered.push_back(
        int32_t(std::lower_bound(present.begin(), present.end(), label) -
                present.begin()));
  std::vector<float> head;
  for (const ParameterInfo &p : model.parameters())
    if (p.name == "head.weight")
      for (int32_t k : present)
        head.insert(head.end(), hostParams + p.offset + k * s.c,
                    hostParams + p.offset + (k + 1) * s.c);
  const int64_t k = int64_t(present.size());
  for (size_t l = 0; l < s.layers.size(); ++l) {
    LayerGeometry layer;
    layer.name = f["names"][l];
    const float *x = s.layers[l].data();
    layer.variance = analysis::varianceDecomposition(x, s.n, s.t, s.c,
                                                     labels.data(), classes);
    std::vector<double> means = analysis::sequenceMeans(x, s.n, s.t, s.c);
    bool last = l + 1 == s.layers.size();
    layer.collapse =
        analysis::neuralCollapse(means.data(), s.n, s.c, renumbered.data(), k,
                                 last && !head.empty() ? head.data() : nullptr);
    layer.spectral = analysis::spectralDecay(x, s.n, s.t, s.c);
    g.layers.push_back(std::move(layer));
  }
  g.sequences = s.n;
  g.tokens = s.t;

  // PCA pictures: the patch tokens (after registers and CLS) of the last
  // layer's first images.
  const int64_t grid = spec.model.imageSize / spec.model.patch,
                skip = s.t - grid * grid, shown = std::min(kPcaImages, s.n);
  std::vector<float> patches;
  const std::vector<float> &last = s.layers.back();
  for (int64_t i = 0; i < shown; ++i) {
    const float *first = last.data() + (i * s.t + skip) * s.c;
    patches.insert(patches.end(), first, first + grid * grid * s.c);
    g.pcaImages.push_back(set.image(chosen[size_t(i)]));
  }
  if (shown > 0)
    g.pca = analysis::patchPca(patches.data(), shown, grid, s.c);
  return g;
}

ModelGeometry analyzeText(ModelCalls &calls, const dsl::Spec &spec,
                          const float *params, const std::string &runDir,
                          int64_t samples, int64_t topTokens) {
  const LoadedModel &model = calls.model();
  const int64_t batch = model.maxBatch();
  const int64_t seq = std::min(train::sequenceLength(spec), model.maxSeq());
  train::LmRegime lm(spec, calls, params, runDir, batch, seq, stdout);
  ModelGeometry g;
  g.language = true;
  g.accuracy = lm.evaluate(spec.train.eval.batches);
  const nlohmann::json &f = model.manifest()["features"];
  Streams s;
  s.t = seq;
  s.c = f["width"];
  s.layers.resize(f["layers"].get<size_t>());
  std::vector<float> out(s.layers.size() * size_t(batch * s.t * s.c));
  std::vector<int32_t> targets;
  const LmLoader &source = lm.validationLoader();
  uint64_t available = source.valWindows() / uint64_t(batch);
  auto it = source.validation(
      std::min<uint64_t>(uint64_t((samples + batch - 1) / batch), available));
  LmBatch b;
  while (it.next(b)) {
    std::vector<const void *> tensors = b.tensors();
    calls.features(params,
                   {b.batch, b.seq, int32_t(tensors.size()), tensors.data()},
                   out.data());
    s.append(out, b.batch);
    targets.insert(targets.end(), b.targets.begin(), b.targets.end());
  }
  if (s.n == 0)
    throw std::runtime_error(
        runDir + ": the validation split holds no full batch to analyse");
  for (size_t l = 0; l < s.layers.size(); ++l) {
    LayerGeometry layer;
    layer.name = f["names"][l];
    const float *x = s.layers[l].data();
    // A window has no class: its tokens around its mean, and the means.
    layer.variance =
        analysis::varianceDecomposition(x, s.n, s.t, s.c, nullptr, 0);
    layer.collapse =
        analysis::tokenCollapse(x, s.n, s.t, s.c, targets.data(), topTokens);
    layer.spectral = analysis::spectralDecay(x, s.n, s.t, s.c);
    g.layers.push_back(std::move(layer));
  }
  g.sequences = s.n;
  g.tokens = s.t;
  return g;
}

/// JSON for a number that may be NaN (null).
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

/// The measures tabulated, plotted and written to CSV, by name.
struct Measure {
  const char *key, *title;
  double (*get)(const LayerGeometry &);
  bool logY = false;
};
const std::vector<Measure> &measures(bool language) {
  static const std::vector<Measure> image = {
      {"within_sequence", "within-sequence variance (fraction)",
       [](const LayerGeometry &l) { return l.variance.withinSequence; }},
      {"between_classes", "between-class variance (fraction)",
       [](const LayerGeometry &l) { return l.variance.betweenClasses; }},
      {"nc1", "NC1 of sequence means",
       [](const LayerGeometry &l) { return l.collapse.nc1; }, true},
      {"etf_distance", "distance from a simplex ETF",
       [](const LayerGeometry &l) { return l.collapse.etfDistance; }},
      {"components_99", "principal components for 99% (per image)",
       [](const LayerGeometry &l) { return l.spectral.meanComponents99; }},
  };
  static const std::vector<Measure> text = {
      {"within_sequence", "within-sequence variance (fraction)",
       [](const LayerGeometry &l) { return l.variance.withinSequence; }},
      {"token_nc1", "NC1 of tokens by next-token target",
       [](const LayerGeometry &l) { return l.collapse.nc1; }, true},
      {"token_etf_distance", "distance from a simplex ETF (next-token classes)",
       [](const LayerGeometry &l) { return l.collapse.etfDistance; }},
      {"components_99", "principal components for 99% (per sequence)",
       [](const LayerGeometry &l) { return l.spectral.meanComponents99; }},
  };
  return language ? text : image;
}

void writeOutputs(const std::vector<ModelGeometry> &models,
                  const std::string &dir) {
  std::filesystem::create_directories(dir);
  const auto &shown = measures(models[0].language);
  nlohmann::json doc = nlohmann::json::array();
  std::string csv = "model,layer,within_sequence,between_sequences,between_"
                    "classes,within_classes,nc1,etf_distance,classifier_"
                    "alignment,components_99\n",
              spectrum = "model,layer,index,fraction\n";
  auto field = [](double v) {
    return std::isfinite(v) ? fmt::format("{:.6g}", v) : "";
  };
  for (const ModelGeometry &m : models) {
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerGeometry &l : m.layers) {
      const auto &v = l.variance;
      const auto &c = l.collapse;
      layers.push_back({{"layer", l.name},
                        {"within_sequence", number(v.withinSequence)},
                        {"between_sequences", number(v.betweenSequences)},
                        {"between_classes", number(v.betweenClasses)},
                        {"within_classes", number(v.withinClasses)},
                        {"total_variance", number(v.total)},
                        {"nc1", number(c.nc1)},
                        {"etf_distance", number(c.etfDistance)},
                        {"classifier_alignment", number(c.classifierAlignment)},
                        {"components_99", number(l.spectral.meanComponents99)},
                        {"spectrum", l.spectral.meanSpectrum}});
      csv += platform::csvRow(
          {m.name, l.name, field(v.withinSequence), field(v.betweenSequences),
           field(v.betweenClasses), field(v.withinClasses), field(c.nc1),
           field(c.etfDistance), field(c.classifierAlignment),
           field(l.spectral.meanComponents99)});
      for (size_t i = 0; i < l.spectral.meanSpectrum.size(); ++i)
        spectrum += platform::csvRow(
            {m.name, l.name, std::to_string(i + 1),
             fmt::format("{:.6g}", l.spectral.meanSpectrum[i])});
    }
    nlohmann::json learned = nlohmann::json::array();
    for (const LearnedHead &h : m.learned)
      learned.push_back({{"layer", h.layer},
                         {"head", h.head},
                         {"kind", h.kind},
                         {"alpha", h.alpha},
                         {"beta", h.beta},
                         {"start", {h.startAlpha, h.startBeta}}});
    doc.push_back({{"model", m.name},
                   {"checkpoint", m.checkpoint},
                   {"sequences", m.sequences},
                   {"tokens_per_sequence", m.tokens},
                   {"evaluation", m.accuracy},
                   {"layers", layers},
                   {"learned_heads", learned}});
  }
  platform::writeFileAtomically(dir + "/geometry.csv", csv);
  platform::writeFileAtomically(dir + "/spectrum.csv", spectrum);
  platform::writeFileAtomically(dir + "/analysis.json", doc.dump(2) + "\n");

  for (const Measure &measure : shown) {
    std::vector<analysis::Series> series;
    for (const ModelGeometry &m : models) {
      analysis::Series s{m.name, {}, {}};
      for (size_t l = 0; l < m.layers.size(); ++l) {
        s.x.push_back(double(l));
        s.y.push_back(measure.get(m.layers[l]));
      }
      series.push_back(std::move(s));
    }
    analysis::PlotOptions options;
    options.title = measure.title;
    options.xLabel = "layer (0: embedding)";
    options.logY = measure.logY;
    analysis::writeLinePlot(dir + "/" + measure.key + ".png", series, options);
  }
}

void printTable(const std::vector<ModelGeometry> &models) {
  for (const ModelGeometry &m : models) {
    fmt::print("{}: {} sequences of {} tokens ({})", m.name, m.sequences,
               m.tokens, m.checkpoint);
    for (auto &[k, v] : m.accuracy.items())
      fmt::print(", {} {:.4f}", k, v.get<double>());
    fmt::print("\n");
  }
  // A row per layer and model, a column per measure: the models of a layer
  // sit on consecutive rows, so their values line up.
  const auto &shown = measures(models[0].language);
  size_t nameWidth = 5;
  for (const ModelGeometry &m : models)
    nameWidth = std::max(nameWidth, m.name.size());
  std::string header =
      fmt::format("{:<10} {:<{}}", "layer", "model", nameWidth);
  for (const Measure &measure : shown)
    header += fmt::format(" {:>{}}", measure.key,
                          std::max<size_t>(strlen(measure.key), 8));
  fmt::print("\n{}\n", header);
  for (size_t l = 0; l < models[0].layers.size(); ++l)
    for (size_t i = 0; i < models.size(); ++i) {
      const ModelGeometry &m = models[i];
      if (l >= m.layers.size())
        continue;
      std::string row = fmt::format(
          "{:<10} {:<{}}", i == 0 ? m.layers[l].name : "", m.name, nameWidth);
      for (const Measure &measure : shown)
        row += fmt::format(" {:>{}.4g}", measure.get(m.layers[l]),
                           std::max<size_t>(strlen(measure.key), 8));
      fmt::print("{}\n", row);
    }
  for (const ModelGeometry &m : models) {
    if (m.learned.empty())
      continue;
    fmt::print("\n{}: learned heads, O = alpha P V + beta V\n", m.name);
    fmt::print("{:>5} {:>4}  {:<12} {:>9} {:>9}  {}\n", "layer", "head", "kind",
               "alpha", "beta", "start");
    for (const LearnedHead &h : m.learned)
      fmt::print("{:>5} {:>4}  {:<12} {:>9.4f} {:>9.4f}  ({:g}, {:g})\n",
                 h.layer, h.head, h.kind, h.alpha, h.beta, h.startAlpha,
                 h.startBeta);
  }
}

} // namespace

int lap::cli::analyze(const AnalyzeOptions &options) {
  if (options.models.size() == 1 &&
      std::filesystem::exists(options.models[0] + "/specs/sweep.json"))
    return analyzeSweep(options);
  if (options.runDirs.size() != options.models.size())
    throw std::runtime_error(
        fmt::format("give one --run-dir per model ({} models, {} run "
                    "directories)",
                    options.models.size(), options.runDirs.size()));
  std::vector<ModelGeometry> results;
  for (size_t i = 0; i < options.models.size(); ++i) {
    ModelInstance run(options.models[i], options.device);
    const LoadedModel &model = run.model;
    dsl::Spec spec = train::specOf(model);
    const std::string &runDir = options.runDirs[i];
    std::string checkpoint = train::checkpointOf(runDir);
    LoadedCheckpoint loaded = run.restore(checkpoint);
    float *params = run.params.data();
    // DINO's features are the teacher's (what its evaluations read).
    if (spec.model.family == dsl::Family::DINO)
      train::restoreTeacher(model, loaded, params, run.device);
    // What the host reads of them: themselves, or a GPU's copied back.
    std::vector<float> copied;
    const float *hostParams = params;
    if (!run.device.onHost()) {
      copied.resize(size_t(run.params.size()));
      run.device.download(copied.data(), params, run.params.size());
      hostParams = copied.data();
    }
    bool text = spec.model.family == dsl::Family::GPT;
    if (!results.empty() && results[0].language != text)
      throw std::runtime_error(
          "analyse two image models or two language models, not one of "
          "each");
    ModelGeometry g = text ? analyzeText(run.calls, spec, params, runDir,
                                         options.samples, options.topTokens)
                           : analyzeImages(run.calls, spec, params, hostParams,
                                           options.samples);
    g.name = i < options.labels.size() ? options.labels[i] : spec.name;
    g.checkpoint = checkpoint;
    g.learned = learnedHeads(model, spec, hostParams);
    results.push_back(std::move(g));
  }
  printTable(results);
  writeOutputs(results, options.out);
  if (std::all_of(results.begin(), results.end(),
                  [](const ModelGeometry &g) { return g.pca.has_value(); })) {
    std::vector<analysis::PatchPca> rows;
    for (const ModelGeometry &g : results)
      rows.push_back(*g.pca);
    analysis::writePcaPictures(options.out + "/pca.png", rows,
                               &results[0].pcaImages, 8);
    fmt::print("PCA pictures (first three components of the last layer's "
               "patch tokens; one row per model, in the order given): "
               "{}/pca.png\n",
               options.out);
  }
  fmt::print("\nwrote {0}/analysis.json, {0}/geometry.csv, {0}/spectrum.csv "
             "and a PNG per "
             "measure\n",
             options.out);
  return 0;
}
