//===- ImageDatasets.cpp - Labelled image data sets -------------*- C++ -*-===//

#include "runtime/data/ImageDatasets.h"

#include "runtime/data/ImageFiles.h"
#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>

using namespace lap::data;
namespace fs = std::filesystem;

namespace {

using lap::platform::fail;

void checkIndex(int64_t i, int64_t size, const std::string &source) {
  if (i < 0 || i >= size)
    throw std::out_of_range(source + ": image index " + std::to_string(i) +
                            " is out of range for " + std::to_string(size) +
                            " images");
}

std::string baseName(const std::string &path) {
  return fs::path(path).filename().string();
}

std::vector<std::string> numberNames(int64_t classes) {
  std::vector<std::string> names;
  for (int64_t c = 0; c < classes; ++c)
    names.push_back(std::to_string(c));
  return names;
}

/// A data set held in memory as bytes, [C, H, W] per image.
class InMemoryImages final : public ImageDataset {
public:
  InMemoryImages(int64_t channels, int64_t height, int64_t width,
                 std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                 std::vector<std::string> classNames, std::string source)
      : channels_(channels), height_(height), width_(width),
        pixels_(std::move(pixels)), labels_(std::move(labels)),
        classNames_(std::move(classNames)), source_(std::move(source)) {}

  int64_t size() const override { return int64_t(labels_.size()); }
  int32_t label(int64_t i) const override {
    checkIndex(i, size(), source_);
    return labels_[size_t(i)];
  }
  int64_t numClasses() const override { return int64_t(classNames_.size()); }
  const std::vector<std::string> &classNames() const override {
    return classNames_;
  }

  Image image(int64_t i) const override {
    checkIndex(i, size(), source_);
    Image out(channels_, height_, width_);
    const uint8_t *in = pixels_.data() + size_t(i) * out.pixels.size();
    for (size_t k = 0; k < out.pixels.size(); ++k)
      out.pixels[k] = float(in[k]) / 255.0f;
    return out;
  }

  std::string description() const override {
    return std::to_string(size()) + " images " + std::to_string(channels_) +
           "x" + std::to_string(height_) + "x" + std::to_string(width_) + ", " +
           std::to_string(numClasses()) + " classes (" + source_ + ")";
  }

private:
  int64_t channels_, height_, width_;
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
  std::vector<std::string> classNames_;
  std::string source_;
};

} // namespace

//===----------------------------------------------------------------------===//
// IDX
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kIdxClasses = 10;

/// A file read through zlib, which inflates gzip data and passes anything
/// else through unchanged.
class GzipReader {
public:
  // The file is checked first: gzopen would block on a FIFO.
  explicit GzipReader(const std::string &path)
      : path_(path), file_((lap::platform::regularFileSize(path),
                            gzopen(path.c_str(), "rb"))) {
    if (!file_)
      fail(path, std::string("cannot open: ") + std::strerror(errno));
    gzbuffer(file_, 1 << 18);
  }
  ~GzipReader() { gzclose(file_); }
  GzipReader(const GzipReader &) = delete;
  GzipReader &operator=(const GzipReader &) = delete;

  /// Reads up to `bytes` bytes; fewer only at the end of the file.
  size_t read(uint8_t *out, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
      // gzread counts in unsigned int and returns int.
      auto chunk = unsigned(std::min<size_t>(bytes - done, size_t(1) << 30));
      int n = gzread(file_, out + done, chunk);
      if (n < 0) {
        int code = 0;
        const char *message = gzerror(file_, &code);
        fail(path_, code == Z_ERRNO
                        ? std::string("cannot read: ") + std::strerror(errno)
                        : std::string("bad gzip data: ") + message);
      }
      if (n == 0) {
        // zlib reports a gzip stream cut short as the end of the file.
        int code = 0;
        gzerror(file_, &code);
        if (code == Z_BUF_ERROR)
          fail(path_, "truncated: the gzip stream ends early");
        break;
      }
      done += size_t(n);
    }
    return done;
  }

private:
  std::string path_;
  gzFile file_;
};

struct IdxFile {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

/// Reads an IDX file of unsigned bytes in `rank` dimensions: the magic
/// 0x00000800 + rank, `rank` big-endian uint32 sizes, then the data.
IdxFile readIdxFile(const std::string &path, int rank, const char *what) {
  GzipReader in(path);
  uint8_t header[4 + 4 * 3];
  const size_t headerBytes = 4 + 4 * size_t(rank);
  if (in.read(header, headerBytes) != headerBytes)
    fail(path, "truncated: shorter than the " + std::to_string(headerBytes) +
                   "-byte header of an IDX " + what + " file");
  auto bigEndian = [&](size_t at) {
    return uint32_t(header[at]) << 24 | uint32_t(header[at + 1]) << 16 |
           uint32_t(header[at + 2]) << 8 | uint32_t(header[at + 3]);
  };
  const uint32_t magic = bigEndian(0), expected = 0x800u + uint32_t(rank);
  if (magic != expected)
    fail(path, "bad magic " + hex32(magic) + " (expected " + hex32(expected) +
                   ": an IDX " + what + " file of unsigned bytes in " +
                   std::to_string(rank) + " dimensions)");

  IdxFile file;
  uint64_t payload = 1;
  std::string shape;
  for (int d = 0; d < rank; ++d) {
    uint32_t n = bigEndian(4 + 4 * size_t(d));
    if (n != 0 && payload > std::numeric_limits<uint64_t>::max() / 2 / n)
      fail(path,
           "dimensions too large for an IDX " + std::string(what) + " file");
    payload *= n;
    file.dims.push_back(n);
    shape += (d ? "x" : "") + std::to_string(n);
  }

  // Read in chunks rather than allocating what the header claims, so a
  // damaged header is an error and not an enormous allocation.
  constexpr uint64_t kChunk = uint64_t(1) << 20;
  for (;;) {
    size_t have = file.data.size();
    auto want = size_t(std::min(kChunk, payload + 1 - have));
    file.data.resize(have + want);
    size_t got = in.read(file.data.data() + have, want);
    file.data.resize(have + got);
    if (got < want || file.data.size() > payload)
      break;
  }
  if (file.data.size() < payload)
    fail(path, "truncated: the header announces " + shape + " = " +
                   std::to_string(payload) + " bytes of " + what +
                   ", the file holds " + std::to_string(file.data.size()));
  if (file.data.size() > payload)
    fail(path, "trailing bytes after the " + std::to_string(payload) +
                   " bytes of " + what + " the header announces (" + shape +
                   ")");
  return file;
}

} // namespace

std::unique_ptr<ImageDataset>
lap::data::readIdx(const std::string &imagesPath,
                   const std::string &labelsPath) {
  // Labels first: the small file, and a mismatch is found before the large.
  IdxFile labels = readIdxFile(labelsPath, 1, "labels");
  IdxFile images = readIdxFile(imagesPath, 3, "images");
  const uint32_t count = images.dims[0], rows = images.dims[1],
                 cols = images.dims[2];
  if (count == 0)
    fail(imagesPath, "holds no images");
  if (rows == 0 || cols == 0)
    fail(imagesPath, "images of " + std::to_string(rows) + "x" +
                         std::to_string(cols) + " pixels hold nothing");
  if (labels.dims[0] != count)
    fail(labelsPath, std::to_string(labels.dims[0]) + " labels for the " +
                         std::to_string(count) + " images of " + imagesPath);

  std::vector<int32_t> labelValues(labels.data.begin(), labels.data.end());
  for (size_t i = 0; i < labelValues.size(); ++i)
    if (labelValues[i] >= kIdxClasses)
      fail(labelsPath, "label " + std::to_string(labelValues[i]) +
                           " at index " + std::to_string(i) +
                           " is out of range for " +
                           std::to_string(kIdxClasses) + " classes");
  return std::make_unique<InMemoryImages>(
      1, rows, cols, std::move(images.data), std::move(labelValues),
      numberNames(kIdxClasses), baseName(imagesPath));
}

//===----------------------------------------------------------------------===//
// CIFAR
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kCifarSide = 32;
constexpr size_t kCifarPixelBytes = 3 * kCifarSide * kCifarSide;
constexpr int32_t kCifar100Coarse = 20;

/// Class names, one a line (blank lines ignored), from `path` when it
/// exists, else "0", "1", ...
std::vector<std::string> classNamesOrNumbers(const fs::path &path,
                                             int64_t classes) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return numberNames(classes);
  std::ifstream in = lap::platform::openRegularFile(path.string());
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() &&
           std::isspace(static_cast<unsigned char>(line.back())))
      line.pop_back();
    if (!line.empty())
      names.push_back(line);
  }
  if (int64_t(names.size()) != classes)
    fail(path.string(), std::to_string(names.size()) +
                            " class names, expected " +
                            std::to_string(classes));
  return names;
}

} // namespace

std::unique_ptr<ImageDataset>
lap::data::readCifar(const std::vector<std::string> &paths, bool cifar100Fine) {
  if (paths.empty())
    throw std::runtime_error("readCifar: no CIFAR files given");
  const char *format = cifar100Fine ? "CIFAR-100" : "CIFAR-10";
  const int32_t classes = cifar100Fine ? 100 : 10;
  const size_t labelBytes = cifar100Fine ? 2 : 1;
  const size_t record = labelBytes + kCifarPixelBytes;
  const size_t otherRecord = (cifar100Fine ? 1 : 2) + kCifarPixelBytes;

  // Check every file's size before reading any, then allocate once.
  std::vector<std::ifstream> files;
  std::vector<uint64_t> records;
  for (const std::string &path : paths) {
    uint64_t bytes = 0;
    files.push_back(lap::platform::openRegularFile(path, &bytes));
    if (bytes == 0)
      fail(path, std::string("empty: no ") + format + " records");
    if (bytes % record != 0)
      fail(path,
           std::to_string(bytes) + " bytes is not a whole number of " + format +
               " records of " + std::to_string(record) + " bytes (" +
               std::to_string(labelBytes) + " label + 3072 pixel bytes)" +
               (bytes % otherRecord == 0
                    ? std::string("; it is of ") +
                          (cifar100Fine ? "CIFAR-10" : "CIFAR-100") + " records"
                    : std::string()));
    records.push_back(bytes / record);
  }
  uint64_t total = 0;
  for (uint64_t n : records)
    total += n;

  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  pixels.reserve(size_t(total) * kCifarPixelBytes);
  labels.reserve(size_t(total));
  std::vector<uint8_t> buffer(record);
  for (size_t f = 0; f < paths.size(); ++f) {
    for (uint64_t r = 0; r < records[f]; ++r) {
      if (!files[f].read(reinterpret_cast<char *>(buffer.data()),
                         std::streamsize(record)))
        fail(paths[f], "cannot read record " + std::to_string(r));
      if (cifar100Fine && buffer[0] >= kCifar100Coarse)
        fail(paths[f], "coarse label " + std::to_string(buffer[0]) +
                           " of record " + std::to_string(r) +
                           " is out of range for " +
                           std::to_string(kCifar100Coarse) + " classes");
      const int32_t label = buffer[labelBytes - 1];
      if (label >= classes)
        fail(paths[f], "label " + std::to_string(label) + " of record " +
                           std::to_string(r) + " is out of range for " +
                           std::to_string(classes) + " classes (" + format +
                           ")");
      labels.push_back(label);
      pixels.insert(pixels.end(), buffer.begin() + long(labelBytes),
                    buffer.end());
    }
  }

  const fs::path dir = fs::path(paths[0]).parent_path();
  std::vector<std::string> names = classNamesOrNumbers(
      dir / (cifar100Fine ? "fine_label_names.txt" : "batches.meta.txt"),
      classes);
  std::string source;
  for (const std::string &path : paths)
    source += (source.empty() ? "" : ", ") + baseName(path);
  return std::make_unique<InMemoryImages>(3, kCifarSide, kCifarSide,
                                          std::move(pixels), std::move(labels),
                                          std::move(names), source);
}

namespace {

} // namespace

//===----------------------------------------------------------------------===//
// ImageFolder
//===----------------------------------------------------------------------===//

namespace {

bool isImageFileName(const std::string &name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

/// The names of the entries of `dir` that satisfy `keep`, sorted.
template <typename Keep>
std::vector<std::string> sortedEntries(const fs::path &dir, Keep keep) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code typeError;
    if (keep(*it, typeError) && !typeError)
      names.push_back(it->path().filename().string());
  }
  if (ec)
    fail(dir.string(), "cannot list: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

/// What an entry named like an image is when it is no regular file (lstat
/// and stat: a link is followed once), or "" for an image file.
std::string notAnImageFile(const fs::directory_entry &entry) {
  std::error_code ec;
  fs::file_status link = entry.symlink_status(ec);
  fs::file_status target = entry.status(ec);
  if (fs::is_regular_file(target))
    return "";
  if (fs::is_symlink(link) && !fs::exists(target))
    return "a dangling link";
  const char *what = fs::is_fifo(target)             ? "a FIFO"
                     : fs::is_character_file(target) ? "a character device"
                     : fs::is_block_file(target)     ? "a block device"
                     : fs::is_socket(target)         ? "a socket"
                     : fs::is_directory(target)      ? "a directory"
                                                     : "a special file";
  return fs::is_symlink(link) ? std::string("a link to ") + what : what;
}

/// Entries that were skipped: how many of each kind, and the first path.
struct Skipped {
  std::map<std::string, int64_t> counts;
  std::string first, firstWhat;

  std::string summary() const {
    int64_t total = 0;
    std::string kinds;
    for (const auto &[what, n] : counts) {
      total += n;
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    }
    return std::to_string(total) + " entr" + (total == 1 ? "y" : "ies") +
           " named like images skipped as no image files (" + kinds +
           "; the first: " + first + ")";
  }
};

/// Files root/<class>/<file>, listed on open and decoded on demand. A file's
/// path is rebuilt from its class and name rather than stored whole, which
/// for ImageNet's 1.28 million files saves about 100 MB.
class ImageFolder final : public ImageDataset {
public:
  ImageFolder(std::string root, std::vector<std::string> classNames,
              std::vector<std::string> files, std::vector<int32_t> labels,
              std::string skipped)
      : root_(std::move(root)), classNames_(std::move(classNames)),
        files_(std::move(files)), labels_(std::move(labels)),
        skipped_(std::move(skipped)) {}

  int64_t size() const override { return int64_t(files_.size()); }
  int32_t label(int64_t i) const override {
    checkIndex(i, size(), root_);
    return labels_[size_t(i)];
  }
  int64_t numClasses() const override { return int64_t(classNames_.size()); }
  const std::vector<std::string> &classNames() const override {
    return classNames_;
  }

  Image image(int64_t i) const override {
    checkIndex(i, size(), root_);
    fs::path path = fs::path(root_) / classNames_[size_t(labels_[size_t(i)])] /
                    files_[size_t(i)];
    return decodeImageFile(path.string());
  }

  std::string description() const override {
    return std::to_string(size()) + " images, " + std::to_string(numClasses()) +
           " classes (" + root_ + (skipped_.empty() ? "" : "; " + skipped_) +
           ")";
  }

private:
  std::string root_;
  std::vector<std::string> classNames_;
  std::vector<std::string> files_; // names within their class directory
  std::vector<int32_t> labels_;
  std::string skipped_; // what was skipped on open, "" for nothing
};

} // namespace

std::unique_ptr<ImageDataset>
lap::data::openImageFolder(const std::string &root, bool strict) {
  std::error_code ec;
  if (!fs::exists(root, ec))
    fail(root, "no such directory");
  if (!fs::is_directory(root, ec))
    fail(root, "not a directory");
  std::vector<std::string> classes = sortedEntries(
      root, [](const fs::directory_entry &entry, std::error_code &error) {
        return entry.is_directory(error);
      });
  if (classes.empty())
    fail(root, "no class directories (expected " + root + "/<class>/<image>)");
  if (classes.size() > size_t(std::numeric_limits<int32_t>::max()))
    fail(root, "too many class directories");

  std::vector<std::string> files;
  std::vector<int32_t> labels;
  Skipped skipped;
  for (size_t c = 0; c < classes.size(); ++c) {
    const fs::path dir = fs::path(root) / classes[c];
    std::vector<std::string> names = sortedEntries(
        dir, [&](const fs::directory_entry &entry, std::error_code &) {
          if (!isImageFileName(entry.path().filename().string()))
            return false;
          std::string what = notAnImageFile(entry);
          if (what.empty())
            return true;
          ++skipped.counts[what];
          std::string path = entry.path().string();
          if (skipped.first.empty() || path < skipped.first) {
            skipped.first = path; // the listing's order is the OS's
            skipped.firstWhat = what;
          }
          return false;
        });
    if (names.empty())
      fail(dir.string(), "an empty class: no .jpg, .jpeg or .png files");
    files.insert(files.end(), std::make_move_iterator(names.begin()),
                 std::make_move_iterator(names.end()));
    labels.insert(labels.end(), names.size(), int32_t(c));
  }
  if (strict && !skipped.counts.empty())
    fail(skipped.first,
         skipped.firstWhat + ", not an image file (train.data.strict)");
  return std::make_unique<ImageFolder>(
      root, std::move(classes), std::move(files), std::move(labels),
      skipped.counts.empty() ? "" : skipped.summary());
}
