//===- Interchange.cpp - lapc-run import / export / merge -------*- C++ -*-===//
//
// Each writes a new directory (refused if it exists and is not empty: no
// file of the user's is replaced): import its spec.yaml and
// model.safetensors (lap's names, checksums; what `lapc-run train
// --init-from` reads), and a GPT-2's tokenizer files; export config.json
// and model.safetensors in the format's names, from a run's checkpoint or
// an import's directory, a train.lora model's adapters folded into their
// layers; merge the folded parameters as import writes them, with the
// base model's spec, and the adapters apart.
//
//===----------------------------------------------------------------------===//

#include "runtime/interchange/Interchange.h"
#include "dsl/Derived.h"
#include "dsl/SpecPrinter.h"
#include "runtime/data/Safetensors.h"
#include "runtime/interchange/Lora.h"
#include "runtime/model/LoadedModel.h"
#include "runtime/platform/Files.h"
#include "runtime/platform/Process.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace fs = std::filesystem;
using namespace lap;

namespace {

/// Creates `dir`, which must not exist or be empty.
void newDirectory(const std::string &dir) {
  std::error_code error;
  if (fs::is_symlink(dir, error))
    throw std::runtime_error(dir + ": a symbolic link; give a new directory");
  if (fs::exists(dir, error) &&
      (!fs::is_directory(dir, error) || !fs::is_empty(dir, error)))
    throw std::runtime_error(dir +
                             ": exists and is not an empty directory "
                             "(nothing in it is replaced: give a new one)");
  fs::create_directories(dir, error);
  if (error)
    throw std::runtime_error(dir + ": cannot create it: " + error.message());
}

void writeTensors(const std::string &path,
                  const std::vector<interchange::NamedTensor> &tensors) {
  std::vector<TensorRef> refs;
  for (const interchange::NamedTensor &t : tensors)
    refs.emplace_back(t.name, t.shape, t.data.data());
  writeSafetensors(path, refs, {{"format", "pt"}});
}

/// A source converted by the lap package's `format.converter` into a
/// temporary directory, removed with it. The interpreter is LAP_PYTHON, by
/// default Debian's python3 (with python3-torch); the package is the one
/// beside this build's bin/ (build/python).
struct ConvertedSource {
  ConvertedSource(const interchange::Format &format,
                  const std::string &source) {
    std::string pattern =
        (fs::temp_directory_path() / "lap-import-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary directory in " +
                               fs::temp_directory_path().string());
    dir = pattern;
    const char *python = std::getenv("LAP_PYTHON");
    std::string package =
        (fs::path(platform::executablePath()).parent_path().parent_path() /
         "python")
            .string();
    std::string log = dir + "/converter.log";
    int status =
        platform::waitFor(platform::spawn({python ? python : "/usr/bin/python3",
                                           "-m", format.converter, source, dir},
                                          log, {"PYTHONPATH=" + package}));
    if (status != 0) {
      std::string said = platform::readRegularFile(log, 1 << 20);
      while (!said.empty() && said.back() == '\n')
        said.pop_back();
      throw std::runtime_error(fmt::format(
          "{}: the lap package's {} could not read it (status {}): {}", source,
          format.converter, status, said));
    }
  }
  ~ConvertedSource() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  ConvertedSource(const ConvertedSource &) = delete;
  ConvertedSource &operator=(const ConvertedSource &) = delete;

  std::string dir;
};

/// The parameters of `model` in the checkpoint `checkpoint` (a run's
/// checkpoint, or with `imports` an import's directory), by name.
std::vector<interchange::NamedTensor>
checkpointTensors(const LoadedModel &model, const std::string &checkpoint,
                  bool imports) {
  std::vector<float> params(size_t(model.parameterElements()));
  if (fs::exists(checkpoint + "/state.json") || !imports) {
    train::restoreParameters(model, checkpoint, params.data());
  } else {
    // An import's directory: model.safetensors alone, and learned
    // coefficients at their initial values.
    if (model.device() != "cpu")
      throw std::runtime_error(checkpoint +
                               ": not a checkpoint (no "
                               "state.json); exporting an import's "
                               "parameters takes the spec's CPU library");
    if (model.initParams(params.data(), 0) != LAP_OK)
      throw std::runtime_error(model.path() + ": " + model.lastError());
    train::initParameters(model, checkpoint + "/model.safetensors",
                          params.data());
  }
  std::vector<interchange::NamedTensor> tensors;
  for (const ParameterInfo &p : model.parameters())
    tensors.push_back(
        {p.name, p.shape,
         std::vector<float>(params.begin() + p.offset,
                            params.begin() + p.offset + p.elements)});
  return tensors;
}

/// --checkpoint, or the newest checkpoint of --run-dir; one must be given.
std::string checkpointGiven(const std::string &runDir,
                            const std::string &checkpoint) {
  if (runDir.empty() && checkpoint.empty())
    throw std::runtime_error("give --run-dir or --checkpoint");
  return train::checkpointOf(runDir, checkpoint);
}

int64_t elementsOf(const std::vector<interchange::NamedTensor> &tensors) {
  int64_t n = 0;
  for (const interchange::NamedTensor &t : tensors)
    n += int64_t(t.data.size());
  return n;
}

} // namespace

int lap::cli::importModel(const ImportOptions &options) {
  const interchange::Format &format = interchange::format(options.format);
  if (format.converter.empty() && !fs::is_directory(options.source))
    throw std::runtime_error(options.source +
                             ": not a directory (a model's config.json and "
                             "model.safetensors)");
  if (!fs::exists(options.source))
    throw std::runtime_error(options.source + ": no such file or directory");
  std::string name =
      options.name.empty()
          ? fs::path(options.source).lexically_normal().filename().string()
          : options.name;
  std::optional<ConvertedSource> converted;
  if (!format.converter.empty())
    converted.emplace(format, options.source);
  interchange::Imported imported = interchange::importModel(
      format, converted ? converted->dir : options.source, name);
  newDirectory(options.out);
  platform::writeFileAtomically(options.out + "/spec.yaml", imported.spec);
  writeTensors(options.out + "/model.safetensors", imported.parameters);
  int64_t elements = elementsOf(imported.parameters);
  // A GPT-2's tokenizer goes along (lapc-run tokenize --gpt2 reads it).
  std::vector<std::string> copied;
  for (const char *file : {"vocab.json", "merges.txt"}) {
    fs::path from = fs::path(options.source) / file;
    if (fs::is_regular_file(from)) {
      platform::writeFileAtomically(
          options.out + "/" + file,
          platform::readRegularFile(from.string(), uint64_t(1) << 30));
      copied.push_back(file);
    }
  }
  fmt::print("imported {} ({}): {} tensors, {} parameters\n"
             "  {}/spec.yaml          the architecture, as a lap spec\n"
             "  {}/model.safetensors  the parameters in lap's names\n",
             options.source, format.name, imported.parameters.size(), elements,
             options.out, options.out);
  for (const std::string &file : copied)
    fmt::print("  {}/{}\n", options.out, file);
  fmt::print("next: lapc {0}/spec.yaml -o model.so && lapc-run train "
             "model.so --init-from {0} (after adding a train section)\n",
             options.out);
  return 0;
}

int lap::cli::exportModel(const ExportOptions &options) {
  const interchange::Format &format = interchange::format(options.format);
  LoadedModel model(options.model, LoadedModel::Devices::Any);
  dsl::Spec spec = train::specOf(model);
  std::string checkpoint = checkpointGiven(options.runDir, options.checkpoint);
  std::vector<interchange::NamedTensor> tensors =
      checkpointTensors(model, checkpoint, true);
  if (const dsl::LoraSpec &lora = spec.train.lora; lora.enabled())
    tensors = interchange::mergeLora(tensors, lora.scale());
  interchange::Stored stored =
      interchange::exportModel(format, spec, tensors, options.withHeadKinds);
  newDirectory(options.out);
  platform::writeFileAtomically(options.out + "/config.json",
                                stored.config.dump(2) + "\n");
  writeTensors(options.out + "/model.safetensors", stored.tensors);
  fmt::print("exported {} ({}) as {}: {}/config.json, {}/model.safetensors "
             "({} tensors{})\n",
             checkpoint, model.manifest()["name"].get<std::string>(),
             format.name, options.out, options.out, stored.tensors.size(),
             spec.train.lora.enabled() ? ", the LoRA adapters merged" : "");
  return 0;
}

int lap::cli::mergeAdapters(const MergeOptions &options) {
  LoadedModel model(options.model, LoadedModel::Devices::Any);
  dsl::Spec spec = train::specOf(model);
  const dsl::LoraSpec lora = spec.train.lora;
  if (!lora.enabled())
    throw std::runtime_error(options.model +
                             ": has no LoRA adapters to merge (its spec "
                             "sets no train.lora)");
  std::string checkpoint = checkpointGiven(options.runDir, options.checkpoint);
  std::vector<interchange::NamedTensor> tensors =
      checkpointTensors(model, checkpoint, false);
  std::vector<interchange::NamedTensor> merged =
      interchange::mergeLora(tensors, lora.scale());
  std::vector<interchange::NamedTensor> adapters =
      interchange::loraAdapters(tensors);
  // The base model: the same spec without adapters.
  spec.name += "_merged";
  spec.train.lora = dsl::LoraSpec();
  spec.derived = dsl::deriveSpec(spec);
  newDirectory(options.out);
  platform::writeFileAtomically(options.out + "/spec.yaml",
                                dsl::printSpec(spec));
  writeTensors(options.out + "/model.safetensors", merged);
  writeTensors(options.out + "/adapters.safetensors", adapters);
  fmt::print("merged {} (rank {}, alpha {}: W + {} B A) into {} layers\n"
             "  {}/spec.yaml             the base model, without adapters\n"
             "  {}/model.safetensors     its {} parameters\n"
             "  {}/adapters.safetensors  the {} adapter parameters alone\n",
             checkpoint, lora.rank, lora.alpha, lora.scale(),
             adapters.size() / 2, options.out, options.out, elementsOf(merged),
             options.out, elementsOf(adapters));
  fmt::print("next: lapc {0}/spec.yaml -o base.so && lapc-run train base.so "
             "--init-from {0}\n",
             options.out);
  return 0;
}
