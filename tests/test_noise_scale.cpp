#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "lib/records/records.h"
#include "lib/training/noise_scale.h"

namespace batchscope {
namespace {

// The squared norms a group would have in expectation, for a gradient of squared norm g and per-example
// noise of trace s: E|G_B|² = g + s / B.
GradientNorms expected_norms(double g, double s, double small, double big) {
  return {g + s / small, g + s / big};
}

TEST(NoiseScale, TheEstimatorGivesTraceOverGradientFromTheNormsAtTwoBatchSizes) {
  // |G|² = 0.5 and tr(Σ) = 200: B_simple 400, from batches of 32 in groups of 8.
  const std::vector<GradientNorms> same(4, expected_norms(0.5, 200, 32, 256));
  const NoiseScale n = noise_scale_of(same, 32, 256);
  EXPECT_NEAR(n.gradient_sq, 0.5, 1e-12);
  EXPECT_NEAR(n.trace, 200, 1e-9);
  ASSERT_TRUE(n.b_simple);
  EXPECT_NEAR(*n.b_simple, 400, 1e-9);
  ASSERT_TRUE(n.b_simple_stderr);
  EXPECT_NEAR(*n.b_simple_stderr, 0, 1e-9) << "groups that agree leave no spread";
  EXPECT_EQ(n.groups, 4);
  EXPECT_EQ(n.small_batch, 32);
  EXPECT_EQ(n.big_batch, 256);

  // Groups that differ: the ratio of the means (not the mean of the ratios), with a spread.
  const std::vector<GradientNorms> varied{expected_norms(0.4, 100, 32, 256),
                                          expected_norms(0.6, 300, 32, 256)};
  const NoiseScale v = noise_scale_of(varied, 32, 256);
  ASSERT_TRUE(v.b_simple);
  EXPECT_NEAR(*v.b_simple, 200.0 / 0.5, 1e-9);
  ASSERT_TRUE(v.b_simple_stderr);
  // Two groups: the jackknife's ratios are 500 and 250 about their mean 375, so sqrt(1/2 * 2 * 125²).
  EXPECT_NEAR(*v.b_simple_stderr, 125, 1e-9);

  // One group: no spread to give.
  EXPECT_FALSE(noise_scale_of({same.front()}, 32, 256).b_simple_stderr);
  EXPECT_TRUE(noise_scale_of({same.front()}, 32, 256).b_simple);
}

TEST(NoiseScale, AGradientLostInItsNoiseIsUnresolvedAndSaysSo) {
  // The big batch's norm above the small one's: the noise's estimate is negative and |G|²'s too large,
  // or |G|²'s estimate is negative: either way no scale is given where |G|² is not positive.
  const NoiseScale n = noise_scale_of({{1.0, 1.3}, {1.0, 1.2}}, 16, 64);
  EXPECT_LT(n.trace, 0);
  const NoiseScale lost = noise_scale_of({{2.0, 0.2}, {2.2, 0.21}}, 16, 64);
  EXPECT_LT(lost.gradient_sq, 0);
  EXPECT_FALSE(lost.b_simple);
  EXPECT_FALSE(lost.b_simple_stderr);
  EXPECT_EQ(noise_scale_text(lost), "B_noise unresolved");
  // One group left out leaves no positive |G|²: the scale, but no spread.
  const NoiseScale edge =
      noise_scale_of({expected_norms(1.0, 10, 16, 64), {5.0, 0.2}, expected_norms(1.0, 10, 16, 64)}, 16, 64);
  ASSERT_TRUE(edge.b_simple);
  EXPECT_FALSE(edge.b_simple_stderr);
  EXPECT_FALSE(noise_scale_of({}, 16, 64).b_simple);
}

TEST(NoiseScale, ReadsBackWhatItWritesAndRefusesDamagedRecords) {
  NoiseScale n =
      noise_scale_of({expected_norms(0.5, 200, 32, 256), expected_norms(0.25, 150, 32, 256)}, 32, 256);
  n.seconds = 1.25;
  const NoiseScale back = noise_scale_from_json(nlohmann::json::parse(to_json(n).dump()));
  EXPECT_EQ(back.b_simple, n.b_simple);
  EXPECT_EQ(back.b_simple_stderr, n.b_simple_stderr);
  EXPECT_EQ(back.gradient_sq, n.gradient_sq);
  EXPECT_EQ(back.trace, n.trace);
  EXPECT_EQ(back.groups, 2);
  EXPECT_EQ(back.big_batch, 256);
  EXPECT_EQ(back.seconds, 1.25);
  EXPECT_EQ(noise_scale_text(n), "B_noise " + std::to_string(static_cast<int>(std::lround(*n.b_simple))) +
                                     " (se " +
                                     std::to_string(static_cast<int>(std::lround(*n.b_simple_stderr))) + ")");

  const NoiseScale lost = noise_scale_of({{2.0, 0.2}}, 16, 64);
  const nlohmann::json unresolved = nlohmann::json::parse(to_json(lost).dump());
  EXPECT_TRUE(unresolved["b_simple"].is_null());
  EXPECT_FALSE(noise_scale_from_json(unresolved).b_simple);

  nlohmann::json damaged = nlohmann::json::parse(to_json(n).dump());
  damaged["trace"] = "many";
  EXPECT_THROW(noise_scale_from_json(damaged), BadRecord);
  damaged = nlohmann::json::parse(to_json(n).dump());
  damaged["big_batch"] = 16;
  EXPECT_THROW(noise_scale_from_json(damaged), BadRecord);
  EXPECT_THROW(noise_scale_from_json(nlohmann::json(3)), BadRecord);
}

TEST(CriticalBatch, TheStepsModelIsFittedInOneOverTheBatchSize) {
  // S(B) = 50 (1 + 4000 / B) exactly: both recovered.
  std::vector<std::pair<int64_t, double>> points;
  for (const int64_t b : {64, 256, 1024, 4096, 16384}) points.emplace_back(b, 50 * (1 + 4000.0 / b));
  const std::optional<CriticalBatch> fit = fit_critical_batch(points);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->min_steps, 50, 1e-9);
  EXPECT_NEAR(fit->critical_batch, 4000, 1e-6);
  EXPECT_EQ(fit->points, 5);
  // Two sizes, one size twice, or more steps at larger batches: no fit.
  EXPECT_FALSE(fit_critical_batch({{64, 100}, {128, 60}}));
  EXPECT_FALSE(fit_critical_batch({{64, 100}, {64, 90}, {64, 80}}));
  EXPECT_FALSE(fit_critical_batch({{64, 100}, {128, 120}, {256, 150}}));
  // The H200's MNIST study to 98% (steps of whole epochs): each size weighed by its relative error.
  const std::optional<CriticalBatch> h200 =
      fit_critical_batch({{64, 938}, {256, 470}, {1024, 177}, {4096, 90}, {16384, 56}});
  ASSERT_TRUE(h200);
  EXPECT_NEAR(h200->min_steps, 61.76, 0.01);
  EXPECT_NEAR(h200->critical_batch, 1138.6, 0.1);
}

// Softmax regression, whose per-example gradients have a closed form: the true |G|² and tr(Σ) over a
// dataset are computed exactly, and the measurement (real backward passes over batches drawn with
// replacement) must find them.
TEST(NoiseScale, MeasuredBackwardPassesFindTheTrueScaleOfAKnownModel) {
  torch::manual_seed(7);
  const int64_t examples = 4096, features = 12, classes = 4;
  const torch::Tensor x = torch::randn({examples, features}, torch::kDouble);
  const torch::Tensor teacher = torch::randn({features, classes}, torch::kDouble);
  const torch::Tensor y =
      (x.matmul(teacher) + 2 * torch::randn({examples, classes}, torch::kDouble)).argmax(1);
  torch::Tensor weight = (0.3 * torch::randn({classes, features}, torch::kDouble)).requires_grad_();
  torch::Tensor bias = torch::zeros({classes}, torch::kDouble).requires_grad_();

  // Exactly: each example's gradient is (p - onehot(y)) [x, 1].
  torch::Tensor per_example;
  {
    const torch::NoGradGuard no_grad;
    const torch::Tensor p = torch::softmax(torch::nn::functional::linear(x, weight, bias), 1);
    const torch::Tensor delta = p - torch::one_hot(y, classes).to(torch::kDouble);
    per_example = torch::cat({torch::einsum("nc,nf->ncf", {delta, x}).reshape({examples, -1}), delta}, 1);
  }
  const torch::Tensor mean = per_example.mean(0);
  const double gradient_sq = mean.square().sum().item<double>();
  const double trace = (per_example - mean).square().sum(1).mean().item<double>();
  const double truth = trace / gradient_sq;
  ASSERT_GT(truth, 16) << "a scale between the two batch sizes, where the estimator resolves it";
  ASSERT_LT(truth, 128);

  std::vector<torch::Tensor> parameters{weight, bias};
  const BatchLoss loss_of = [&](const torch::Tensor& inputs, const torch::Tensor& targets) {
    return torch::nn::functional::cross_entropy(torch::nn::functional::linear(inputs, weight, bias), targets);
  };
  torch::Generator draws = at::detail::createCPUGenerator(11);
  const NextBatch next = [&](torch::Tensor& inputs, torch::Tensor& targets) {
    const torch::Tensor rows = torch::randint(examples, {16}, draws, torch::kLong);
    inputs = x.index_select(0, rows);
    targets = y.index_select(0, rows);
    return true;
  };
  std::vector<GradientNorms> norms;
  for (int g = 0; g < 300; ++g) norms.push_back(measure_gradient_norms(parameters, loss_of, next, 8));
  EXPECT_FALSE(weight.grad().defined()) << "the gradients are left reset";
  const NoiseScale n = noise_scale_of(norms, 16, 128);
  ASSERT_TRUE(n.b_simple && n.b_simple_stderr);
  EXPECT_NEAR(n.gradient_sq, gradient_sq, 0.1 * gradient_sq);
  EXPECT_NEAR(n.trace, trace, 0.05 * trace);
  // Here 28.9 (se 0.29) against 28.3: within 5%, and so is the spread it gives.
  EXPECT_NEAR(*n.b_simple, truth, 0.05 * truth);
  EXPECT_LT(*n.b_simple_stderr, 0.05 * truth);
  EXPECT_GT(*n.b_simple_stderr, 0);

  // A group's batches must be alike in size, and there must be enough of them.
  int given = 0;
  const NextBatch ragged = [&](torch::Tensor& inputs, torch::Tensor& targets) {
    const int64_t rows = ++given == 2 ? 8 : 16;
    inputs = x.narrow(0, 0, rows);
    targets = y.narrow(0, 0, rows);
    return true;
  };
  EXPECT_THROW(measure_gradient_norms(parameters, loss_of, ragged, 4), std::exception);
  const NextBatch none = [](torch::Tensor&, torch::Tensor&) { return false; };
  EXPECT_THROW(measure_gradient_norms(parameters, loss_of, none, 4), std::exception);
}

}  // namespace
}  // namespace batchscope
