//===- Safetensors.cpp - Hugging Face's safetensors files -----------------===//
//
// Files are read through POSIX calls rather than iostreams so that every
// read has an errno to report, and so that the data of a large tensor is
// read straight into its vector without a staging copy.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Safetensors.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"
#include "runtime/platform/Hash.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lap {

// The data section is the host's memory image of each tensor; safetensors
// mandates little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

namespace {

using lap::platform::fail;

// Hugging Face's reader refuses larger headers; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kChunkBytes = size_t(64) << 20;

std::string errnoText(int err) { return std::strerror(err); }

} // namespace

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

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

SafetensorsFile readSafetensors(
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

  platform::AtomicFileWriter file(path);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = (uint64_t(header.size()) >> (8 * i)) & 0xff;
  file.write(len, 8);
  file.write(header);
  for (const TensorRef &t : tensors) {
    uint64_t count;
    elementCount(t.shape, count);
    if (count)
      file.write(t.data, size_t(count * dtypeSize(t.dtype)));
  }
  file.commit();
}

} // namespace lap
