#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "lib/sweep/sweep_runner.h"
#include "lib/timing/loss_scaler.h"
#include "lib/timing/step_runner.h"
#include "tests/test_support.h"

using namespace batchscope;

namespace {

// A small linear model and its SGD optimizer, made the same for a seed.
struct Linear {
  torch::nn::Linear layer{nullptr};
  std::unique_ptr<torch::optim::SGD> optimizer;
  std::vector<torch::Tensor> parameters;

  explicit Linear(uint64_t seed) {
    torch::manual_seed(seed);
    layer = torch::nn::Linear(8, 4);
    parameters = layer->parameters();
    optimizer = std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(0.1));
  }
  torch::Tensor loss(const torch::Tensor& x, const torch::Tensor& y) {
    return torch::nn::functional::cross_entropy(layer->forward(x), y);
  }
  void set_gradients(float value) {
    for (torch::Tensor& p : parameters) p.mutable_grad() = torch::full_like(p, value);
  }
  std::vector<torch::Tensor> weights() const {
    std::vector<torch::Tensor> out;
    for (const torch::Tensor& p : parameters) out.push_back(p.detach().clone());
    return out;
  }
};

bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

const torch::Device kHost("cpu");

SweepConfig mnist_sweep(LossScale loss_scale) {
  ExperimentConfig e = testing_support::tiny_mnist_training("mnist_scaled");
  e.loss_scale = loss_scale;
  return SweepConfig{"test", {e}};
}

}  // namespace

// Multiplying by a power of two and dividing by it again is exact in floating point: the scaled steps
// train exactly as the unscaled ones.
TEST(LossScaler, APowerOfTwoScaleLeavesEveryStepAsItWas) {
  Linear plain(3), scaled(3);
  LossScaler scaler(kHost);
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({16, 8});
  const torch::Tensor y = torch::randint(0, 4, {16});
  for (int step = 0; step < 3; ++step) {
    plain.optimizer->zero_grad();
    plain.loss(x, y).backward();
    plain.optimizer->step();
    scaled.optimizer->zero_grad();
    const torch::Tensor loss = scaled.loss(x, y);
    const torch::Tensor scaled_loss = scaler.scale(loss);
    EXPECT_EQ(scaled_loss.item<float>(), loss.item<float>() * 65536.0f);
    scaled_loss.backward();
    EXPECT_TRUE(scaler.step(*scaled.optimizer, scaled.parameters));
  }
  EXPECT_TRUE(same(plain.weights(), scaled.weights()));
  EXPECT_EQ(scaler.skipped_steps(), 0);
  EXPECT_EQ(scaler.current_scale(), 65536.0);
}

TEST(LossScaler, GradientsAreDividedByTheScaleBeforeTheOptimizerSeesThem) {
  Linear model(5);
  LossScaler scaler(kHost, {/*init_scale=*/1024.0});
  const std::vector<torch::Tensor> before = model.weights();
  model.set_gradients(2048.0f);
  EXPECT_TRUE(scaler.step(*model.optimizer, model.parameters));
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(torch::equal(model.parameters[i].grad(), torch::full_like(before[i], 2.0f)));
    // SGD with a learning rate of 0.1 on a gradient of 2.
    EXPECT_TRUE(torch::allclose(model.parameters[i].detach(), before[i] - 0.2f));
  }
}

// Where a gradient is inf or NaN the optimizer does not step, the scale halves and the count of clean
// steps starts again; the next clean step steps.
TEST(LossScaler, AnOverflowSkipsTheStepAndHalvesTheScale) {
  for (const float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    Linear model(6);
    LossScaler scaler(kHost, {/*init_scale=*/8.0, 2.0, 0.5, /*growth_interval=*/2});
    model.set_gradients(8.0f);
    EXPECT_TRUE(scaler.step(*model.optimizer, model.parameters));  // one clean step of the two to grow
    const std::vector<torch::Tensor> before = model.weights();
    model.set_gradients(8.0f);
    model.parameters[0].mutable_grad()[0][3] = bad;
    EXPECT_FALSE(scaler.step(*model.optimizer, model.parameters)) << bad;
    EXPECT_TRUE(same(model.weights(), before)) << bad;
    EXPECT_EQ(scaler.skipped_steps(), 1);
    EXPECT_EQ(scaler.current_scale(), 4.0);
    model.set_gradients(4.0f);
    EXPECT_TRUE(scaler.step(*model.optimizer, model.parameters));
    EXPECT_FALSE(same(model.weights(), before));
    EXPECT_EQ(scaler.current_scale(), 4.0) << "one clean step since the overflow, not two";
    model.set_gradients(4.0f);
    EXPECT_TRUE(scaler.step(*model.optimizer, model.parameters));
    EXPECT_EQ(scaler.current_scale(), 8.0);
    EXPECT_EQ(scaler.skipped_steps(), 1);
  }
}

TEST(LossScaler, TheScaleDoublesAfterEachRunOfGrowthIntervalCleanSteps) {
  Linear model(7);
  LossScaler scaler(kHost, {/*init_scale=*/2.0, 2.0, 0.5, /*growth_interval=*/3});
  std::vector<double> scales;
  for (int step = 0; step < 7; ++step) {
    model.set_gradients(1.0f);
    scaler.step(*model.optimizer, model.parameters);
    scales.push_back(scaler.current_scale());
  }
  EXPECT_EQ(scales, (std::vector<double>{2, 2, 4, 4, 4, 8, 8}));
}

TEST(LossScaler, SavedStateBringsBackTheScaleAndItsCountOfCleanSteps) {
  Linear model(8);
  LossScaler scaler(kHost, {/*init_scale=*/2.0, 2.0, 0.5, /*growth_interval=*/2});
  model.set_gradients(1.0f);
  scaler.step(*model.optimizer, model.parameters);
  const LossScaler::State saved = scaler.save();
  model.set_gradients(1.0f);
  scaler.step(*model.optimizer, model.parameters);
  EXPECT_EQ(scaler.current_scale(), 4.0);
  scaler.restore(saved);
  EXPECT_EQ(scaler.current_scale(), 2.0);
  model.set_gradients(1.0f);
  scaler.step(*model.optimizer, model.parameters);
  EXPECT_EQ(scaler.current_scale(), 4.0) << "the restored count holds the clean step before the save";
}

// A sweep with loss_scale dynamic runs the scaler in every training step (here in fp32 on the CPU, where
// the scale never overflows, so the losses are those of the unscaled sweep to the bit) and records what
// it did at each batch size; an unscaled sweep records nothing of it.
TEST(LossScaler, ASweepScalesItsStepsAndRecordsTheSkippedOnesAndTheScale) {
  std::vector<double> losses[2];
  for (int scaled = 0; scaled < 2; ++scaled) {
    const testing_support::TempDir dir;
    SweepOptions options;
    options.out_dir = dir / "records";
    options.measure_energy = false;
    std::ostringstream progress;
    const SweepOutcome outcome = run_sweep(
        resolve_for_machine(mnist_sweep(scaled ? LossScale::Dynamic : LossScale::Off)), options, progress);
    int points = 0;
    for (const SweepRecord& r : outcome.records) {
      if (const auto* step = std::get_if<StepRecord>(&r)) losses[scaled].push_back(step->loss.value_or(-1));
      if (const auto* point = std::get_if<PointRecord>(&r)) {
        ++points;
        EXPECT_EQ(point->skipped_steps, scaled ? std::optional<int64_t>(0) : std::nullopt);
        EXPECT_EQ(point->loss_scale, scaled ? std::optional<double>(65536.0) : std::nullopt);
      }
    }
    EXPECT_EQ(points, 2);
  }
  ASSERT_EQ(losses[0].size(), 6u);
  EXPECT_EQ(losses[0], losses[1]);
}

// An experiment's scaler settings reach the training step's scaler: it starts at init_scale and grows by
// growth_factor after each growth_interval clean steps.
TEST(LossScaler, TheExperimentsSettingsAreTheStepsScalers) {
  ExperimentConfig e = mnist_sweep(LossScale::Dynamic).experiments[0];
  e.loss_scaler = {/*init_scale=*/1024.0, /*growth_factor=*/4.0, /*backoff_factor=*/0.25,
                   /*growth_interval=*/2};
  Workload w(e, kHost);
  ASSERT_NE(w.loss_scaler(), nullptr);
  EXPECT_EQ(w.loss_scaler()->current_scale(), 1024.0);
  w.prepare_batch(2);
  w.step();
  EXPECT_EQ(w.loss_scaler()->current_scale(), 1024.0);
  w.step();
  EXPECT_EQ(w.loss_scaler()->current_scale(), 4096.0);
}

// Profiled steps and the energy window run between save_state() and restore_state(): the scaler's count
// of clean steps comes back too, so the next batch size grows its scale when it would have.
TEST(LossScaler, TheWorkloadsSavedStateHoldsTheScaler) {
  ExperimentConfig e = mnist_sweep(LossScale::Dynamic).experiments[0];
  Workload w(e, kHost);
  ASSERT_NE(w.loss_scaler(), nullptr);
  w.prepare_batch(2);
  w.step();
  const Workload::State saved = w.save_state();
  for (int i = 0; i < 3; ++i) w.step();
  EXPECT_EQ(w.loss_scaler()->save().growth_tracker.item<int32_t>(), 4);
  w.restore_state(saved);
  EXPECT_EQ(w.loss_scaler()->save().growth_tracker.item<int32_t>(), 1);
  e.loss_scale = LossScale::Off;
  EXPECT_EQ(Workload(e, kHost).loss_scaler(), nullptr);
}
