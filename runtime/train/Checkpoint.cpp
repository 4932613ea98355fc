//===- Checkpoint.cpp - Training checkpoints in a run directory -----------===//

#include "runtime/train/Checkpoint.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <regex>
#include <stdexcept>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lap {

namespace {

constexpr uint64_t kMaxStateBytes = 16 << 20;

std::mutex faultMutex;
CheckpointWriteFault writeFault;

using lap::platform::fail;

/// Fails as a write of `path` would with the errno the test fault gives.
void checkWriteFault(const std::string &path) {
  std::lock_guard<std::mutex> lock(faultMutex);
  if (int err = writeFault ? writeFault(path) : 0) {
    errno = err;
    platform::failWithErrno(path, "write failed");
  }
}

std::string joinPath(const std::string &dir, const std::string &name) {
  return (fs::path(dir) / name).string();
}

/// A `step_N` directory name's step, or -1.
int64_t stepOf(const std::string &name) {
  static const std::regex re("step_([0-9]{1,18})");
  std::smatch m;
  return std::regex_match(name, m, re) ? std::stoll(m[1]) : -1;
}

/// The first of a checkpoint's three files that `dir` lacks, or null.
const char *missingFile(const fs::path &dir) {
  std::error_code ec;
  for (const char *f :
       {"model.safetensors", "optimizer.safetensors", "state.json"})
    if (!fs::is_regular_file(dir / f, ec))
      return f;
  return nullptr;
}

/// The complete checkpoints under `runDir`, oldest first.
std::vector<std::pair<int64_t, fs::path>>
completeCheckpoints(const std::string &runDir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  if (!fs::exists(runDir, ec))
    return found;
  fs::directory_iterator it(runDir, ec), end;
  if (ec)
    fail(runDir, "cannot list checkpoint directory: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec)
      fail(runDir, "cannot list checkpoint directory: " + ec.message());
    int64_t step = stepOf(it->path().filename().string());
    if (step >= 0 && it->is_directory(ec) && !missingFile(it->path()))
      found.emplace_back(step, it->path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

/// Refuses a tensor file without lap's checksums.
void requireChecksums(const std::string &path, const SafetensorsFile &file) {
  if (!file.checksummed)
    fail(path, std::string("has no tensor checksums ('") + kChecksumsKey +
                   "' in its __metadata__), so its data cannot be "
                   "trusted; lap writes them into every checkpoint");
}

} // namespace

void setCheckpointWriteFaultForTesting(CheckpointWriteFault fault) {
  std::lock_guard<std::mutex> lock(faultMutex);
  writeFault = std::move(fault);
}

std::string checkpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%06lld", (long long)step);
  return buf;
}

std::string saveCheckpoint(const std::string &runDir,
                           const CheckpointData &data) {
  if (data.state.step < 0)
    fail(runDir, "negative checkpoint step " + std::to_string(data.state.step));
  std::string name = checkpointName(data.state.step);
  std::string finalDir = joinPath(runDir, name);
  std::string pid = std::to_string(::getpid());
  std::string tmpDir = joinPath(runDir, "." + name + ".tmp-" + pid);
  std::string oldDir = joinPath(runDir, "." + name + ".old-" + pid);
  auto error = [&](const std::string &what) {
    return std::runtime_error("cannot write checkpoint '" + finalDir +
                              "': " + what);
  };

  std::error_code ec;
  fs::create_directories(runDir, ec);
  if (ec)
    throw error("cannot create directory '" + runDir + "': " + ec.message());
  // A leftover of this process's own earlier, failed attempt.
  fs::remove_all(tmpDir, ec);
  if (::mkdir(tmpDir.c_str(), 0755) != 0)
    throw error("cannot create directory '" + tmpDir +
                "': " + std::string(std::strerror(errno)));

  bool movedOld = false;
  try {
    std::map<std::string, std::string> meta = data.metadata;
    meta.emplace("format", "pt");
    std::string model = joinPath(tmpDir, "model.safetensors"),
                optimizer = joinPath(tmpDir, "optimizer.safetensors"),
                state = joinPath(tmpDir, "state.json");
    checkWriteFault(model);
    writeSafetensors(model, data.parameters, meta);
    checkWriteFault(optimizer);
    writeSafetensors(optimizer, data.optimizer, {});
    checkWriteFault(state);
    platform::writeFileAtomically(state, toJson(data.state).dump(2) + "\n");
    platform::syncDirectory(tmpDir);
    // rename() cannot replace a non-empty directory: move an existing
    // checkpoint of this step aside first, and back if the swap fails.
    if (fs::exists(finalDir, ec)) {
      fs::remove_all(oldDir, ec);
      if (::rename(finalDir.c_str(), oldDir.c_str()) != 0)
        platform::failWithErrno(finalDir,
                                "cannot move the existing checkpoint aside");
      movedOld = true;
    }
    if (::rename(tmpDir.c_str(), finalDir.c_str()) != 0)
      platform::failWithErrno(tmpDir, "cannot rename to '" + finalDir + "'");
    platform::syncDirectory(runDir);
  } catch (const std::exception &e) {
    fs::remove_all(tmpDir, ec);
    if (movedOld && !fs::exists(finalDir, ec))
      ::rename(oldDir.c_str(), finalDir.c_str());
    throw error(e.what());
  }
  if (movedOld)
    fs::remove_all(oldDir, ec);
  return finalDir;
}

std::optional<std::string> latestCheckpoint(const std::string &runDir) {
  auto found = completeCheckpoints(runDir);
  if (found.empty())
    return std::nullopt;
  return found.back().second.string();
}

std::vector<std::string> incompleteCheckpoints(const std::string &runDir) {
  auto complete = completeCheckpoints(runDir);
  int64_t newest = complete.empty() ? -1 : complete.back().first;
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(runDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    int64_t step = stepOf(it->path().filename().string());
    if (step <= newest || !it->is_directory(ec))
      continue;
    if (const char *missing = missingFile(it->path()))
      found.emplace_back(step, it->path().string() + " (no " + missing + ")");
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto &[step, text] : found)
    out.push_back(std::move(text));
  return out;
}

std::vector<std::string> pruneCheckpoints(const std::string &runDir,
                                          size_t keep) {
  std::vector<std::string> removed;
  auto remove = [&](const fs::path &p) {
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec)
      fail(p.string(), "cannot remove: " + ec.message());
    removed.push_back(p.string());
  };
  auto found = completeCheckpoints(runDir);
  for (size_t i = 0; i + keep < found.size(); ++i)
    remove(found[i].second);

  // Temporary directories whose writer has died; a live writer (another
  // process saving right now) keeps its own.
  static const std::regex tmpRe(R"(\.step_[0-9]+\.(tmp|old)-([0-9]+))");
  std::error_code ec;
  if (!fs::exists(runDir, ec))
    return removed;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(runDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, tmpRe))
      continue;
    pid_t pid = pid_t(std::stoll(m[2]));
    bool alive = pid != ::getpid() && (::kill(pid, 0) == 0 || errno == EPERM);
    if (!alive)
      stale.push_back(it->path());
  }
  if (ec)
    fail(runDir, "cannot list checkpoint directory: " + ec.message());
  for (const fs::path &p : stale)
    remove(p);
  return removed;
}

SafetensorsFile readParameterFile(const std::string &path,
                                  const std::vector<TensorSpec> &expected) {
  SafetensorsFile file = readSafetensors(path, [&](const SafetensorsFile &f) {
    std::map<std::string, const TensorSpec *> byName;
    for (const TensorSpec &s : expected)
      byName[s.name] = &s;
    for (const std::string &name : f.order) {
      const Tensor &t = f.tensors.at(name);
      auto it = byName.find(name);
      if (it == byName.end())
        fail(path, "tensor '" + name + "' with shape " + shapeText(t.shape) +
                       " is not a parameter of the model");
      if (t.shape != it->second->shape)
        fail(path, "tensor '" + name + "' has shape " + shapeText(t.shape) +
                       ", the model expects " + shapeText(it->second->shape));
      if (t.dtype != DType::F32)
        fail(path, "tensor '" + name + "' has dtype " + dtypeName(t.dtype) +
                       ", the model expects F32");
    }
    for (const TensorSpec &s : expected)
      if (!s.optional && !f.tensors.count(s.name))
        fail(path, "tensor '" + s.name +
                       "' is missing, the model "
                       "expects shape " +
                       shapeText(s.shape));
  });
  requireChecksums(path, file);
  return file;
}

LoadedCheckpoint
loadCheckpoint(const std::string &checkpointDir,
               const std::vector<TensorSpec> &expected,
               const std::function<void(const CheckpointState &)> &checkState) {
  std::error_code ec;
  if (!fs::is_directory(checkpointDir, ec))
    fail(checkpointDir, "not a checkpoint directory");
  LoadedCheckpoint out;
  out.path = checkpointDir;

  std::string statePath = joinPath(checkpointDir, "state.json");
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(
        platform::readRegularFile(statePath, kMaxStateBytes));
  } catch (const nlohmann::json::exception &e) {
    fail(statePath, std::string("invalid JSON: ") + e.what());
  }
  out.state = stateFromJson(state, statePath);
  fs::path dir = fs::path(checkpointDir).lexically_normal();
  if (dir.filename().empty()) // "run/step_000006/"
    dir = dir.parent_path();
  int64_t dirStep = stepOf(dir.filename().string());
  if (dirStep >= 0 && dirStep != out.state.step)
    fail(statePath, "'step' is " + std::to_string(out.state.step) +
                        ", but the checkpoint's directory is of step " +
                        std::to_string(dirStep));
  if (checkState)
    checkState(out.state);

  out.model =
      readParameterFile(joinPath(checkpointDir, "model.safetensors"), expected);
  std::string optimizerPath = joinPath(checkpointDir, "optimizer.safetensors");
  out.optimizer = readSafetensors(optimizerPath);
  requireChecksums(optimizerPath, out.optimizer);
  return out;
}

} // namespace lap
