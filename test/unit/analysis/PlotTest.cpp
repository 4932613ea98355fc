//===- PlotTest.cpp - PNG line plots --------------------------------------===//
//
// Plots are read back with libpng and checked against the layout the
// header documents: size, background, each series' colour, and the row a
// constant series lands on. Also the tick chooser and the refusals.
//
//===----------------------------------------------------------------------===//

#include "runtime/analysis/Plot.h"

#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace lap::analysis;

namespace {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  std::array<uint8_t, 3> at(int x, int y) const {
    const uint8_t *p = &rgb[(size_t(y) * width + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

Image readPng(const std::string &path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw std::runtime_error(image.message);
  image.format = PNG_FORMAT_RGB;
  Image out;
  out.width = image.width, out.height = image.height;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr))
    throw std::runtime_error(image.message);
  return out;
}

class PlotTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("lap-plot-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

void expectThrowsNaming(const std::function<void()> &f,
                        const std::string &path) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

} // namespace

TEST(NiceTicks, ChoosesOneTwoFiveSteps) {
  using V = std::vector<double>;
  auto near = [](const V &got, const V &want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-9 * (1 + std::abs(want[i])));
  };
  near(niceTicks(0, 1, 6), V{0, 0.2, 0.4, 0.6, 0.8, 1});
  near(niceTicks(0, 10, 6), V{0, 2, 4, 6, 8, 10});
  near(niceTicks(0.3, 9.7, 6), V{0, 2, 4, 6, 8, 10});
  near(niceTicks(-3, 7, 6), V{-5, 0, 5, 10});
  near(niceTicks(2.31, 2.38, 6), V{2.30, 2.32, 2.34, 2.36, 2.38});
  near(niceTicks(0, 1000, 6), V{0, 200, 400, 600, 800, 1000});
  near(niceTicks(5, 5, 6), V{4.5, 5, 5.5}); // widened by 10%
  near(niceTicks(10, 0, 6), V{0, 2, 4, 6, 8, 10});
}

TEST_F(PlotTest, DrawsSeriesAtTheDocumentedPlaces) {
  std::string path = (dir / "plot.png").string();
  Series ramp{"train", {}, {}}, flat{"valid", {}, {}}, third{"", {}, {}};
  for (int i = 0; i <= 10; ++i) {
    ramp.x.push_back(i), ramp.y.push_back(i);
    flat.x.push_back(i), flat.y.push_back(5);
    third.x.push_back(i), third.y.push_back(i % 2 ? 1 : 9);
  }
  ramp.y[3] = NAN; // skipped, must not throw or poison the axes
  std::vector<Series> series{ramp, flat, third};
  PlotOptions options;
  options.title = "Loss";
  options.xLabel = "step";
  options.yLabel = "loss";
  options.width = 640, options.height = 400;
  writeLinePlot(path, series, options);

  Image img = readPng(path);
  ASSERT_EQ(img.width, 640);
  ASSERT_EQ(img.height, 400);
  std::array<uint8_t, 3> white{255, 255, 255};
  EXPECT_EQ(img.at(0, 0), white);
  EXPECT_EQ(img.at(639, 399), white);

  PlotArea a = plotArea(series, options);
  for (size_t k = 0; k < series.size(); ++k) {
    int inside = 0;
    for (int y = a.top; y <= a.bottom; ++y)
      for (int x = a.left; x <= a.right; ++x)
        inside += img.at(x, y) == seriesColor(k);
    EXPECT_GT(inside, 50) << "series " << k;
  }

  // Both axes span 0..10 (ticks step 2); y = 5 is halfway up, 2 px thick.
  int row = int(std::lround(a.bottom - 0.5 * (a.bottom - a.top)));
  int x = (a.left + a.right) / 2 + 7; // away from grid lines and crossings
  EXPECT_EQ(img.at(x, row), seriesColor(1));
  EXPECT_EQ(img.at(x, row + 1), seriesColor(1));
  EXPECT_NE(img.at(x, row - 1), seriesColor(1));
  EXPECT_NE(img.at(x, row + 2), seriesColor(1));

  // Title and axis labels put black pixels outside the plot area.
  int black = 0;
  for (int y = 0; y < a.top; ++y)
    for (int x2 = 0; x2 < img.width; ++x2)
      black += img.at(x2, y) == std::array<uint8_t, 3>{0, 0, 0};
  EXPECT_GT(black, 20);
}

TEST_F(PlotTest, LogAxisSkipsNonPositiveValues) {
  std::string path = (dir / "log.png").string();
  PlotOptions options;
  options.logY = true;
  writeLinePlot(path, {{"loss", {1, 2, 3, 4}, {100, 0, 1, 0.01}}}, options);
  Image img = readPng(path);
  EXPECT_EQ(img.width, 800);
  EXPECT_EQ(img.height, 500);
}

TEST_F(PlotTest, RefusesBadInputNamingThePath) {
  std::string path = (dir / "bad.png").string();
  PlotOptions options;
  expectThrowsNaming([&] { writeLinePlot(path, {}, options); }, path);
  expectThrowsNaming(
      [&] {
        writeLinePlot(path, {{"a", {1, 2}, {1}}}, options);
      },
      path);
  expectThrowsNaming(
      [&] {
        writeLinePlot(path, {{"a", {1, 2}, {NAN, INFINITY}}}, options);
      },
      path);
  std::string unwritable = (dir / "missing" / "x.png").string();
  expectThrowsNaming(
      [&] {
        writeLinePlot(unwritable, {{"a", {1, 2}, {1, 2}}}, options);
      },
      unwritable);
  options.width = 50;
  expectThrowsNaming(
      [&] {
        writeLinePlot(path, {{"a", {1, 2}, {1, 2}}}, options);
      },
      path);
  EXPECT_FALSE(fs::exists(path));
}
