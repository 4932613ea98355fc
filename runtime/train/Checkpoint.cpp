//===- Checkpoint.cpp - safetensors files and training checkpoints --------===//
//
// Files go through POSIX calls rather than iostreams so that every write,
// fsync and rename has an errno to report, and so that the data of a large
// tensor is read straight into its vector without a staging copy.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"

#include "runtime/platform/Files.h"
#include "runtime/platform/Hash.h"

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

// The data section is the host's memory image of each tensor; safetensors
// mandates little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

namespace {

// Hugging Face's reader refuses larger headers; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr uint64_t kMaxStateBytes = 16 << 20;
constexpr size_t kChunkBytes = size_t(64) << 20;

std::mutex faultMutex;
CheckpointWriteFault writeFault;

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw std::runtime_error(path + ": " + what);
}

std::string errnoText(int err) { return std::strerror(err); }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Closes the descriptor on every path out, including exceptions.
class Fd {
public:
  explicit Fd(int fd) : fd(fd) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
  int get() const { return fd; }
  int release() { return std::exchange(fd, -1); }

private:
  int fd;
};

/// Writes checkpoint files: every byte passes the test fault first, and the
/// file is fsynced and closed with errors checked, since a close can be the
/// first place a full disk shows on some filesystems.
class FileWriter {
public:
  explicit FileWriter(std::string path)
      : path(std::move(path)),
        fd(::open(this->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0644)) {
    if (fd.get() < 0)
      fail(this->path, "cannot create file: " + errnoText(errno));
  }

  void write(const void *data, size_t size) {
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
      if (int err = injectedFault())
        fail(path, "write failed: " + errnoText(err));
      ssize_t n = ::write(fd.get(), p, std::min(size, kChunkBytes));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        fail(path, "write failed: " + errnoText(n < 0 ? errno : EIO));
      p += n;
      size -= size_t(n);
    }
  }

  void finish() {
    if (int err = injectedFault())
      fail(path, "fsync failed: " + errnoText(err));
    if (::fsync(fd.get()) != 0)
      fail(path, "fsync failed: " + errnoText(errno));
    if (::close(fd.release()) != 0)
      fail(path, "close failed: " + errnoText(errno));
  }

private:
  int injectedFault() const {
    std::lock_guard<std::mutex> lock(faultMutex);
    return writeFault ? writeFault(path) : 0;
  }

  std::string path;
  Fd fd;
};

void fsyncDirectory(const std::string &dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0)
    fail(dir, "cannot open directory: " + errnoText(errno));
  if (::fsync(fd.get()) != 0)
    fail(dir, "fsync failed: " + errnoText(errno));
}

bool knownDType(const std::string &name, DType &dtype) {
  if (name == "F32")
    dtype = DType::F32;
  else if (name == "I64")
    dtype = DType::I64;
  else if (name == "U8")
    dtype = DType::U8;
  else
    return false;
  return true;
}

/// Element count of a shape, or false if it overflows 64 bits.
bool elementCount(const std::vector<int64_t> &shape, uint64_t &count) {
  count = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(count, uint64_t(d), &count))
      return false;
  return true;
}

void readFully(int fd, const std::string &path, void *dst, size_t size,
               uint64_t offset) {
  char *p = static_cast<char *>(dst);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, std::min(size, kChunkBytes), off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fail(path, "read failed: " + errnoText(errno));
    if (n == 0)
      fail(path, "file ended while reading (truncated?)");
    p += n;
    size -= size_t(n);
    offset += uint64_t(n);
  }
}

struct Entry {
  std::string name;
  uint64_t begin, end;
};

/// Reads a safetensors file; `checkHeader` sees the tensors' names, dtypes
/// and shapes (no data yet) so a caller can refuse a file before paying for
/// reading gigabytes of it.
SafetensorsFile readSafetensorsImpl(
    const std::string &path,
    const std::function<void(const SafetensorsFile &)> &checkHeader) {
  // O_NONBLOCK: a FIFO must not block the open; it is refused below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0)
    fail(path, "cannot open: " + errnoText(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    fail(path, "cannot stat: " + errnoText(errno));
  if (!S_ISREG(st.st_mode))
    fail(path, platform::notRegularFile(st.st_mode));
  uint64_t fileSize = uint64_t(st.st_size);
  if (fileSize < 8)
    fail(path, "file too small (" + std::to_string(fileSize) +
                   " bytes) for a safetensors file, which starts with an "
                   "8-byte header length");

  unsigned char lenBytes[8];
  readFully(fd.get(), path, lenBytes, 8, 0);
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > fileSize - 8)
    fail(path, "header length " + std::to_string(headerLen) +
                   " goes beyond the end of the file (" +
                   std::to_string(fileSize) + " bytes)");
  if (headerLen > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(headerLen) +
                   " exceeds the limit of " + std::to_string(kMaxHeaderBytes));
  std::string headerText(headerLen, '\0');
  readFully(fd.get(), path, headerText.data(), headerLen, 8);
  uint64_t dataStart = 8 + headerLen, dataSize = fileSize - dataStart;

  // ordered_json keeps the header's key order, which is the tensor order.
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(headerText);
  } catch (const nlohmann::json::exception &e) {
    fail(path, std::string("invalid JSON header: ") + e.what());
  }
  if (!header.is_object())
    fail(path, "the JSON header is not an object");

  SafetensorsFile file;
  std::vector<Entry> entries;
  nlohmann::json checksums;
  for (const auto &[name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        fail(path, "__metadata__ is not an object");
      for (const auto &[key, v] : value.items()) {
        if (!v.is_string())
          fail(path, "__metadata__ value of '" + key + "' is not a string");
        file.metadata[key] = v.get<std::string>();
      }
      continue;
    }
    std::string where = "tensor '" + name + "'";
    if (!value.is_object())
      fail(path, where + ": entry is not an object");
    auto dtypeIt = value.find("dtype"), shapeIt = value.find("shape"),
         offsetsIt = value.find("data_offsets");
    if (dtypeIt == value.end() || !dtypeIt->is_string())
      fail(path, where + ": missing or non-string 'dtype'");
    if (shapeIt == value.end() || !shapeIt->is_array())
      fail(path, where + ": missing or non-array 'shape'");
    if (offsetsIt == value.end() || !offsetsIt->is_array() ||
        offsetsIt->size() != 2 || !(*offsetsIt)[0].is_number_unsigned() ||
        !(*offsetsIt)[1].is_number_unsigned())
      fail(path, where + ": 'data_offsets' is not a pair of non-negative "
                         "integers");
    Tensor t;
    std::string dtypeName = dtypeIt->get<std::string>();
    if (!knownDType(dtypeName, t.dtype))
      fail(path, where + ": unknown or unsupported dtype '" + dtypeName +
                     "' (supported: F32, I64, U8)");
    for (const auto &d : *shapeIt) {
      if (!d.is_number_unsigned())
        fail(path, where + ": shape " + shapeIt->dump() +
                       " has an entry that is not a non-negative integer");
      t.shape.push_back(int64_t(d.get<uint64_t>()));
    }
    uint64_t begin = (*offsetsIt)[0].get<uint64_t>(),
             end = (*offsetsIt)[1].get<uint64_t>(), count;
    std::string offsetsText = "data_offsets [" + std::to_string(begin) + ", " +
                              std::to_string(end) + "]";
    if (begin > end)
      fail(path, where + ": " + offsetsText + " are reversed");
    if (end > dataSize)
      fail(path, where + ": " + offsetsText + " go beyond the data section (" +
                     std::to_string(dataSize) + " bytes)");
    bool fits =
        elementCount(t.shape, count) &&
        !__builtin_mul_overflow(count, uint64_t(dtypeSize(t.dtype)), &count);
    if (!fits || count != end - begin)
      fail(path, where + ": " + offsetsText + " hold " +
                     std::to_string(end - begin) + " bytes, but shape " +
                     shapeText(t.shape) + " of " + dtypeName + " needs " +
                     (fits ? std::to_string(count) : "more than 2^64"));
    file.order.push_back(name);
    file.tensors.emplace(name, std::move(t));
    entries.push_back({name, begin, end});
  }

  // The data section must be tiled exactly: no gaps, no overlaps, nothing
  // left over, as Hugging Face's reader requires.
  std::vector<Entry> sorted = entries;
  std::sort(sorted.begin(), sorted.end(), [](const Entry &a, const Entry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  const Entry *prev = nullptr;
  for (const Entry &e : sorted) {
    if (e.begin < expected)
      fail(path, "tensors '" + prev->name + "' and '" + e.name +
                     "' overlap in the data section");
    if (e.begin > expected)
      fail(path, "gap in the data section before tensor '" + e.name +
                     "' (bytes " + std::to_string(expected) + " to " +
                     std::to_string(e.begin) + " belong to no tensor)");
    expected = e.end;
    prev = &e;
  }
  if (expected != dataSize)
    fail(path, "the data section has " + std::to_string(dataSize) +
                   " bytes but the tensors cover " + std::to_string(expected));
  if (auto it = file.metadata.find(kChecksumsKey); it != file.metadata.end()) {
    checksums = nlohmann::json::parse(it->second, nullptr, false);
    if (!checksums.is_object())
      fail(path, std::string("__metadata__ '") + kChecksumsKey +
                     "' is not a JSON object of checksums");
    for (const Entry &e : entries)
      if (!checksums.contains(e.name) || !checksums[e.name].is_string())
        fail(path, "tensor '" + e.name + "' has no checksum in '" +
                       kChecksumsKey + "' (the header was edited?)");
    file.metadata.erase(it);
    file.checksummed = true;
  }

  if (checkHeader)
    checkHeader(file);

  for (const Entry &e : entries) {
    Tensor &t = file.tensors.at(e.name);
    size_t n = size_t(t.elements()), bytes = size_t(e.end - e.begin);
    void *dst = nullptr;
    switch (t.dtype) {
    case DType::F32:
      t.f32.resize(n);
      dst = t.f32.data();
      break;
    case DType::I64:
      t.i64.resize(n);
      dst = t.i64.data();
      break;
    case DType::U8:
      t.u8.resize(n);
      dst = t.u8.data();
      break;
    }
    if (bytes)
      readFully(fd.get(), path, dst, bytes, dataStart + e.begin);
    if (file.checksummed) {
      std::string stored = checksums[e.name],
                  actual = platform::contentHash(dst, bytes);
      if (stored != actual)
        fail(path, "tensor '" + e.name +
                       "' does not match its checksum "
                       "(stored " +
                       stored + ", data " + actual + "): the file is corrupt");
    }
  }
  return file;
}

void writeTextFile(const std::string &path, const std::string &text) {
  FileWriter w(path);
  w.write(text.data(), text.size());
  w.finish();
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

} // namespace

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::I64:
    return "I64";
  case DType::U8:
    return "U8";
  }
  return "?";
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::I64:
    return 8;
  case DType::U8:
    return 1;
  }
  return 0;
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void setCheckpointWriteFaultForTesting(CheckpointWriteFault fault) {
  std::lock_guard<std::mutex> lock(faultMutex);
  writeFault = std::move(fault);
}

void writeSafetensors(const std::string &path,
                      const std::vector<TensorRef> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  // The header is assembled by hand, not as a json object, because
  // nlohmann::json sorts keys and the tensors must stay in the given order.
  // Compact JSON with "__metadata__" first, as Hugging Face writes it.
  nlohmann::json checksums = nlohmann::json::object();
  for (const TensorRef &t : tensors) {
    uint64_t count;
    if (elementCount(t.shape, count))
      checksums[t.name] =
          platform::contentHash(t.data, size_t(count * dtypeSize(t.dtype)));
  }
  std::map<std::string, std::string> withChecksums = metadata;
  withChecksums[kChecksumsKey] = checksums.dump();
  std::string header =
      "{\"__metadata__\":" + nlohmann::json(withChecksums).dump();
  std::vector<std::string> seen;
  uint64_t offset = 0;
  for (const TensorRef &t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      fail(path, "invalid tensor name '" + t.name + "'");
    if (std::find(seen.begin(), seen.end(), t.name) != seen.end())
      fail(path, "duplicate tensor name '" + t.name + "'");
    seen.push_back(t.name);
    uint64_t count;
    if (!elementCount(t.shape, count))
      fail(path,
           "tensor '" + t.name + "' has invalid shape " + shapeText(t.shape));
    uint64_t bytes = count * dtypeSize(t.dtype);
    if (bytes && !t.data)
      fail(path, "tensor '" + t.name + "' has no data");
    nlohmann::json shape = nlohmann::json::array();
    for (int64_t d : t.shape)
      shape.push_back(d);
    if (header.size() > 1)
      header += ",";
    header += nlohmann::json(t.name).dump() + ":{\"dtype\":\"" +
              dtypeName(t.dtype) + "\",\"shape\":" + shape.dump() +
              ",\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // Pad so the data section starts 8-byte aligned, letting readers map it
  // and use it in place.
  header.append((8 - header.size() % 8) % 8, ' ');

  FileWriter w(path);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = (uint64_t(header.size()) >> (8 * i)) & 0xff;
  w.write(len, 8);
  w.write(header.data(), header.size());
  for (const TensorRef &t : tensors) {
    uint64_t count;
    elementCount(t.shape, count);
    if (count)
      w.write(t.data, size_t(count * dtypeSize(t.dtype)));
  }
  w.finish();
}

SafetensorsFile readSafetensors(const std::string &path) {
  return readSafetensorsImpl(path, nullptr);
}

nlohmann::json toJson(const CheckpointState &s) {
  return {{"format", "lap-checkpoint"},
          {"version", kCheckpointVersion},
          {"step", s.step},
          {"seed", s.seed},
          {"rng_state", s.rngState},
          {"data_position", s.dataPosition},
          {"spec", s.specName},
          {"manifest_hash", s.manifestHash},
          {"schedule", s.schedule},
          {"extra", s.extra}};
}

CheckpointState stateFromJson(const nlohmann::json &j,
                              const std::string &origin) {
  if (!j.is_object())
    fail(origin, "not a JSON object");
  if (!j.contains("format") || j["format"] != "lap-checkpoint")
    fail(origin, "not a lap checkpoint state ('format' is not "
                 "\"lap-checkpoint\")");
  auto field = [&](const char *key, bool (nlohmann::json::*is)() const noexcept,
                   const char *type) -> const nlohmann::json & {
    auto it = j.find(key);
    if (it == j.end() || !((*it).*is)())
      fail(origin,
           std::string("'") + key + "' is " +
               (it == j.end() ? "missing" : "not " + std::string(type)));
    return *it;
  };
  const nlohmann::json &version =
      field("version", &nlohmann::json::is_number_integer, "an integer");
  if (version != kCheckpointVersion)
    fail(origin, "version " + version.dump() + "; this lap reads version " +
                     std::to_string(kCheckpointVersion) + " checkpoints");
  auto count = [&](const char *key) {
    const nlohmann::json &v =
        field(key, &nlohmann::json::is_number_integer, "an integer");
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT64_MAX)
                               : v.get<int64_t>() < 0)
      fail(origin, std::string("'") + key + "' is " + v.dump() +
                       ", outside 0.." + std::to_string(INT64_MAX));
    return v.get<int64_t>();
  };
  CheckpointState s;
  s.step = count("step");
  s.dataPosition = count("data_position");
  s.seed = field("seed", &nlohmann::json::is_number_unsigned,
                 "a non-negative integer")
               .get<uint64_t>();
  for (const nlohmann::json &word :
       field("rng_state", &nlohmann::json::is_array, "an array")) {
    if (!word.is_number_unsigned())
      fail(origin,
           "'rng_state' holds " + word.dump() + ", not a non-negative integer");
    s.rngState.push_back(word.get<uint64_t>());
  }
  s.specName = field("spec", &nlohmann::json::is_string, "a string");
  s.manifestHash =
      field("manifest_hash", &nlohmann::json::is_string, "a string");
  s.schedule = field("schedule", &nlohmann::json::is_object, "an object");
  s.extra = field("extra", &nlohmann::json::is_object, "an object");
  return s;
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
                "': " + errnoText(errno));

  bool movedOld = false;
  try {
    std::map<std::string, std::string> meta = data.metadata;
    meta.emplace("format", "pt");
    writeSafetensors(joinPath(tmpDir, "model.safetensors"), data.parameters,
                     meta);
    writeSafetensors(joinPath(tmpDir, "optimizer.safetensors"), data.optimizer,
                     {});
    writeTextFile(joinPath(tmpDir, "state.json"),
                  toJson(data.state).dump(2) + "\n");
    fsyncDirectory(tmpDir);
    // rename() cannot replace a non-empty directory: move an existing
    // checkpoint of this step aside first, and back if the swap fails.
    if (fs::exists(finalDir, ec)) {
      fs::remove_all(oldDir, ec);
      if (::rename(finalDir.c_str(), oldDir.c_str()) != 0)
        fail(finalDir,
             "cannot move the existing checkpoint aside: " + errnoText(errno));
      movedOld = true;
    }
    if (::rename(tmpDir.c_str(), finalDir.c_str()) != 0)
      fail(tmpDir, "cannot rename to '" + finalDir + "': " + errnoText(errno));
    fsyncDirectory(runDir);
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

  std::string modelPath = joinPath(checkpointDir, "model.safetensors");
  out.model = readSafetensorsImpl(modelPath, [&](const SafetensorsFile &f) {
    std::map<std::string, const TensorSpec *> byName;
    for (const TensorSpec &s : expected)
      byName[s.name] = &s;
    for (const std::string &name : f.order) {
      const Tensor &t = f.tensors.at(name);
      auto it = byName.find(name);
      if (it == byName.end())
        fail(modelPath, "tensor '" + name + "' with shape " +
                            shapeText(t.shape) +
                            " is not a parameter of the model");
      if (t.shape != it->second->shape)
        fail(modelPath, "tensor '" + name + "' has shape " +
                            shapeText(t.shape) + ", the model expects " +
                            shapeText(it->second->shape));
      if (t.dtype != DType::F32)
        fail(modelPath, "tensor '" + name + "' has dtype " +
                            dtypeName(t.dtype) + ", the model expects F32");
    }
    for (const TensorSpec &s : expected)
      if (!f.tensors.count(s.name))
        fail(modelPath, "tensor '" + s.name +
                            "' is missing, the model "
                            "expects shape " +
                            shapeText(s.shape));
  });
  std::string optimizerPath = joinPath(checkpointDir, "optimizer.safetensors");
  out.optimizer = readSafetensors(optimizerPath);
  for (auto [file, path] : {std::pair{&out.model, modelPath},
                            std::pair{&out.optimizer, optimizerPath}})
    if (!file->checksummed)
      fail(path, std::string("has no tensor checksums ('") + kChecksumsKey +
                     "' in its __metadata__), so its data cannot be "
                     "trusted; lap writes them into every checkpoint");
  return out;
}

} // namespace lap
