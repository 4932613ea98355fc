//===- LoadedModel.cpp - A model.so, opened and checked ---------*- C++ -*-===//

#include "runtime/model/LoadedModel.h"

#include "runtime/model/ManifestCheck.h"
#include "runtime/platform/CpuFeatures.h"
#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

#include <dlfcn.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

using namespace lap;

namespace {

using lap::platform::fail;

template <typename F>
F symbol(void *handle, const char *name, const std::string &path) {
  void *p = dlsym(handle, name);
  if (!p)
    fail(path, std::string("not a lap model library (no '") + name +
                   "'; build one with `lapc SPEC -o model.so`)");
  return reinterpret_cast<F>(p);
}

/// Checks that `path` is a whole x86-64 ELF shared object before dlopen
/// maps it: a truncated file would fault (SIGBUS) on first touch instead.
void checkElf(const std::string &path, uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot read: ") + std::strerror(errno));
  if (size == 0)
    fail(path, "an empty file, not a model library");
  Elf64_Ehdr header{};
  if (!in.read(reinterpret_cast<char *>(&header), sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    fail(path, "not a shared library (no ELF header)");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_machine != EM_X86_64)
    fail(path, "a shared library for another machine (this is x86-64)");
  if (header.e_type != ET_DYN)
    fail(path, "an ELF file, but not a shared library");
  auto covers = [&](uint64_t offset, uint64_t bytes) {
    return offset <= size && bytes <= size - offset;
  };
  if (!covers(header.e_phoff, uint64_t(header.e_phnum) * header.e_phentsize) ||
      !covers(header.e_shoff, uint64_t(header.e_shnum) * header.e_shentsize))
    fail(path, "not a loadable shared library (truncated: " +
                   std::to_string(size) + " bytes)");
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    in.seekg(header.e_phoff + uint64_t(i) * header.e_phentsize);
    if (!in.read(reinterpret_cast<char *>(&segment), sizeof segment) ||
        (segment.p_type == PT_LOAD &&
         !covers(segment.p_offset, segment.p_filesz)))
      fail(path, "not a loadable shared library (truncated: " +
                     std::to_string(size) + " bytes)");
  }
}

std::string missingOf(const nlohmann::json &features) {
  std::string list;
  for (const std::string &f :
       platform::missingFeatures(features.get<std::vector<std::string>>()))
    list += (list.empty() ? "" : " ") + f;
  return list;
}

/// Refuses a library whose code needs CPU features this CPU lacks, before
/// any of that code runs: it would die with SIGILL.
void checkCpu(const std::string &path, const nlohmann::json &target) {
  const std::string here = "this CPU (" + platform::cpuModelName() + ")";
  if (std::string missing = missingOf(target.at("kernel_features"));
      !missing.empty())
    fail(path, "lap's kernels need a CPU like '" +
                   target.at("kernel_cpu").get<std::string>() + "', and " +
                   here + " lacks: " + missing);
  if (std::string missing = missingOf(target.at("features")); !missing.empty())
    fail(path,
         "compiled for the CPU '" + target.at("cpu").get<std::string>() +
             "', whose features " + here + " lacks: " + missing +
             "; recompile it here with `lapc SPEC -o model.so`, or with `lapc "
             "SPEC --cpu=" +
             target.at("kernel_cpu").get<std::string>() +
             " -o model.so` for a library that runs on every CPU lap runs on");
}

} // namespace

LoadedModel::LoadedModel(const std::string &path, Devices devices)
    : path_(path) {
  // A FIFO or a device would block or never end; a directory is no library.
  checkElf(path, platform::regularFileSize(path));
  // dlopen needs a path with a slash to not search the library path.
  std::string open = path.find('/') == std::string::npos ? "./" + path : path;
  handle_ = dlopen(open.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *why = dlerror();
    fail(path, std::string("not a loadable shared library: ") +
                   (why ? why : "unknown error"));
  }
  try {
    auto version = symbol<decltype(&lap_model_abi_version)>(
        handle_, "lap_model_abi_version", path);
    if (version() != LAP_MODEL_ABI_VERSION)
      fail(path, "built for model ABI version " + std::to_string(version()) +
                     ", this lapc-run speaks version " +
                     std::to_string(LAP_MODEL_ABI_VERSION) +
                     "; recompile it with this lapc");
    auto manifest = symbol<decltype(&lap_model_manifest)>(
        handle_, "lap_model_manifest", path);
    setStream_ =
        symbol<decltype(setStream_)>(handle_, "lap_model_set_stream", path);
    init_ = symbol<decltype(init_)>(handle_, "lap_model_init_params", path);
    forward_ = symbol<decltype(forward_)>(handle_, "lap_model_forward", path);
    trainStep_ =
        symbol<decltype(trainStep_)>(handle_, "lap_model_train_step", path);
    features_ =
        symbol<decltype(features_)>(handle_, "lap_model_features", path);
    embed_ = symbol<decltype(embed_)>(handle_, "lap_model_embed", path);
    decode_ = symbol<decltype(decode_)>(handle_, "lap_model_decode", path);
    lastError_ =
        symbol<decltype(lastError_)>(handle_, "lap_model_last_error", path);
    kernelIsa_ =
        symbol<decltype(kernelIsa_)>(handle_, "lap_model_kernel_isa", path);
    kernelIsas_ =
        symbol<decltype(kernelIsas_)>(handle_, "lap_model_kernel_isas", path);
    auto manifestError = symbol<decltype(&lap_model_manifest_error)>(
        handle_, "lap_model_manifest_error", path);
    if (const char *error = manifestError())
      fail(path, std::string("a corrupt model library: ") + error);
    manifest_ =
        nlohmann::json::parse(manifest(), nullptr, /*allow_exceptions=*/false);
    if (manifest_.is_discarded())
      fail(path, "a corrupt model library: its manifest is not valid JSON");
    if (std::string problem = model::manifestProblem(manifest_);
        !problem.empty())
      fail(path, "a corrupt model library: in its manifest, " + problem);
    checkCpu(path, manifest_.at("target"));
    if (devices == Devices::CPU && device() != "cpu")
      fail(path, "a library for " + device() + " (" +
                     manifest_["target"]["arch"].get<std::string>() +
                     "); this program runs CPU libraries (`lapc SPEC -o "
                     "model.so` compiles one for the CPU)");
    for (auto &p : manifest_.at("parameters").at("tensors"))
      parameters_.push_back(
          {p.at("name"), p.at("shape").get<std::vector<int64_t>>(),
           p.at("offset"), p.at("elements"), p.at("init").at("kind"),
           p.at("init").at("value"), p.at("trainable")});
    parameterElements_ = manifest_.at("parameters").at("elements");
    trainableOffset_ = manifest_.at("parameters").at("trainable").at("offset");
    workspaceBytes_ = manifest_.at("memory").at("workspace_bytes");
  } catch (const nlohmann::json::exception &e) {
    dlclose(handle_);
    fail(path, std::string("its manifest lacks a field: ") + e.what());
  } catch (...) {
    dlclose(handle_);
    throw;
  }
}

LoadedModel::~LoadedModel() {
  if (handle_)
    dlclose(handle_);
}

AlignedBuffer::AlignedBuffer(size_t n) : bytes(n) {
  size_t rounded = (n + 63) / 64 * 64;
  data = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!data)
    throw std::runtime_error("out of memory allocating " + std::to_string(n) +
                             " bytes");
  std::memset(data, 0, rounded ? rounded : 64);
}

AlignedBuffer::~AlignedBuffer() { std::free(data); }
