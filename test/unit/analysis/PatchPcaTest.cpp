//===- PatchPcaTest.cpp - PCA pictures of patch features ------------------===//
//
// Features built from three uncorrelated patterns over the token grid along
// chosen directions, so the principal components, their signs and their
// explained variance are known by hand; degenerate feature maps; and
// pictures read back with libpng and checked against the documented layout.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/PatchPca.h"

#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>

#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace lap::analysis;
using lap::data::Image;

namespace {

constexpr int64_t kImages = 2, kGrid = 4;

/// Three patterns over the tokens of kImages images of kGrid x kGrid, each
/// with mean 0 over all tokens and pairwise uncorrelated (kGrid is even):
/// a the column, halved in image 1; b the row, flipped in image 1; c a
/// checkerboard, flipped in image 1.
struct Patterns {
  std::vector<double> a, b, c;
};

Patterns patterns() {
  Patterns p;
  const double mid = (kGrid - 1) / 2.0;
  for (int64_t i = 0; i < kImages; ++i)
    for (int64_t y = 0; y < kGrid; ++y)
      for (int64_t x = 0; x < kGrid; ++x) {
        double checker = (x + y) % 2 ? -1 : 1;
        p.a.push_back(i == 0 ? x - mid : 0.5 * (x - mid));
        p.b.push_back(i == 0 ? y - mid : mid - y);
        p.c.push_back(i == 0 ? checker : -checker);
      }
  return p;
}

/// tokens = 10 a d1 + 5 b d2 + 2 c d3 + noise of size `noise` in the
/// channels from 3 on, as [kImages, kGrid * kGrid, width].
std::vector<float> features(const Patterns &p, const std::vector<double> &d1,
                            const std::vector<double> &d2,
                            const std::vector<double> &d3, int64_t width,
                            double noise = 1e-4) {
  std::vector<float> f;
  for (size_t t = 0; t < p.a.size(); ++t)
    for (int64_t c = 0; c < width; ++c) {
      double v = 10 * p.a[t] * d1[c] + 5 * p.b[t] * d2[c] + 2 * p.c[t] * d3[c];
      if (c >= 3)
        v += noise * std::sin(7.0 * double(t) + 3.0 * double(c));
      f.push_back(float(v));
    }
  return f;
}

std::vector<double> axis(int64_t width, int64_t k, double sign = 1) {
  std::vector<double> e(size_t(width), 0.0);
  e[k] = sign;
  return e;
}

/// `v` min-max normalised to [0, 1].
std::vector<double> normalised(const std::vector<double> &v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::vector<double> out;
  for (double x : v)
    out.push_back((x - *lo) / (*hi - *lo));
  return out;
}

std::vector<double> negated(std::vector<double> v) {
  for (double &x : v)
    x = -x;
  return v;
}

double variance(const std::vector<double> &v) {
  double mean = 0, square = 0;
  for (double x : v)
    mean += x, square += x * x;
  mean /= double(v.size());
  return square / double(v.size()) - mean * mean;
}

void expectChannel(const PatchPca &pca, int k, const std::vector<double> &want,
                   double tolerance = 1e-3) {
  ASSERT_EQ(pca.rgb.size(), want.size() * 3);
  for (size_t t = 0; t < want.size(); ++t)
    EXPECT_NEAR(pca.rgb[t * 3 + k], want[t], tolerance)
        << "channel " << k << " token " << t;
}

/// The message of `f`'s std::runtime_error, or "" if it did not throw one.
std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

void expectThrowsNaming(const std::function<void()> &f,
                        const std::string &text) {
  std::string error = errorOf(f);
  EXPECT_NE(error, "") << "no exception, expected one naming " << text;
  EXPECT_NE(error.find(text), std::string::npos) << error;
}

struct Picture {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  std::array<int, 3> at(int64_t x, int64_t y) const {
    const uint8_t *p = &rgb[(size_t(y) * width + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

Picture readPng(const std::string &path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw std::runtime_error(image.message);
  image.format = PNG_FORMAT_RGB;
  Picture out;
  out.width = image.width, out.height = image.height;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr))
    throw std::runtime_error(image.message);
  return out;
}

std::array<int, 3> bytes(const float *rgb) {
  return {int(std::lround(255 * rgb[0])), int(std::lround(255 * rgb[1])),
          int(std::lround(255 * rgb[2]))};
}

class PcaPictureTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("lap-patch-pca-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

/// The baseline and a second row with the first component reversed.
std::vector<PatchPca> twoRows() {
  Patterns p = patterns();
  const int64_t C = 8;
  std::vector<float> f = features(p, axis(C, 0), axis(C, 1), axis(C, 2), C);
  std::vector<float> g = features(p, axis(C, 5), axis(C, 1), axis(C, 2), C);
  return {patchPca(f.data(), kImages, kGrid, C),
          patchPca(g.data(), kImages, kGrid, C)};
}

} // namespace

TEST(PatchPca, RecoversKnownComponentsAndExplainedVariance) {
  Patterns p = patterns();
  const int64_t C = 8;
  std::vector<float> f = features(p, axis(C, 0), axis(C, 1), axis(C, 2), C);
  PatchPca pca = patchPca(f.data(), kImages, kGrid, C);
  EXPECT_EQ(pca.images, kImages);
  EXPECT_EQ(pca.grid, kGrid);
  expectChannel(pca, 0, normalised(p.a));
  expectChannel(pca, 1, normalised(p.b));
  expectChannel(pca, 2, normalised(p.c));

  // Normalised over all images together: image 1's halved pattern spans
  // only the middle half of the red range.
  for (int64_t t = kGrid * kGrid; t < 2 * kGrid * kGrid; ++t) {
    EXPECT_GE(pca.rgb[t * 3], 0.25 - 1e-3);
    EXPECT_LE(pca.rgb[t * 3], 0.75 + 1e-3);
  }

  double va = 100 * variance(p.a), vb = 25 * variance(p.b),
         vc = 4 * variance(p.c), total = va + vb + vc;
  EXPECT_NEAR(va, 78.125, 1e-12); // (1.25 + 0.3125) / 2 * 100
  EXPECT_NEAR(pca.explained[0], va / total, 1e-3);
  EXPECT_NEAR(pca.explained[1], vb / total, 1e-3);
  EXPECT_NEAR(pca.explained[2], vc / total, 1e-3);
}

TEST(PatchPca, OrientsEachComponentByItsLargestLoading) {
  Patterns p = patterns();
  const int64_t C = 8;
  // Reversed directions are turned back: the projections change sign.
  std::vector<float> f =
      features(p, axis(C, 0, -1), axis(C, 1), axis(C, 2, -1), C);
  PatchPca pca = patchPca(f.data(), kImages, kGrid, C);
  expectChannel(pca, 0, normalised(negated(p.a)));
  expectChannel(pca, 1, normalised(p.b));
  expectChannel(pca, 2, normalised(negated(p.c)));

  // Random orthonormal directions: the largest entry of each decides.
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> q(3, std::vector<double>(C));
  for (int k = 0; k < 3; ++k) {
    for (double &x : q[k])
      x = normal(rng);
    for (int j = 0; j < k; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < C; ++c)
        dot += q[k][c] * q[j][c];
      for (int64_t c = 0; c < C; ++c)
        q[k][c] -= dot * q[j][c];
    }
    double norm = 0;
    for (double x : q[k])
      norm += x * x;
    for (double &x : q[k])
      x /= std::sqrt(norm);
  }
  f = features(p, q[0], q[1], q[2], C, 0);
  pca = patchPca(f.data(), kImages, kGrid, C);
  const std::vector<double> *pattern[3] = {&p.a, &p.b, &p.c};
  for (int k = 0; k < 3; ++k) {
    double largest =
        *std::max_element(q[k].begin(), q[k].end(), [](double x, double y) {
          return std::abs(x) < std::abs(y);
        });
    expectChannel(pca, k,
                  normalised(largest > 0 ? *pattern[k] : negated(*pattern[k])));
  }
}

TEST(PatchPca, ConstantFeaturesAreGreyWithoutNaN) {
  std::vector<float> f(size_t(kImages * kGrid * kGrid * 5), 3.25f);
  PatchPca pca = patchPca(f.data(), kImages, kGrid, 5);
  ASSERT_EQ(pca.rgb.size(), size_t(kImages * kGrid * kGrid * 3));
  for (float v : pca.rgb)
    EXPECT_EQ(v, 0.5f);
  for (double e : pca.explained)
    EXPECT_EQ(e, 0.0);
}

TEST(PatchPca, MissingComponentsAreGrey) {
  Patterns p = patterns();
  // Rank one: only the first component exists.
  const int64_t C = 4;
  std::vector<double> zero(C, 0.0);
  std::vector<float> f = features(p, axis(C, 2), zero, zero, C, 0);
  PatchPca pca = patchPca(f.data(), kImages, kGrid, C);
  expectChannel(pca, 0, normalised(p.a), 1e-6);
  expectChannel(pca, 1, std::vector<double>(p.a.size(), 0.5), 0);
  expectChannel(pca, 2, std::vector<double>(p.a.size(), 0.5), 0);
  EXPECT_NEAR(pca.explained[0], 1.0, 1e-12);
  EXPECT_NEAR(pca.explained[1], 0.0, 1e-12);
  EXPECT_NEAR(pca.explained[2], 0.0, 1e-12);

  // Two channels: no third component at all.
  f = features(p, axis(2, 0), axis(2, 1), std::vector<double>(2, 0.0), 2, 0);
  pca = patchPca(f.data(), kImages, kGrid, 2);
  expectChannel(pca, 0, normalised(p.a));
  expectChannel(pca, 1, normalised(p.b));
  expectChannel(pca, 2, std::vector<double>(p.a.size(), 0.5), 0);
  double va = 100 * variance(p.a), vb = 25 * variance(p.b);
  EXPECT_NEAR(pca.explained[0], va / (va + vb), 1e-6);
  EXPECT_NEAR(pca.explained[1], vb / (va + vb), 1e-6);
  EXPECT_EQ(pca.explained[2], 0.0);
}

TEST(PatchPca, RefusesBadInput) {
  std::vector<float> f(2 * 4 * 3, 1.0f);
  expectThrowsNaming([&] { patchPca(nullptr, 2, 2, 3); }, "features is null");
  expectThrowsNaming([&] { patchPca(f.data(), 0, 2, 3); }, "n is 0");
  expectThrowsNaming([&] { patchPca(f.data(), 2, -1, 3); }, "grid is -1");
  expectThrowsNaming([&] { patchPca(f.data(), 2, 2, 0); }, "width is 0");
  expectThrowsNaming(
      [&] { patchPca(f.data(), int64_t(1) << 40, int64_t(1) << 20, 3); },
      "too large");
  f[1 * 12 + 2 * 3 + 1] = NAN;
  expectThrowsNaming([&] { patchPca(f.data(), 2, 2, 3); },
                     "(image 1, token 2, channel 1) is not finite");
}

TEST(PcaLayout, FollowsTheDocumentedFormulas) {
  PcaLayout l = pcaLayout(2, 3, 7, true, 8);
  EXPECT_EQ(l.cell, 56);
  EXPECT_EQ(l.columns, 6);
  EXPECT_EQ(l.width, kPcaGap + 6 * (56 + kPcaGap));
  EXPECT_EQ(l.height, kPcaGap + 2 * (56 + kPcaGap));
  l = pcaLayout(1, 3, 7, false, 1);
  EXPECT_EQ(l.columns, 3);
  EXPECT_EQ(l.width, kPcaGap + 3 * (7 + kPcaGap));

  expectThrowsNaming([] { pcaLayout(0, 3, 7, true, 8); }, "rows is 0");
  expectThrowsNaming([] { pcaLayout(1, 3, 7, true, 0); }, "scale is 0");
  expectThrowsNaming([] { pcaLayout(1, 100000, 14, true, 16); }, "exceed");
  expectThrowsNaming([] { pcaLayout(1, 1, int64_t(1) << 40, true, 16); },
                     "exceeds");
}

TEST_F(PcaPictureTest, WritesRowsWithTheirInputImages) {
  std::vector<PatchPca> rows = twoRows();
  Image colour(3, 8, 6), grey(1, 5, 3);
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 8; ++y)
      for (int64_t x = 0; x < 6; ++x)
        colour.at(c, y, x) = float(c * 100 + y * 10 + x) / 255.0f;
  for (int64_t y = 0; y < 5; ++y)
    for (int64_t x = 0; x < 3; ++x)
      grey.at(0, y, x) = float(y * 3 + x) / 14.0f;
  grey.at(0, 4, 2) = 1.5f; // clamped to white
  std::vector<Image> originals = {colour, grey};
  const int scale = 3;
  std::string path = (dir / "pca.png").string();
  writePcaPictures(path, rows, &originals, scale);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  Picture pic = readPng(path);
  PcaLayout l = pcaLayout(2, kImages, kGrid, true, scale);
  ASSERT_EQ(pic.width, l.width);
  ASSERT_EQ(pic.height, l.height);
  const int64_t cell = kGrid * scale, step = cell + kPcaGap;
  EXPECT_EQ(cell, 12);

  // The gaps are white.
  std::array<int, 3> white = {255, 255, 255};
  EXPECT_EQ(pic.at(0, 0), white);
  EXPECT_EQ(pic.at(kPcaGap + cell, kPcaGap + 5), white);
  EXPECT_EQ(pic.at(kPcaGap + 5, kPcaGap + cell + 1), white);

  // Row 1, image 1 (column 3): token (y 2, x 1) covers pixels 6..8 x 3..5.
  for (int64_t py = 6; py < 9; ++py)
    for (int64_t px = 3; px < 6; ++px)
      EXPECT_EQ(pic.at(kPcaGap + 3 * step + px, kPcaGap + step + py),
                bytes(&rows[1].rgb[((1 * kGrid + 2) * kGrid + 1) * 3]));
  // Row 0, image 0 (column 1), token (0, 3).
  EXPECT_EQ(pic.at(kPcaGap + step + 3 * scale, kPcaGap),
            bytes(&rows[0].rgb[3 * 3]));

  // Input images, repeated in each row, by nearest neighbour: cell pixel
  // (py 7, px 5) of the 8 x 6 colour image is pixel (7 * 8 / 12, 5 * 6 /
  // 12) = (4, 2); of the 5 x 3 grey one (7 * 5 / 12, 5 * 3 / 12) = (2, 1).
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(pic.at(kPcaGap + 5, kPcaGap + r * step + 7),
              (std::array<int, 3>{42, 142, 242}));
    int g = int(std::lround(255 * (2 * 3 + 1) / 14.0));
    EXPECT_EQ(pic.at(kPcaGap + 2 * step + 5, kPcaGap + r * step + 7),
              (std::array<int, 3>{g, g, g}));
    EXPECT_EQ(
        pic.at(kPcaGap + 2 * step + cell - 1, kPcaGap + r * step + cell - 1),
        white);
  }
}

TEST_F(PcaPictureTest, WritesRowsAloneAndReplacesAnOldFile) {
  std::vector<PatchPca> rows = twoRows();
  std::string path = (dir / "pca.png").string();
  std::ofstream(path) << "old";
  writePcaPictures(path, rows, nullptr, 1);
  Picture pic = readPng(path);
  PcaLayout l = pcaLayout(2, kImages, kGrid, false, 1);
  ASSERT_EQ(pic.width, l.width);
  ASSERT_EQ(pic.height, l.height);
  const int64_t step = kGrid + kPcaGap;
  EXPECT_EQ(pic.at(kPcaGap + step + 2, kPcaGap + step + 3),
            bytes(&rows[1].rgb[((1 * kGrid + 3) * kGrid + 2) * 3]));
}

/// Files this process writes may grow to `bytes` while it lives; a write
/// beyond fails with EFBIG (SIGXFSZ ignored) as on a full disk.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &before);
    previous = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = before;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, previous);
  }

private:
  rlimit before;
  void (*previous)(int);
};

TEST_F(PcaPictureTest, FailedWriteKeepsTheOldFile) {
  std::string path = (dir / "pca.png").string();
  std::ofstream(path) << "old";
  {
    FileSizeLimit limit(16);
    expectThrowsNaming([&] { writePcaPictures(path, twoRows(), nullptr, 2); },
                       path);
  }
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "old");
  // No partial file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
}

TEST_F(PcaPictureTest, ALinkIsReplacedNotWrittenThrough) {
  std::string path = (dir / "pca.png").string(),
              victim = (dir / "victim").string();
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, path);
  writePcaPictures(path, twoRows(), nullptr, 1);
  std::ifstream in(victim);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(readPng(path).width, pcaLayout(2, kImages, kGrid, false, 1).width);
}

TEST_F(PcaPictureTest, RefusesBadInputNamingThePath) {
  std::vector<PatchPca> rows = twoRows();
  std::string path = (dir / "bad.png").string();
  auto expectRefused = [&](const std::function<void()> &f,
                           const std::string &why) {
    std::string error = errorOf(f);
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(path));
  };
  expectRefused([&] { writePcaPictures(path, {}, nullptr, 2); }, "no rows");
  expectRefused([&] { writePcaPictures(path, rows, nullptr, 0); },
                "scale is 0");

  std::vector<PatchPca> mismatched = rows;
  mismatched[1].grid = 3;
  expectRefused([&] { writePcaPictures(path, mismatched, nullptr, 2); },
                "row 1 has 2 images of 3 x 3 tokens");
  mismatched = rows;
  mismatched[1].rgb.pop_back();
  expectRefused([&] { writePcaPictures(path, mismatched, nullptr, 2); },
                "row 1 has 95 colour values, expected 96");
  mismatched = rows;
  mismatched[0].rgb[4] = NAN;
  expectRefused([&] { writePcaPictures(path, mismatched, nullptr, 2); },
                "row 0 colour value 4 is not finite");

  std::vector<Image> originals = {Image(3, 4, 4)};
  expectRefused([&] { writePcaPictures(path, rows, &originals, 2); },
                "1 input images for 2 columns");
  originals = {Image(3, 4, 4), Image(2, 4, 4)};
  expectRefused([&] { writePcaPictures(path, rows, &originals, 2); },
                "input image 1 has 2 channels");
  originals = {Image(3, 4, 4), Image(1, 0, 4)};
  expectRefused([&] { writePcaPictures(path, rows, &originals, 2); },
                "input image 1 is 1 x 0 x 4");
  originals = {Image(3, 4, 4, NAN), Image(1, 4, 4)};
  expectRefused([&] { writePcaPictures(path, rows, &originals, 2); },
                "input image 0 pixel value 0 is not finite");

  std::string unwritable = (dir / "missing" / "x.png").string();
  std::string error =
      errorOf([&] { writePcaPictures(unwritable, rows, nullptr, 2); });
  EXPECT_NE(error.find(unwritable), std::string::npos) << error;
}
