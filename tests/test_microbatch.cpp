#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>

#include "lib/microbatch/microbatch.h"
#include "lib/records/microbatch_records.h"
#include "lib/records/records.h"
#include "models/registry.h"
#include "models/splittable_conv.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

std::shared_ptr<models::Network> build(const std::string& name, const std::vector<int64_t>& input,
                                       int64_t classes) {
  torch::manual_seed(0);
  return models::find_model(name)->build(input, classes);
}

std::vector<torch::Tensor> grads_of(models::Network& network) {
  std::vector<torch::Tensor> out;
  for (auto& p : network.parameters())
    out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return out;
}

// Each tensor within a relative tolerance of its reference's largest magnitude.
void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double rtol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(b[i].abs().max().item<double>(), 1e-12);
    EXPECT_LE((a[i] - b[i]).abs().max().item<double>(), rtol * scale) << "tensor " << i;
  }
}

ExperimentConfig tiny_experiment(const std::string& model, std::vector<int64_t> input, int64_t classes) {
  ExperimentConfig e;
  e.name = model;
  e.model = model;
  e.input_shape = std::move(input);
  e.classes = classes;
  e.device = "cpu";
  e.phase = Phase::Train;
  return e;
}

TEST(AccumulatedStep, EqualsTheUndividedStepWithoutBatchStatistics) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->eval();  // dropout off
  const torch::Tensor x = torch::randn({8, 1, 28, 28});
  const torch::Tensor y = torch::randint(10, {8}, torch::kLong);
  const torch::Tensor whole_loss = accumulated_step(*network, nullptr, x, y, {8});
  const auto whole = grads_of(*network);
  const torch::Tensor split_loss = accumulated_step(*network, nullptr, x, y, {3, 2, 3});
  expect_close(grads_of(*network), whole, 1e-5);
  EXPECT_NEAR(split_loss.item<double>(), whole_loss.item<double>(), 1e-5 * whole_loss.item<double>());
  EXPECT_LT(gradient_relative_difference(*network, x, y, {3, 2, 3}), 1e-5);
  EXPECT_FALSE(has_batch_norm(*network));
}

TEST(AccumulatedStep, TakesOneOptimizerStep) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->eval();
  torch::optim::SGD sgd(network->parameters(), torch::optim::SGDOptions(0.1));
  const torch::Tensor before = network->parameters().front().clone();
  accumulated_step(*network, &sgd, torch::randn({4, 1, 28, 28}), torch::randint(10, {4}, torch::kLong),
                   {2, 2});
  EXPECT_FALSE(torch::equal(before, network->parameters().front()));
  EXPECT_THROW(accumulated_step(*network, &sgd, torch::randn({4, 1, 28, 28}),
                                torch::randint(10, {4}, torch::kLong), {2, 1}),
               c10::Error);
}

TEST(AccumulatedStep, BatchNormMakesTheGradientsDiffer) {
  auto network = build("resnet18", {3, 32, 32}, 10);
  network->train();
  EXPECT_TRUE(has_batch_norm(*network));
  const torch::Tensor x = torch::randn({8, 3, 32, 32});
  const torch::Tensor y = torch::randint(10, {8}, torch::kLong);
  const double difference = gradient_relative_difference(*network, x, y, {4, 4});
  EXPECT_GT(difference, 1e-3);
  for (auto& p : network->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(LayerMicroBatches, EqualTheUndividedForwardAndGradientsEvenWithBatchNorm) {
  auto network = build("resnet18", {3, 32, 32}, 10);
  network->train();
  const torch::Tensor x = torch::randn({8, 3, 32, 32});
  const torch::Tensor y = torch::randint(10, {8}, torch::kLong);
  auto run = [&] {
    for (auto& p : network->parameters()) p.mutable_grad().reset();
    const torch::Tensor out = network->forward(x);
    torch::nn::functional::cross_entropy(out, y).backward();
    return out.detach();
  };
  const torch::Tensor whole_out = run();
  const auto whole = grads_of(*network);
  for (auto& [name, conv] : models::convolutions(*network)) conv->set_micro_batches({3, 2, 3});
  const torch::Tensor split_out = run();
  expect_close({split_out}, {whole_out}, 1e-5);
  expect_close(grads_of(*network), whole, 1e-4);
}

TEST(LayerCosts, MeasureEveryConvolutionAtEverySize) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->train();
  const auto sizes = candidate_sizes(std::vector<MicroBatchPolicy>{MicroBatchPolicy::All}, 8);
  ASSERT_EQ(sizes.size(), 8u);
  const CostMeasurement costs = measure_layer_costs(*network, {1, 28, 28}, torch::kCPU, sizes, 1, 3);
  const auto convs = models::convolutions(*network);
  ASSERT_EQ(costs.tables.size(), convs.size());
  EXPECT_EQ(costs.entries.size(), convs.size() * sizes.size());
  for (size_t i = 0; i < convs.size(); ++i) {
    EXPECT_EQ(costs.tables[i].name, convs[i].first);
    ASSERT_EQ(costs.tables[i].ms.size(), sizes.size());
    for (const auto& [size, ms] : costs.tables[i].ms) EXPECT_GT(ms, 0) << convs[i].first << " at " << size;
    EXPECT_FALSE(convs[i].second->input_shape().empty());
  }
  for (const LayerCost& c : costs.entries) EXPECT_LE(c.p10_ms, c.p90_ms);
  for (auto& p : network->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(LayerPlans, ApplySetsEveryConvolutionAndClearRestores) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  std::vector<SplitPlan> plans;
  for (const auto& [name, conv] : models::convolutions(*network)) plans.push_back({name, {4, 2, 2}, 1, 2});
  apply_plans(*network, plans);
  for (const auto& [name, conv] : models::convolutions(*network))
    EXPECT_EQ(conv->micro_batches(), (std::vector<int64_t>{4, 2, 2}));
  clear_micro_batches(*network);
  for (const auto& [name, conv] : models::convolutions(*network)) EXPECT_TRUE(conv->micro_batches().empty());
  plans.pop_back();
  EXPECT_THROW(apply_plans(*network, plans), c10::Error);
}

void check_written_study(MicroBatchMode mode) {
  MicroBatchOptions o;
  o.batch = 8;
  o.mode = mode;
  o.warmup = 1;
  o.steps = 2;
  o.repeats = 2;
  const MicroBatchStudy study = run_microbatch_study(tiny_experiment("mnist_cnn", {1, 28, 28}, 10), o);
  const testing_support::TempDir temp;
  const fs::path dir = temp.path() / to_string(mode);
  EXPECT_FALSE(has_complete_microbatch_result(dir.string()));
  write_microbatch_files(dir.string(), Json{{"type", "run"}, {"run_id", "test"}}, study);
  EXPECT_TRUE(has_complete_microbatch_result(dir.string()));
  EXPECT_TRUE(fs::exists(dir / "report.md"));

  const JsonlContents contents = read_jsonl((dir / "microbatch.jsonl").string());
  ASSERT_GE(contents.records.size(), 2u);
  EXPECT_EQ(contents.records.front()["type"], "run");
  EXPECT_EQ(contents.records.back()["type"], "end");
  int costs = 0, plans = 0, results = 0;
  for (const Json& r : contents.records) {
    const std::string type = r["type"];
    if (type == "layer_cost") {
      ++costs;
      EXPECT_GT(r["median_ms"].get<double>(), 0);
    } else if (type == "layer_plan") {
      ++plans;
      EXPECT_EQ(to_json(layer_plan_from_json(r)).dump(), r.dump()) << "read back, it writes the same line";
      const auto split = r["split"].get<std::vector<int64_t>>();
      EXPECT_EQ(std::accumulate(split.begin(), split.end(), int64_t{0}), 8);
    } else if (type == "microbatch_result") {
      ++results;
      EXPECT_GT(r["measured"]["speedup"].get<double>(), 0);
      EXPECT_GT(r["predicted"]["speedup"].get<double>(), 0);
      EXPECT_EQ(r["mode"], to_string(mode));
      EXPECT_EQ(to_json(microbatch_result_from_json(r)).dump(), r.dump())
          << "read back, it writes the same line";
      Json damaged = r;
      damaged["measured"]["undivided"]["median_ms"] = "fast";
      try {
        microbatch_result_from_json(damaged);
        ADD_FAILURE() << "a text median was read";
      } catch (const BadRecord& bad) {
        EXPECT_NE(std::string(bad.what()).find("median_ms"), std::string::npos) << bad.what();
      }
    }
  }
  const int64_t layers = mode == MicroBatchMode::Layer ? 2 : 1;  // mnist_cnn has two convolutions
  EXPECT_EQ(costs, layers * 8);
  EXPECT_EQ(plans, layers * 3);
  EXPECT_EQ(results, 3);
  EXPECT_FALSE(study_summary(study).empty());
}

TEST(MicroBatchStudy, LayerModeWritesTheExpectedRecords) { check_written_study(MicroBatchMode::Layer); }
TEST(MicroBatchStudy, ModelModeWritesTheExpectedRecords) { check_written_study(MicroBatchMode::Model); }

TEST(MicroBatchStudy, RefusesBadOptions) {
  MicroBatchOptions o;
  o.batch = 0;
  EXPECT_THROW(run_microbatch_study(tiny_experiment("mnist_cnn", {1, 28, 28}, 10), o), std::invalid_argument);
}

}  // namespace
}  // namespace batchscope
