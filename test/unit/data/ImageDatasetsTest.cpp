//===- ImageDatasetsTest.cpp - IDX, CIFAR and ImageFolder data sets -------===//
//
// Fixture files are written at test time into a fresh temporary directory:
// IDX and CIFAR byte by byte (gzip through zlib), PNG and JPEG with libpng
// and libjpeg. Expected pixels are the bytes written, divided by 255 in
// double precision; the installed Fashion-MNIST files are checked against
// an independent read of their bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ImageDatasets.h"
#include "test/unit/TempDir.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstddef>
#include <cstdio>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include <cmath>
#include <csetjmp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

using namespace lap::data;
namespace fs = std::filesystem;

namespace {

// A float pixel is v / 255 rounded once to float: within 6e-8 of the double.
constexpr double kExact = 1e-7;
// JPEG at quality 100 without chroma subsampling, on 8x8 blocks of flat
// colour aligned to its DCT blocks, is lossy only through rounding in the
// colour transform and the DCT: within 3 levels of 255.
constexpr double kJpegTolerance = 3.0 / 255.0;

const char *kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

using Bytes = std::vector<uint8_t>;

/// The error message of `f`, or "" if it did not throw std::runtime_error.
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

#define EXPECT_MENTIONS(message, text)                                         \
  EXPECT_NE((message).find(text), std::string::npos)                           \
      << "message: \"" << (message) << "\" lacks \"" << (text) << "\""

/// Expects `image` to hold `expected` ([C, H, W] bytes) / 255 within `tol`.
void expectPixels(const Image &image, int64_t channels, int64_t height,
                  int64_t width, const std::vector<int> &expected, double tol) {
  ASSERT_EQ(image.channels, channels);
  ASSERT_EQ(image.height, height);
  ASSERT_EQ(image.width, width);
  ASSERT_EQ(image.pixels.size(), expected.size());
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        EXPECT_NEAR(image.at(c, y, x),
                    expected[size_t((c * height + y) * width + x)] / 255.0, tol)
            << "at channel " << c << ", row " << y << ", column " << x;
}

void appendBigEndian(Bytes &out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(uint8_t(v >> shift));
}

Bytes idxImages(uint32_t count, uint32_t rows, uint32_t cols,
                const Bytes &pixels, uint32_t magic = 0x803) {
  Bytes out;
  appendBigEndian(out, magic);
  appendBigEndian(out, count);
  appendBigEndian(out, rows);
  appendBigEndian(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

Bytes idxLabels(const Bytes &labels, uint32_t magic = 0x801) {
  Bytes out;
  appendBigEndian(out, magic);
  appendBigEndian(out, uint32_t(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

/// A CIFAR record: label bytes, then R, G, B planes of 32x32 whose values
/// depend on (seed, channel, y, x), as cifarPixel says.
int cifarPixel(int seed, int c, int y, int x) {
  return (seed * 31 + c * 85 + y * 7 + x * 3) % 256;
}

Bytes cifarRecord(const Bytes &labelBytes, int seed) {
  Bytes out = labelBytes;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x)
        out.push_back(uint8_t(cifarPixel(seed, c, y, x)));
  return out;
}

std::vector<int> cifarExpected(int seed) {
  std::vector<int> out;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x)
        out.push_back(cifarPixel(seed, c, y, x));
  return out;
}

/// Writes a PNG whose rows are given packed as PNG stores them (16-bit
/// samples big-endian, samples under 8 bits high bits first).
void writePng(const std::string &path, uint32_t width, uint32_t height,
              int colorType, int bitDepth, const Bytes &packed,
              const std::vector<png_color> &palette = {},
              const Bytes &transparency = {}, bool interlaced = false) {
  FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  const size_t rowBytes = packed.size() / height;
  std::vector<png_bytep> rows(height);
  for (uint32_t y = 0; y < height; ++y)
    rows[y] = const_cast<png_bytep>(packed.data() + y * rowBytes);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    FAIL() << "libpng could not write " << path;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, width, height, bitDepth, colorType,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty())
    png_set_PLTE(png, info, palette.data(), int(palette.size()));
  if (!transparency.empty())
    png_set_tRNS(png, info, transparency.data(), int(transparency.size()),
                 nullptr);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(file);
}

/// Writes a JPEG at quality 100 with every component at full resolution.
void writeJpeg(const std::string &path, int width, int height,
               J_COLOR_SPACE space, int components, const Bytes &interleaved) {
  FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file);
  cinfo.image_width = JDIMENSION(width);
  cinfo.image_height = JDIMENSION(height);
  cinfo.input_components = components;
  cinfo.in_color_space = space;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  for (int c = 0; c < cinfo.num_components; ++c) {
    cinfo.comp_info[c].h_samp_factor = 1;
    cinfo.comp_info[c].v_samp_factor = 1;
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(
        interleaved.data() + size_t(cinfo.next_scanline) * width * components);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(file);
}

/// A 16x16 image of four flat 8x8 quadrants, colours[q] for quadrant q
/// (top left, top right, bottom left, bottom right), interleaved.
Bytes quadrants(const std::vector<Bytes> &colours) {
  const size_t components = colours[0].size();
  Bytes out;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) {
      const Bytes &colour = colours[size_t((y / 8) * 2 + x / 8)];
      out.insert(out.end(), colour.begin(), colour.begin() + long(components));
    }
  return out;
}

/// The [C, H, W] bytes of quadrants() with colours[q] for quadrant q.
std::vector<int>
quadrantsExpected(const std::vector<std::vector<int>> &colours) {
  const size_t channels = colours[0].size();
  std::vector<int> out;
  for (size_t c = 0; c < channels; ++c)
    for (int y = 0; y < 16; ++y)
      for (int x = 0; x < 16; ++x)
        out.push_back(colours[size_t((y / 8) * 2 + x / 8)][c]);
  return out;
}

/// Deterministic pseudo-random bytes.
Bytes noise(size_t n, uint64_t seed) {
  Bytes out(n);
  for (uint8_t &b : out) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    b = uint8_t(seed >> 56);
  }
  return out;
}

class ImageDatasetsTest : public ::testing::Test {
protected:
  std::string file(const std::string &name) const {
    fs::path path = dir_.path() / name;
    fs::create_directories(path.parent_path());
    return path.string();
  }

  std::string writeFile(const std::string &name, const Bytes &bytes) const {
    std::string path = file(name);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              std::streamsize(bytes.size()));
    return path;
  }

  std::string writeText(const std::string &name,
                        const std::string &text) const {
    return writeFile(name, Bytes(text.begin(), text.end()));
  }

  std::string writeGzip(const std::string &name, const Bytes &bytes) const {
    std::string path = file(name);
    gzFile out = gzopen(path.c_str(), "wb");
    EXPECT_NE(out, nullptr);
    EXPECT_EQ(gzwrite(out, bytes.data(), unsigned(bytes.size())),
              int(bytes.size()));
    EXPECT_EQ(gzclose(out), Z_OK);
    return path;
  }

  Bytes readFile(const std::string &path) const {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }

  lap::test::TempDir dir_;
};

//===----------------------------------------------------------------------===//
// IDX
//===----------------------------------------------------------------------===//

// Three 2x3 images: pixel (y, x) of image n is 100 n + 10 y + x.
const Bytes kIdxPixels = {0,   1,   2,   10,  11,  12,  100, 101, 102,
                          110, 111, 112, 200, 201, 202, 210, 211, 212};
const Bytes kIdxLabels = {7, 0, 9};

void expectIdxFixture(const ImageDataset &set) {
  ASSERT_EQ(set.size(), 3);
  EXPECT_EQ(set.numClasses(), 10);
  EXPECT_EQ(set.classNames(),
            (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7",
                                      "8", "9"}));
  EXPECT_EQ(set.label(0), 7);
  EXPECT_EQ(set.label(1), 0);
  EXPECT_EQ(set.label(2), 9);
  for (int n = 0; n < 3; ++n)
    expectPixels(set.image(n), 1, 2, 3,
                 {100 * n, 100 * n + 1, 100 * n + 2, 100 * n + 10, 100 * n + 11,
                  100 * n + 12},
                 kExact);
}

TEST_F(ImageDatasetsTest, IdxRaw) {
  auto set =
      readIdx(writeFile("imgs-idx3-ubyte", idxImages(3, 2, 3, kIdxPixels)),
              writeFile("lbls-idx1-ubyte", idxLabels(kIdxLabels)));
  expectIdxFixture(*set);
  EXPECT_EQ(set->description(), "3 images 1x2x3, 10 classes (imgs-idx3-ubyte)");
  EXPECT_THROW(set->image(3), std::out_of_range);
  EXPECT_THROW(set->label(-1), std::out_of_range);
}

TEST_F(ImageDatasetsTest, IdxGzipped) {
  auto set =
      readIdx(writeGzip("imgs-idx3-ubyte.gz", idxImages(3, 2, 3, kIdxPixels)),
              writeGzip("lbls-idx1-ubyte.gz", idxLabels(kIdxLabels)));
  expectIdxFixture(*set);
  EXPECT_EQ(set->description(),
            "3 images 1x2x3, 10 classes (imgs-idx3-ubyte.gz)");
}

TEST_F(ImageDatasetsTest, IdxRejectsBadMagic) {
  std::string labels = writeFile("l", idxLabels(kIdxLabels));
  std::string images = writeFile("i", idxImages(3, 2, 3, kIdxPixels, 0x801));
  std::string err = errorOf([&] { readIdx(images, labels); });
  EXPECT_MENTIONS(err, images + ": bad magic 0x00000801 (expected 0x00000803");

  std::string goodImages = writeFile("gi", idxImages(3, 2, 3, kIdxPixels));
  std::string badLabels = writeFile("bl", idxLabels(kIdxLabels, 0x803));
  err = errorOf([&] { readIdx(goodImages, badLabels); });
  EXPECT_MENTIONS(err,
                  badLabels + ": bad magic 0x00000803 (expected 0x00000801");
}

TEST_F(ImageDatasetsTest, IdxRejectsTruncatedImages) {
  std::string labels = writeFile("l", idxLabels(kIdxLabels));
  Bytes short1 = idxImages(3, 2, 3, kIdxPixels);
  short1.pop_back();
  std::string images = writeFile("i", short1);
  std::string err = errorOf([&] { readIdx(images, labels); });
  EXPECT_MENTIONS(err, images + ": truncated");
  EXPECT_MENTIONS(err, "3x2x3 = 18 bytes of images, the file holds 17");

  // A header cut short, and a gzip stream cut short.
  std::string header = writeFile("h", Bytes{0, 0, 8, 3, 0, 0});
  EXPECT_MENTIONS(errorOf([&] { readIdx(header, labels); }),
                  header + ": truncated");
  Bytes gz = readFile(writeGzip("full.gz", idxImages(3, 2, 3, noise(18, 1))));
  gz.resize(gz.size() / 2);
  std::string cut = writeFile("cut.gz", gz);
  EXPECT_MENTIONS(errorOf([&] { readIdx(cut, labels); }),
                  cut + ": truncated: the gzip stream ends early");
}

TEST_F(ImageDatasetsTest, IdxRejectsTruncatedLabels) {
  std::string images = writeFile("i", idxImages(3, 2, 3, kIdxPixels));
  Bytes labelBytes = idxLabels(kIdxLabels);
  labelBytes.pop_back();
  std::string labels = writeFile("l", labelBytes);
  std::string err = errorOf([&] { readIdx(images, labels); });
  EXPECT_MENTIONS(err, labels + ": truncated");
  EXPECT_MENTIONS(err, "3 = 3 bytes of labels, the file holds 2");
}

TEST_F(ImageDatasetsTest, IdxRejectsTrailingBytes) {
  std::string labels = writeFile("l", idxLabels(kIdxLabels));
  Bytes longer = idxImages(3, 2, 3, kIdxPixels);
  longer.push_back(0);
  std::string images = writeFile("i", longer);
  EXPECT_MENTIONS(errorOf([&] { readIdx(images, labels); }),
                  images + ": trailing bytes");
}

TEST_F(ImageDatasetsTest, IdxRejectsCountMismatch) {
  std::string images = writeFile("i", idxImages(3, 2, 3, kIdxPixels));
  std::string labels = writeFile("l", idxLabels({1, 2}));
  EXPECT_MENTIONS(errorOf([&] { readIdx(images, labels); }),
                  labels + ": 2 labels for the 3 images of " + images);
}

TEST_F(ImageDatasetsTest, IdxRejectsLabelOutOfRange) {
  std::string images = writeFile("i", idxImages(3, 2, 3, kIdxPixels));
  std::string labels = writeFile("l", idxLabels({1, 10, 2}));
  EXPECT_MENTIONS(errorOf([&] { readIdx(images, labels); }),
                  labels +
                      ": label 10 at index 1 is out of range for 10 classes");
}

TEST_F(ImageDatasetsTest, IdxRejectsMissingAndEmpty) {
  std::string labels = writeFile("l", idxLabels({}));
  std::string missing = file("absent-idx3-ubyte");
  EXPECT_MENTIONS(errorOf([&] { readIdx(missing, labels); }),
                  missing + ": cannot open");
  std::string none = writeFile("i", idxImages(0, 2, 3, {}));
  EXPECT_MENTIONS(errorOf([&] { readIdx(none, labels); }),
                  none + ": holds no images");
}

TEST_F(ImageDatasetsTest, FashionMnistInstalled) {
  const std::string dir = kFashionMnistDir;
  struct Split {
    std::string prefix;
    int64_t count;
  };
  for (const Split &split : {Split{"train", 60000}, Split{"t10k", 10000}}) {
    const std::string images =
        dir + "/" + split.prefix + "-images-idx3-ubyte.gz";
    const std::string labels =
        dir + "/" + split.prefix + "-labels-idx1-ubyte.gz";
    auto set = readIdx(images, labels);
    ASSERT_EQ(set->size(), split.count);
    EXPECT_EQ(set->numClasses(), 10);
    EXPECT_EQ(set->description(), std::to_string(split.count) +
                                      " images 1x28x28, 10 classes (" +
                                      split.prefix + "-images-idx3-ubyte.gz)");
    // Fashion-MNIST is balanced: a tenth of each split per class.
    std::vector<int64_t> perClass(10);
    for (int64_t i = 0; i < set->size(); ++i) {
      int32_t label = set->label(i);
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 10);
      ++perClass[size_t(label)];
    }
    EXPECT_EQ(perClass, std::vector<int64_t>(10, split.count / 10));

    // The first and last images and labels against the files' own bytes.
    gzFile in = gzopen(images.c_str(), "rb");
    ASSERT_NE(in, nullptr);
    Bytes all(16 + size_t(split.count) * 784);
    ASSERT_EQ(gzread(in, all.data(), unsigned(all.size())), int(all.size()));
    gzclose(in);
    gzFile inLabels = gzopen(labels.c_str(), "rb");
    ASSERT_NE(inLabels, nullptr);
    Bytes labelBytes(8 + size_t(split.count));
    ASSERT_EQ(gzread(inLabels, labelBytes.data(), unsigned(labelBytes.size())),
              int(labelBytes.size()));
    gzclose(inLabels);
    for (int64_t i : {int64_t(0), split.count - 1}) {
      EXPECT_EQ(set->label(i), labelBytes[8 + size_t(i)]);
      const uint8_t *bytes = all.data() + 16 + size_t(i) * 784;
      expectPixels(set->image(i), 1, 28, 28,
                   std::vector<int>(bytes, bytes + 784), kExact);
    }
  }
}

//===----------------------------------------------------------------------===//
// CIFAR
//===----------------------------------------------------------------------===//

TEST_F(ImageDatasetsTest, Cifar10Batches) {
  Bytes first = cifarRecord({3}, 0), second = cifarRecord({9}, 1);
  first.insert(first.end(), second.begin(), second.end());
  std::string a = writeFile("c10/data_batch_1.bin", first);
  std::string b = writeFile("c10/data_batch_2.bin", cifarRecord({0}, 2));
  auto set = readCifar({a, b}, false);
  ASSERT_EQ(set->size(), 3);
  EXPECT_EQ(set->numClasses(), 10);
  EXPECT_EQ(set->label(0), 3);
  EXPECT_EQ(set->label(1), 9);
  EXPECT_EQ(set->label(2), 0);
  for (int n = 0; n < 3; ++n)
    expectPixels(set->image(n), 3, 32, 32, cifarExpected(n), kExact);
  // The planes: image 1 at (y=2, x=5) is 31 + 7*2 + 3*5 = 60 in red, +85 in
  // green, +170 in blue.
  Image one = set->image(1);
  EXPECT_NEAR(one.at(0, 2, 5), 60 / 255.0, kExact);
  EXPECT_NEAR(one.at(1, 2, 5), 145 / 255.0, kExact);
  EXPECT_NEAR(one.at(2, 2, 5), 230 / 255.0, kExact);
  EXPECT_EQ(set->classNames()[9], "9"); // no batches.meta.txt here
  EXPECT_EQ(
      set->description(),
      "3 images 3x32x32, 10 classes (data_batch_1.bin, data_batch_2.bin)");

  writeText("c10/batches.meta.txt", "airplane\nautomobile\nbird\ncat\ndeer\n"
                                    "dog\nfrog\nhorse\nship\ntruck\n\n");
  auto named = readCifar({a, b}, false);
  EXPECT_EQ(
      named->classNames(),
      (std::vector<std::string>{"airplane", "automobile", "bird", "cat", "deer",
                                "dog", "frog", "horse", "ship", "truck"}));
}

TEST_F(ImageDatasetsTest, Cifar100FineLabels) {
  Bytes records = cifarRecord({19, 99}, 4), second = cifarRecord({4, 42}, 5);
  records.insert(records.end(), second.begin(), second.end());
  std::string path = writeFile("c100/train.bin", records);
  auto set = readCifar({path}, true);
  ASSERT_EQ(set->size(), 2);
  EXPECT_EQ(set->numClasses(), 100);
  EXPECT_EQ(set->label(0), 99);
  EXPECT_EQ(set->label(1), 42);
  expectPixels(set->image(0), 3, 32, 32, cifarExpected(4), kExact);
  expectPixels(set->image(1), 3, 32, 32, cifarExpected(5), kExact);
  ASSERT_EQ(set->classNames().size(), 100u);
  EXPECT_EQ(set->classNames()[42], "42");

  std::string names;
  for (int c = 0; c < 100; ++c)
    names += "fine" + std::to_string(c) + "\r\n";
  writeText("c100/fine_label_names.txt", names);
  auto named = readCifar({path}, true);
  EXPECT_EQ(named->classNames()[0], "fine0");
  EXPECT_EQ(named->classNames()[99], "fine99");

  writeText("c100/fine_label_names.txt", "only\ntwo\n");
  EXPECT_MENTIONS(errorOf([&] { readCifar({path}, true); }),
                  file("c100/fine_label_names.txt") +
                      ": 2 class names, expected 100");
}

TEST_F(ImageDatasetsTest, CifarRejectsLabelOutOfRange) {
  Bytes records = cifarRecord({2}, 0), bad = cifarRecord({10}, 1);
  records.insert(records.end(), bad.begin(), bad.end());
  std::string c10 = writeFile("c10.bin", records);
  EXPECT_MENTIONS(errorOf([&] { readCifar({c10}, false); }),
                  c10 +
                      ": label 10 of record 1 is out of range for 10 classes");

  std::string fine = writeFile("fine.bin", cifarRecord({0, 100}, 0));
  EXPECT_MENTIONS(
      errorOf([&] { readCifar({fine}, true); }),
      fine + ": label 100 of record 0 is out of range for 100 classes");
  std::string coarse = writeFile("coarse.bin", cifarRecord({20, 5}, 0));
  EXPECT_MENTIONS(
      errorOf([&] { readCifar({coarse}, true); }),
      coarse + ": coarse label 20 of record 0 is out of range for 20 classes");
}

TEST_F(ImageDatasetsTest, CifarRejectsWrongRecordSize) {
  Bytes records = cifarRecord({1}, 0);
  records.push_back(7);
  std::string odd = writeFile("odd.bin", records);
  EXPECT_MENTIONS(errorOf([&] { readCifar({odd}, false); }),
                  odd +
                      ": 3074 bytes is not a whole number of CIFAR-10 records "
                      "of 3073 bytes");

  // Two CIFAR-100 records read as CIFAR-10, and the other way round.
  Bytes c100 = cifarRecord({1, 2}, 0), more = cifarRecord({1, 2}, 1);
  c100.insert(c100.end(), more.begin(), more.end());
  std::string path100 = writeFile("c100.bin", c100);
  EXPECT_MENTIONS(errorOf([&] { readCifar({path100}, false); }),
                  "; it is of CIFAR-100 records");
  Bytes c10 = cifarRecord({1}, 0), more10 = cifarRecord({1}, 1);
  c10.insert(c10.end(), more10.begin(), more10.end());
  std::string path10 = writeFile("c10.bin", c10);
  EXPECT_MENTIONS(errorOf([&] { readCifar({path10}, true); }),
                  path10 +
                      ": 6146 bytes is not a whole number of CIFAR-100 records "
                      "of 3074 bytes");

  std::string empty = writeFile("empty.bin", {});
  EXPECT_MENTIONS(errorOf([&] { readCifar({empty}, false); }),
                  empty + ": empty");
  std::string missing = file("absent.bin");
  EXPECT_MENTIONS(errorOf([&] { readCifar({missing}, false); }),
                  missing + ": cannot open");
  EXPECT_MENTIONS(errorOf([&] { readCifar({}, false); }),
                  "no CIFAR files given");
}

//===----------------------------------------------------------------------===//
// ImageFolder
//===----------------------------------------------------------------------===//

TEST_F(ImageDatasetsTest, ImageFolderPngAndJpeg) {
  // Class "animals" (sorted first): an RGB PNG, an RGB JPEG, an uppercase
  // .JPEG that is really a PNG (decoding goes by content), and other files.
  writePng(file("root/animals/b.png"), 3, 2, PNG_COLOR_TYPE_RGB, 8,
           {10, 20, 30, 40, 50, 60, 70, 80, 90, //
            100, 110, 120, 130, 140, 150, 160, 170, 180});
  writeJpeg(file("root/animals/c.jpg"), 16, 16, JCS_RGB, 3,
            quadrants({{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {200, 150, 50}}));
  writePng(file("root/animals/A.JPEG"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, {77});
  writeText("root/animals/notes.txt", "not an image");
  writeText("root/animals/d.gif", "GIF89a");
  fs::create_directories(dir_.path() / "root/animals/nested.png");
  writeText("root/README", "files at the root are not classes");
  // Class "birds": a gray PNG and a gray JPEG.
  writePng(file("root/birds/g.png"), 2, 2, PNG_COLOR_TYPE_GRAY, 8,
           {0, 64, 128, 255});
  writeJpeg(file("root/birds/h.jpeg"), 16, 16, JCS_GRAYSCALE, 1,
            quadrants({{0}, {85}, {170}, {255}}));

  std::string root = (dir_.path() / "root").string();
  auto set = openImageFolder(root);
  ASSERT_EQ(set->size(), 5);
  EXPECT_EQ(set->numClasses(), 2);
  EXPECT_EQ(set->classNames(), (std::vector<std::string>{"animals", "birds"}));
  EXPECT_EQ(set->description(),
            "5 images, 2 classes (" + root +
                "; 1 entry named like images skipped as no image files (1 a "
                "directory; the first: " +
                root + "/animals/nested.png))");
  // Files sorted byte-wise: "A.JPEG" < "b.png" < "c.jpg".
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < set->size(); ++i)
    labels.push_back(set->label(i));
  EXPECT_EQ(labels, (std::vector<int32_t>{0, 0, 0, 1, 1}));

  expectPixels(set->image(0), 1, 1, 1, {77}, kExact);
  expectPixels(set->image(1), 3, 2, 3,
               {10, 40, 70, 100, 130, 160, 20, 50, 80, 110, 140, 170, 30, 60,
                90, 120, 150, 180},
               kExact);
  expectPixels(set->image(2), 3, 16, 16,
               quadrantsExpected(
                   {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {200, 150, 50}}),
               kJpegTolerance);
  expectPixels(set->image(3), 1, 2, 2, {0, 64, 128, 255}, kExact);
  expectPixels(set->image(4), 1, 16, 16,
               quadrantsExpected({{0}, {85}, {170}, {255}}), kJpegTolerance);
  EXPECT_THROW(set->image(5), std::out_of_range);
}

// Entries named like images that are no image files are skipped, counted
// by kind and named (a data set with broken links would otherwise train on
// fewer images without a word); with `strict` the first is an error.
TEST_F(ImageDatasetsTest, ImageFolderCountsWhatItSkips) {
  writePng(file("root/a/good.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, {7});
  fs::create_symlink(file("root/a/gone.png"), file("root/a/dangling.png"));
  fs::create_symlink(file("root/a/gone.png"), file("root/a/dangling2.jpg"));
  ASSERT_EQ(mkfifo(file("root/a/pipe.jpg").c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", file("root/a/zero.jpeg"));
  fs::create_symlink(file("root/a/good.png"), file("root/a/linked.png"));
  std::string root = (dir_.path() / "root").string();
  auto set = openImageFolder(root);
  EXPECT_EQ(set->size(), 2); // good.png and the link to it
  EXPECT_EQ(set->description(),
            "2 images, 1 classes (" + root +
                "; 4 entries named like images skipped as no image files (1 "
                "a FIFO, 2 a dangling link, 1 a link to a character device; "
                "the first: " +
                root + "/a/dangling.png))");
  EXPECT_MENTIONS(errorOf([&] { openImageFolder(root, true); }),
                  root + "/a/dangling.png: a dangling link, not an image "
                         "file (train.data.strict)");
}

TEST_F(ImageDatasetsTest, PngConversions) {
  // 16-bit gray scales to the nearest 8-bit value: round(v * 255 / 65535).
  const std::vector<uint16_t> gray16 = {0, 0x00FF, 0x7FFF, 0xFFFF};
  Bytes packed16;
  std::vector<int> expected16;
  for (uint16_t v : gray16) {
    packed16.push_back(uint8_t(v >> 8));
    packed16.push_back(uint8_t(v));
    expected16.push_back(int(std::lround(v * 255.0 / 65535.0)));
  }
  EXPECT_EQ(expected16, (std::vector<int>{0, 1, 127, 255}));
  writePng(file("root/a/gray16.png"), 4, 1, PNG_COLOR_TYPE_GRAY, 16, packed16);
  // 1-bit gray: 1 0 1 1 0 in the high bits of one byte.
  writePng(file("root/a/gray1.png"), 5, 1, PNG_COLOR_TYPE_GRAY, 1, {0xB0});
  // Gray with alpha: the alpha is dropped, not composited.
  writePng(file("root/a/grayalpha.png"), 2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8,
           {50, 0, 200, 128});
  // A 2-bit palette with a transparent first entry: colours as in the palette.
  writePng(file("root/a/palette.png"), 3, 1, PNG_COLOR_TYPE_PALETTE, 2,
           {0x1B}, // indices 0 1 2 (3 in the unused low bits)
           {{255, 0, 0}, {0, 255, 0}, {10, 20, 30}, {1, 2, 3}}, {0});
  // RGBA: alpha dropped, colour intact.
  writePng(file("root/a/rgba.png"), 1, 2, PNG_COLOR_TYPE_RGB_ALPHA, 8,
           {1, 2, 3, 0, 250, 251, 252, 17});
  // Interlaced RGB, 5x3 of noise.
  Bytes rgb = noise(5 * 3 * 3, 9);
  writePng(file("root/a/z-interlaced.png"), 5, 3, PNG_COLOR_TYPE_RGB, 8, rgb,
           {}, {}, true);

  auto set = openImageFolder((dir_.path() / "root").string());
  ASSERT_EQ(set->size(), 6);
  // Sorted byte-wise: gray1 < gray16 ('.' < '6') < grayalpha < ...
  expectPixels(set->image(0), 1, 1, 5, {255, 0, 255, 255, 0}, kExact);
  expectPixels(set->image(1), 1, 1, 4, expected16, kExact);
  expectPixels(set->image(2), 1, 1, 2, {50, 200}, kExact);
  expectPixels(set->image(3), 3, 1, 3, {255, 0, 10, 0, 255, 20, 0, 0, 30},
               kExact);
  expectPixels(set->image(4), 3, 2, 1, {1, 250, 2, 251, 3, 252}, kExact);
  std::vector<int> planar;
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 15; ++p)
      planar.push_back(rgb[size_t(p * 3 + c)]);
  expectPixels(set->image(5), 3, 3, 5, planar, kExact);
}

TEST_F(ImageDatasetsTest, CmykJpegConvertsToRgb) {
  // libjpeg writes CMYK with Adobe's APP14 marker, ink stored inverted:
  // R = C K / 255 and so on, rounded.
  writeJpeg(file("root/a/cmyk.jpg"), 16, 16, JCS_CMYK, 4,
            quadrants({{255, 0, 0, 255},
                       {200, 100, 255, 128},
                       {0, 0, 0, 0},
                       {255, 255, 255, 255}}));
  auto set = openImageFolder((dir_.path() / "root").string());
  auto rgb = [](int c, int m, int y, int k) {
    return std::vector<int>{int(std::lround(c * k / 255.0)),
                            int(std::lround(m * k / 255.0)),
                            int(std::lround(y * k / 255.0))};
  };
  expectPixels(set->image(0), 3, 16, 16,
               quadrantsExpected({rgb(255, 0, 0, 255), rgb(200, 100, 255, 128),
                                  rgb(0, 0, 0, 0), rgb(255, 255, 255, 255)}),
               kJpegTolerance);
}

TEST_F(ImageDatasetsTest, ImageFolderRejectsCorruptJpeg) {
  std::string good = file("root/a/good.jpg");
  writeJpeg(good, 16, 16, JCS_RGB, 3, noise(16 * 16 * 3, 3));
  Bytes bytes = readFile(good);
  Bytes truncated(bytes.begin(), bytes.begin() + long(bytes.size() / 2));
  std::string cut = writeFile("root/a/truncated.jpg", truncated);
  Bytes garbage = noise(200, 4);
  garbage[0] = 0xFF;
  garbage[1] = 0xD8;
  std::string bad = writeFile("root/a/garbage.jpg", garbage);

  auto set = openImageFolder((dir_.path() / "root").string());
  ASSERT_EQ(set->size(), 3); // garbage, good, truncated
  std::string err = errorOf([&] { set->image(0); });
  EXPECT_MENTIONS(err, bad + ": cannot decode JPEG: ");
  EXPECT_EQ(set->image(1).channels, 3);
  err = errorOf([&] { set->image(2); });
  EXPECT_MENTIONS(err,
                  cut + ": cannot decode JPEG: Premature end of JPEG file");
}

TEST_F(ImageDatasetsTest, ImageFolderRejectsCorruptPng) {
  std::string good = file("root/a/good.png");
  writePng(good, 8, 8, PNG_COLOR_TYPE_RGB, 8, noise(8 * 8 * 3, 5));
  Bytes bytes = readFile(good);
  Bytes truncated(bytes.begin(), bytes.begin() + long(bytes.size() - 20));
  std::string cut = writeFile("root/a/truncated.png", truncated);
  Bytes corrupt = bytes;
  corrupt[20] ^= 0x55; // inside IHDR: its CRC no longer matches
  std::string bad = writeFile("root/a/crc.png", corrupt);
  std::string text = writeText("root/a/text.png", "plain text, not a PNG");

  auto set = openImageFolder((dir_.path() / "root").string());
  ASSERT_EQ(set->size(), 4); // crc, good, text, truncated
  EXPECT_MENTIONS(errorOf([&] { set->image(0); }),
                  bad + ": cannot decode PNG: ");
  EXPECT_EQ(set->image(1).channels, 3);
  EXPECT_MENTIONS(errorOf([&] { set->image(2); }),
                  text + ": neither a JPEG nor a PNG file");
  EXPECT_MENTIONS(errorOf([&] { set->image(3); }),
                  cut + ": cannot decode PNG: truncated");
}

TEST_F(ImageDatasetsTest, ImageFolderRejectsEmpty) {
  std::string root = (dir_.path() / "root").string();
  fs::create_directories(root);
  writeText("root/labels.txt", "a file, not a class");
  EXPECT_MENTIONS(errorOf([&] { openImageFolder(root); }),
                  root + ": no class directories");

  writePng(file("root/a/x.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, {1});
  writeText("root/b/readme.txt", "no images here");
  EXPECT_MENTIONS(errorOf([&] { openImageFolder(root); }),
                  (fs::path(root) / "b").string() +
                      ": an empty class: no .jpg, .jpeg or .png files");

  std::string missing = (dir_.path() / "absent").string();
  EXPECT_MENTIONS(errorOf([&] { openImageFolder(missing); }),
                  missing + ": no such directory");
  EXPECT_MENTIONS(errorOf([&] { openImageFolder(file("root/labels.txt")); }),
                  "labels.txt: not a directory");
}

//===----------------------------------------------------------------------===//
// Concurrency
//===----------------------------------------------------------------------===//

TEST_F(ImageDatasetsTest, ConcurrentImagesMatchSequential) {
  for (int n = 0; n < 6; ++n) {
    writePng(file("root/c" + std::to_string(n % 3) + "/p" + std::to_string(n) +
                  ".png"),
             24, 20, PNG_COLOR_TYPE_RGB, 8, noise(24 * 20 * 3, uint64_t(n)));
    writeJpeg(file("root/c" + std::to_string(n % 3) + "/j" + std::to_string(n) +
                   ".jpg"),
              24, 20, JCS_RGB, 3, noise(24 * 20 * 3, uint64_t(100 + n)));
  }
  auto folder = openImageFolder((dir_.path() / "root").string());
  Bytes pixels = noise(50 * 4 * 5, 7), labels(50);
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = uint8_t(i % 10);
  auto idx = readIdx(writeFile("i", idxImages(50, 4, 5, pixels)),
                     writeFile("l", idxLabels(labels)));

  for (const ImageDataset *set : {folder.get(), idx.get()}) {
    const auto n = size_t(set->size());
    std::vector<Image> sequential;
    for (size_t i = 0; i < n; ++i)
      sequential.push_back(set->image(int64_t(i)));

    // Each thread decodes every image three times, starting at a different
    // place so that threads work on the same image at the same time.
    constexpr int kThreads = 4, kRounds = 3;
    std::vector<std::vector<Image>> results(kThreads, std::vector<Image>(n));
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        try {
          for (size_t k = 0; k < kRounds * n; ++k) {
            size_t i = (k + size_t(t)) % n;
            results[size_t(t)][i] = set->image(int64_t(i));
          }
        } catch (const std::exception &e) {
          errors[size_t(t)] = e.what();
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(errors[size_t(t)], "");
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(results[size_t(t)][i].channels, sequential[i].channels);
        EXPECT_EQ(results[size_t(t)][i].pixels, sequential[i].pixels)
            << set->description() << ", image " << i << ", thread " << t;
      }
    }
  }
}

} // namespace
