//===- DinoTest.cpp - DINO's schedules, teacher and loss terms ------------===//
//
// The schedules and the teacher's centring, sharpening and moving averages
// against values worked out by hand from facebookresearch/dino's
// main_dino.py; the split of DINOLoss over (teacher view, student view)
// pairs into one target and one weight per student view against a naive
// double-precision transcription of DINOLoss.forward, its gradient against
// central differences of that transcription and against the compiled
// loss's CPU kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Dino.h"
#include "runtime/kernels/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using namespace lap::train;

namespace {

//--- Schedules
//-------------------------------------------------------------------

TEST(DinoSchedule, TeacherMomentumAtKeySteps) {
  // cosine_scheduler(0.996, 1, ...): end + (base - end) (1 + cos(pi s / S))
  // / 2. Double arithmetic on O(1) values: within 1e-15.
  const double base = 0.996, end = 1.0;
  const int64_t steps = 1000;
  EXPECT_NEAR(dino::teacherMomentum(0, steps, base, end), 0.996, 1e-15);
  EXPECT_NEAR(dino::teacherMomentum(500, steps, base, end), 0.998, 1e-15);
  // A quarter of the way: 1 - 0.004 (1 + cos(pi / 4)) / 2
  // = 1 - 0.004 * 0.853553390593273762 = 0.996585786437626905.
  EXPECT_NEAR(dino::teacherMomentum(250, steps, base, end),
              0.996585786437626905, 1e-15);
  // Rising all the way, the last step within (pi / 1000)^2 / 1000 of the end.
  double previous = dino::teacherMomentum(0, steps, base, end);
  for (int64_t s = 1; s < steps; ++s) {
    double m = dino::teacherMomentum(s, steps, base, end);
    EXPECT_GT(m, previous) << "step " << s;
    EXPECT_LE(m, end) << "step " << s;
    previous = m;
  }
  EXPECT_NEAR(previous, end, 1e-7);
}

TEST(DinoSchedule, TeacherTemperatureWarmsUpLinearly) {
  // np.linspace(0.04, 0.07, 30)[e] = 0.04 + 0.03 e / 29 for e < 30, then
  // 0.07. Double arithmetic: within 1e-15.
  const double warmup = 0.04, final = 0.07;
  EXPECT_NEAR(dino::teacherTemperature(0, warmup, final, 30), 0.04, 1e-15);
  EXPECT_NEAR(dino::teacherTemperature(1, warmup, final, 30),
              0.041034482758620690, 1e-15);
  EXPECT_NEAR(dino::teacherTemperature(15, warmup, final, 30),
              0.055517241379310345, 1e-15);
  EXPECT_NEAR(dino::teacherTemperature(29, warmup, final, 30), 0.07, 1e-15);
  EXPECT_EQ(dino::teacherTemperature(30, warmup, final, 30), final);
  EXPECT_EQ(dino::teacherTemperature(100, warmup, final, 30), final);
  // No warm-up: the final temperature from the start. One warm-up epoch:
  // linspace(warmup, final, 1) = [warmup].
  EXPECT_EQ(dino::teacherTemperature(0, warmup, final, 0), final);
  EXPECT_EQ(dino::teacherTemperature(0, warmup, final, 1), warmup);
  EXPECT_EQ(dino::teacherTemperature(1, warmup, final, 1), final);
}

//--- The teacher
//-----------------------------------------------------------------

TEST(DinoTeacher, SharpenMatchesHandSoftmax) {
  // softmax((l - c) / T) with T = 0.5:
  //   row 0: (1 - 0.5, 2 - 0, 3 + 0.5) / 0.5 = (1, 4, 7)
  //   row 1: (0.5 - 0.5, -1 - 0, 4 + 0.5) / 0.5 = (0, -2, 9)
  // softmax(1, 4, 7) = (e^-6, e^-3, 1) / (1 + e^-3 + e^-6), and so on.
  const float logits[] = {1.0f, 2.0f, 3.0f, 0.5f, -1.0f, 4.0f};
  const float center[] = {0.5f, 0.0f, -0.5f};
  const double want[] = {0.0023556330807966799,  0.047314155221824035,
                         0.95033021169737930,    0.00012339251537565974,
                         1.6699361017642993e-05, 0.99985990812360670};
  float p[6];
  std::fill(std::begin(p), std::end(p),
            std::numeric_limits<float>::quiet_NaN());
  dino::sharpen(logits, center, 2, 3, 0.5, p);
  // Computed in double, written as float: within half an ulp (6e-8
  // relative).
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(p[i], want[i], 1e-7 * want[i]) << "at " << i;
  for (int r = 0; r < 2; ++r)
    EXPECT_NEAR(double(p[3 * r]) + p[3 * r + 1] + p[3 * r + 2], 1.0, 1e-6)
        << "row " << r;
}

TEST(DinoTeacher, SharpenRowsSumToOne) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-5.0f, 5.0f);
  const int64_t rows = 4, k = 33;
  std::vector<float> logits(rows * k), center(k), p(rows * k);
  for (float &v : logits)
    v = dist(rng);
  for (float &v : center)
    v = dist(rng) / 10;
  dino::sharpen(logits.data(), center.data(), rows, k, 0.04, p.data());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      EXPECT_GE(p[r * k + j], 0.0f);
      sum += p[r * k + j];
    }
    // 33 values each rounded to float: within 33 half-ulps of 1.
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << r;
  }
}

TEST(DinoTeacher, SharpenHugeLogitDoesNotOverflow) {
  // (1e4 - 0) / 0.04 = 2.5e5: exp overflows unless the row's maximum is
  // subtracted first. The result is one-hot, exactly.
  const float logits[] = {0.0f, 1e4f, -3.0f, 2.0f};
  const float center[] = {0.0f, 0.0f, 0.0f, 0.0f};
  float p[4];
  dino::sharpen(logits, center, 1, 4, 0.04, p);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[1], 1.0f);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_EQ(p[3], 0.0f);
}

TEST(DinoTeacher, MeanEntropy) {
  // Uniform over k: log k nats per row, whatever the row count. 1/7 as a
  // float is within 6e-8 of it relatively; so is the entropy.
  const int64_t rows = 3, k = 7;
  std::vector<float> uniform(rows * k, 1.0f / 7.0f);
  EXPECT_NEAR(dino::meanEntropy(uniform.data(), rows, k), std::log(7.0), 1e-6);
  // One-hot rows: 0 log 0 = 0 and 1 log 1 = 0, exactly.
  std::vector<float> oneHot(rows * k, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    oneHot[r * k + (2 * r) % k] = 1.0f;
  EXPECT_EQ(dino::meanEntropy(oneHot.data(), rows, k), 0.0);
  // Mean over rows: (log 2 + 0) / 2 for a fair coin and a certain one.
  const float mixed[] = {0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f};
  EXPECT_NEAR(dino::meanEntropy(mixed, 2, 3), std::log(2.0) / 2, 1e-15);
}

TEST(DinoTeacher, UpdateCenterMatchesHandValues) {
  // update_center: c m + mean (1 - m), mean = sums / rows = (1, 2, -0.5):
  // (0.9 + 0.1, -1.8 + 0.2, 0.45 - 0.05) at m = 0.9. Float results: within
  // an ulp of values <= 2.
  std::vector<float> center = {1.0f, -2.0f, 0.5f};
  const std::vector<double> sums = {3.0, 6.0, -1.5};
  dino::updateCenter(center, sums, 3, 0.9);
  EXPECT_NEAR(center[0], 1.0, 2e-7);
  EXPECT_NEAR(center[1], -1.6, 2e-7);
  EXPECT_NEAR(center[2], 0.4, 2e-7);
}

TEST(DinoTeacher, MovingAverageMatchesHandValues) {
  // m = 0.75: teacher 3/4 + student 1/4, all exact in float.
  float teacher[] = {1.0f, 2.0f, -3.0f, 0.0f};
  const float student[] = {3.0f, -2.0f, 1.0f, 5.0f};
  dino::movingAverage(lap::device::host(), teacher, student, 4, 0.75);
  EXPECT_EQ(teacher[0], 1.5f);
  EXPECT_EQ(teacher[1], 1.0f);
  EXPECT_EQ(teacher[2], -2.0f);
  EXPECT_EQ(teacher[3], 1.25f);
  // DINO's first momentum, 0.996, against double: the float momentum and
  // products are within a few ulp of values <= 1.
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> t(100), s(100);
  for (size_t i = 0; i < t.size(); ++i) {
    t[i] = dist(rng);
    s[i] = dist(rng);
  }
  std::vector<float> before = t;
  dino::movingAverage(lap::device::host(), t.data(), s.data(),
                      int64_t(t.size()), 0.996);
  for (size_t i = 0; i < t.size(); ++i)
    EXPECT_NEAR(t[i], 0.996 * before[i] + 0.004 * s[i], 2e-7) << "at " << i;
}

//--- Views
//-----------------------------------------------------------------------

TEST(DinoViews, TwoGlobalsOfTen) {
  // 2 teachers x 10 students - 2 same-view pairs = 18 pairs. A global view
  // is taught by the other global (1/18), a local by both (2/18).
  auto terms = dino::viewTerms(2, 10);
  ASSERT_EQ(terms.size(), 10u);
  EXPECT_EQ(terms[0].teachers, std::vector<int64_t>({1}));
  EXPECT_EQ(terms[1].teachers, std::vector<int64_t>({0}));
  double total = 0;
  size_t pairs = 0;
  for (size_t v = 0; v < terms.size(); ++v) {
    if (v >= 2)
      EXPECT_EQ(terms[v].teachers, std::vector<int64_t>({0, 1}))
          << "view " << v;
    // Ratios of small integers: within an ulp.
    EXPECT_NEAR(terms[v].weight, (v < 2 ? 1.0 : 2.0) / 18.0, 1e-16)
        << "view " << v;
    total += terms[v].weight;
    pairs += terms[v].teachers.size();
  }
  EXPECT_EQ(pairs, 18u);
  EXPECT_NEAR(total, 1.0, 1e-15);
}

TEST(DinoViews, OneViewHasNoPair) {
  EXPECT_THROW(dino::viewTerms(1, 1), std::runtime_error);
  EXPECT_THROW(dino::viewTerms(0, 3), std::runtime_error);
  EXPECT_THROW(dino::viewTerms(3, 2), std::runtime_error);
}

TEST(DinoViews, OneGlobalTeachesOnlyTheLocals) {
  // The global view is never paired with itself: no teacher, weight 0; the
  // three locals share the loss.
  auto terms = dino::viewTerms(1, 4);
  ASSERT_EQ(terms.size(), 4u);
  EXPECT_TRUE(terms[0].teachers.empty());
  EXPECT_EQ(terms[0].weight, 0.0);
  for (size_t v = 1; v < 4; ++v) {
    EXPECT_EQ(terms[v].teachers, std::vector<int64_t>({0})) << "view " << v;
    EXPECT_NEAR(terms[v].weight, 1.0 / 3.0, 1e-16) << "view " << v;
  }
}

TEST(DinoViews, TargetIsTheTeachersMean) {
  const std::vector<std::vector<float>> p = {
      {0.1f, 0.2f, 0.7f}, {0.5f, 0.25f, 0.25f}, {0.0f, 1.0f, 0.0f}};
  std::vector<float> out = {9.0f}; // resized and overwritten
  dino::viewTarget(p, {1}, out);
  EXPECT_EQ(out, p[1]);
  dino::viewTarget(p, {0, 2}, out);
  ASSERT_EQ(out.size(), 3u);
  // Means of two floats in double, rounded once to float: within half an
  // ulp (<= 3e-8 below 1) plus the inputs' own rounding.
  EXPECT_NEAR(out[0], 0.05, 4e-8);
  EXPECT_NEAR(out[1], 0.6, 4e-8);
  EXPECT_NEAR(out[2], 0.35, 4e-8);
}

//--- The loss
//--------------------------------------------------------------------

using Mat = std::vector<double>; ///< [B, K], row-major

/// Row-wise softmax of z / temperature, with the row's maximum subtracted.
Mat softmaxRows(const Mat &z, int64_t B, int64_t K, double temperature) {
  Mat p(z.size());
  for (int64_t b = 0; b < B; ++b) {
    double top = -INFINITY, sum = 0;
    for (int64_t k = 0; k < K; ++k)
      top = std::max(top, z[b * K + k] / temperature);
    for (int64_t k = 0; k < K; ++k)
      sum += p[b * K + k] = std::exp(z[b * K + k] / temperature - top);
    for (int64_t k = 0; k < K; ++k)
      p[b * K + k] /= sum;
  }
  return p;
}

/// mean_b sum_k -q log softmax(s / temperature).
double crossEntropy(const Mat &q, const Mat &s, int64_t B, int64_t K,
                    double temperature) {
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    double top = -INFINITY, sum = 0;
    for (int64_t k = 0; k < K; ++k)
      top = std::max(top, s[b * K + k] / temperature);
    for (int64_t k = 0; k < K; ++k)
      sum += std::exp(s[b * K + k] / temperature - top);
    double lse = top + std::log(sum);
    for (int64_t k = 0; k < K; ++k)
      total -= q[b * K + k] * (s[b * K + k] / temperature - lse);
  }
  return total / double(B);
}

/// DINOLoss.forward, literally: the teacher's probabilities of each global
/// view iq against the student's log-probabilities of every other view v,
/// the batch means summed and divided by the number of pairs.
double naiveDinoLoss(const std::vector<Mat> &student,
                     const std::vector<Mat> &teacher, const Mat &center,
                     int64_t B, int64_t K, double studentTemp,
                     double teacherTemp) {
  double total = 0;
  int64_t terms = 0;
  for (size_t iq = 0; iq < teacher.size(); ++iq) {
    Mat centred = teacher[iq];
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k)
        centred[b * K + k] -= center[k];
    Mat q = softmaxRows(centred, B, K, teacherTemp);
    for (size_t v = 0; v < student.size(); ++v) {
      if (v == iq)
        continue;
      total += crossEntropy(q, student[v], B, K, studentTemp);
      ++terms;
    }
  }
  return total / double(terms);
}

struct DinoBatch {
  static constexpr int64_t globals = 2, views = 5, B = 3, K = 7;
  static constexpr double studentTemp = 0.1, teacherTemp = 0.04;
  std::vector<std::vector<float>> student, teacher;
  std::vector<float> center;

  explicit DinoBatch(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> logit(-1.0f, 1.0f),
        shift(-0.3f, 0.3f);
    student.assign(views, std::vector<float>(B * K));
    teacher.assign(globals, std::vector<float>(B * K));
    center.resize(K);
    for (auto &s : student)
      for (float &v : s)
        v = logit(rng);
    for (auto &t : teacher)
      for (float &v : t)
        v = logit(rng);
    for (float &v : center)
      v = shift(rng);
  }

  std::vector<Mat> studentDouble() const {
    std::vector<Mat> out;
    for (const auto &s : student)
      out.emplace_back(s.begin(), s.end());
    return out;
  }
  std::vector<Mat> teacherDouble() const {
    std::vector<Mat> out;
    for (const auto &t : teacher)
      out.emplace_back(t.begin(), t.end());
    return out;
  }

  /// The teacher's probabilities as training computes them.
  std::vector<std::vector<float>> probabilities() const {
    std::vector<std::vector<float>> p(globals, std::vector<float>(B * K));
    for (int64_t g = 0; g < globals; ++g)
      dino::sharpen(teacher[g].data(), center.data(), B, K, teacherTemp,
                    p[g].data());
    return p;
  }
};

TEST(DinoLoss, ViewTermsSumToTheNaiveLoss) {
  // 2 global and 3 local views: sum_v weight_v CE(target_v, s_v) with
  // target_v the mean of its teachers' probabilities is DINOLoss, since the
  // cross-entropy is linear in the target. The probabilities and targets
  // are floats (6e-8 relative) and the loss ~7: within 1e-6 relative.
  DinoBatch d(3);
  const int64_t B = d.B, K = d.K;
  auto terms = dino::viewTerms(d.globals, d.views);
  auto p = d.probabilities();
  double total = 0;
  std::vector<float> target;
  for (int64_t v = 0; v < d.views; ++v) {
    ASSERT_FALSE(terms[v].teachers.empty());
    dino::viewTarget(p, terms[v].teachers, target);
    total += terms[v].weight *
             crossEntropy(Mat(target.begin(), target.end()),
                          Mat(d.student[v].begin(), d.student[v].end()), B, K,
                          d.studentTemp);
  }
  double want = naiveDinoLoss(d.studentDouble(), d.teacherDouble(),
                              Mat(d.center.begin(), d.center.end()), B, K,
                              d.studentTemp, d.teacherTemp);
  EXPECT_GT(want, 1.0); // a loss worth comparing
  EXPECT_NEAR(total, want, 1e-6 * want);
}

TEST(DinoLoss, GradientMatchesFiniteDifferences) {
  // What training applies to student view v: weight_v (softmax(s_v / T_s) -
  // target_v) / (B T_s), the compiled dino_loss's gradient (row_loss_grad)
  // scaled by the view's weight. Against central differences of the naive
  // loss in double with h = 1e-6: the truncation error is ~h^2 / T_s^3 / B
  // ~ 1e-9 and the rounding error ~1e-16 * 7 / h ~ 1e-9; the float targets
  // add ~6e-8 * weight / (B T_s) ~ 1e-8. Gradients are O(0.1): 1e-6
  // absolute.
  DinoBatch d(4);
  const int64_t B = d.B, K = d.K;
  auto terms = dino::viewTerms(d.globals, d.views);
  auto p = d.probabilities();
  auto student = d.studentDouble();
  const auto teacher = d.teacherDouble();
  const Mat center(d.center.begin(), d.center.end());
  std::vector<float> target;
  for (int64_t v = 0; v < d.views; ++v) {
    dino::viewTarget(p, terms[v].teachers, target);
    Mat soft = softmaxRows(student[v], B, K, d.studentTemp);
    for (int64_t i = 0; i < B * K; ++i) {
      double grad = terms[v].weight * (soft[i] - double(target[i])) /
                    (double(B) * d.studentTemp);
      double saved = student[v][i], h = 1e-6;
      student[v][i] = saved + h;
      double plus = naiveDinoLoss(student, teacher, center, B, K, d.studentTemp,
                                  d.teacherTemp);
      student[v][i] = saved - h;
      double minus = naiveDinoLoss(student, teacher, center, B, K,
                                   d.studentTemp, d.teacherTemp);
      student[v][i] = saved;
      EXPECT_NEAR(grad, (plus - minus) / (2 * h), 1e-6)
          << "view " << v << " at " << i;
    }
  }
}

TEST(DinoLoss, KernelGradientMatchesFormula) {
  // The CPU kernel of the compiled loss, per view with dloss = weight_v,
  // against weight_v (softmax(s_v / T_s) - target_v) / (B T_s) in double.
  // The kernel's float softmax (an approximate exp) and its sum(t) ~ 1 are
  // within a few 1e-7 relative of gradients up to ~0.5: 1e-6 absolute.
  // Its forward, weighted and summed over views, is the naive loss within
  // float accuracy (~1e-7 relative) of its terms: 1e-6 relative.
  DinoBatch d(5);
  const int64_t B = d.B, K = d.K;
  auto terms = dino::viewTerms(d.globals, d.views);
  auto p = d.probabilities();
  std::vector<float> target;
  double total = 0;
  for (int64_t v = 0; v < d.views; ++v) {
    dino::viewTarget(p, terms[v].teachers, target);
    float dloss = float(terms[v].weight);
    std::vector<float> grad(B * K, std::numeric_limits<float>::quiet_NaN());
    lap_cpu_row_loss_backward(grad.data(), &dloss, d.student[v].data(),
                              target.data(), B, K, LAP_ROW_LOSS_DINO,
                              float(d.studentTemp));
    Mat soft = softmaxRows(Mat(d.student[v].begin(), d.student[v].end()), B, K,
                           d.studentTemp);
    for (int64_t i = 0; i < B * K; ++i)
      EXPECT_NEAR(grad[i],
                  terms[v].weight * (soft[i] - double(target[i])) /
                      (double(B) * d.studentTemp),
                  1e-6)
          << "view " << v << " at " << i;
    float loss = std::numeric_limits<float>::quiet_NaN();
    lap_cpu_row_loss_forward(&loss, d.student[v].data(), target.data(), B, K,
                             LAP_ROW_LOSS_DINO, float(d.studentTemp));
    total += terms[v].weight * loss;
  }
  double want = naiveDinoLoss(d.studentDouble(), d.teacherDouble(),
                              Mat(d.center.begin(), d.center.end()), B, K,
                              d.studentTemp, d.teacherTemp);
  EXPECT_NEAR(total, want, 1e-6 * want);
}

} // namespace
