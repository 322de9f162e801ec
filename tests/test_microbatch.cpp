#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "lib/analysis/layer_rates.h"
#include "lib/analysis/tile_model.h"
#include "lib/common/micro_batches.h"
#include "lib/device/cpu_memory.h"
#include "lib/microbatch/layer_peak.h"
#include "lib/microbatch/microbatch.h"
#include "lib/records/microbatch_records.h"
#include "lib/records/records.h"
#include "lib/sweep/max_batch.h"
#include "lib/timing/step_runner.h"
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
  const torch::Tensor whole_loss = accumulated_step(*network, x, y, {8});
  const auto whole = grads_of(*network);
  const torch::Tensor split_loss = accumulated_step(*network, x, y, {3, 2, 3});
  expect_close(grads_of(*network), whole, 1e-5);
  EXPECT_NEAR(split_loss.item<double>(), whole_loss.item<double>(), 1e-5 * whole_loss.item<double>());
  EXPECT_LT(gradient_relative_difference(*network, x, y, {3, 2, 3}), 1e-5);
  EXPECT_FALSE(has_batch_norm(*network));
}

TEST(AccumulatedStep, RefusesMicroBatchesThatAreNotTheBatch) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->eval();
  EXPECT_THROW(
      accumulated_step(*network, torch::randn({4, 1, 28, 28}), torch::randint(10, {4}, torch::kLong), {2, 1}),
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

// A channels-last (NHWC) input keeps its layout through a split convolution, so the layers after it see
// what an undivided channels-last step gives them, and the results are the undivided ones.
TEST(LayerMicroBatches, AChannelsLastInputStaysChannelsLastThroughASplit) {
  auto network = build("resnet18", {3, 32, 32}, 10);
  network->train();
  for (auto& p : network->parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  const torch::Tensor x = torch::randn({8, 3, 32, 32}).contiguous(at::MemoryFormat::ChannelsLast);
  const torch::Tensor y = torch::randint(10, {8}, torch::kLong);
  const auto convolutions = models::convolutions(*network);
  const auto& [name, conv] = convolutions.front();
  const torch::Tensor whole_conv = conv->forward(x).detach();
  conv->set_micro_batches({3, 5});
  const torch::Tensor split_conv = conv->forward(x).detach();
  EXPECT_TRUE(split_conv.is_contiguous(at::MemoryFormat::ChannelsLast)) << name;
  EXPECT_TRUE(whole_conv.is_contiguous(at::MemoryFormat::ChannelsLast)) << name;
  expect_close({split_conv}, {whole_conv}, 1e-5);
  conv->set_micro_batches({});
  auto run = [&] {
    for (auto& p : network->parameters()) p.mutable_grad().reset();
    torch::nn::functional::cross_entropy(network->forward(x), y).backward();
  };
  run();
  const auto whole = grads_of(*network);
  for (auto& [n, c] : models::convolutions(*network)) c->set_micro_batches({3, 2, 3});
  run();
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

// A size that runs out of memory in layer mode is skipped for that layer with its reason, as in model mode,
// and the study goes on (it ended the study with an internal error).
TEST(LayerCosts, ASizeOutOfMemoryIsSkippedAndTheRestMeasured) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->train();
  record_convolution_inputs(*network, {1, 28, 28}, torch::kCPU);
  CostMeasurement costs;
  {
    // Room for micro-batches of 1 and 2, not for 4096 (a first convolution's output alone is 44 MiB).
    const cpu_memory::ScopedLimit limit(cpu_memory::current_bytes() + (8 << 20));
    costs = measure_layer_costs(*network, {1, 28, 28}, torch::kCPU, {1, 2, 4096}, 0, 2);
  }
  ASSERT_FALSE(costs.skipped.empty());
  EXPECT_NE(costs.skipped.front().find("micro-batch 4096: "), std::string::npos) << costs.skipped.front();
  ASSERT_FALSE(costs.tables.empty());
  EXPECT_EQ(costs.tables.front().ms.count(1), 1u);
  EXPECT_EQ(costs.tables.front().ms.count(4096), 0u);
}

// A study stopped on request keeps what it measured; given those costs back, it measures only the rest
// and takes them as they were, in either mode.
void check_kept_costs(MicroBatchMode mode) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->train();
  const std::vector<int64_t> sizes{1, 2, 4, 8};
  const auto measure = [&](const CostKeeping& keeping) {
    if (mode == MicroBatchMode::Layer)
      return measure_layer_costs(*network, {1, 28, 28}, torch::kCPU, sizes, 0, 1, Precision::FP32, false,
                                 keeping);
    return measure_model_costs(*network, *models::find_model("mnist_cnn"), {1, 28, 28}, 10, torch::kCPU,
                               sizes, 0, 1, Precision::FP32, std::nullopt, false, keeping);
  };
  const int64_t total = (mode == MicroBatchMode::Layer ? 2 : 1) * 4;  // mnist_cnn's two convolutions
  CostKeeping first;
  first.on_cost = [&](const LayerCost& c) { first.known.push_back(c); };
  first.stop_requested = [&] { return first.known.size() == 3; };
  try {
    measure(first);
    ADD_FAILURE() << "the study was not stopped";
  } catch (const MicroBatchStopped& stopped) {
    EXPECT_EQ(stopped.measured, 3);
    EXPECT_EQ(stopped.total, total);
  }
  ASSERT_EQ(first.known.size(), 3u);
  first.known[0].median_ms = 1234.5;  // a value no measurement here gives: taken, not measured again
  CostKeeping second;
  second.known = first.known;
  std::vector<LayerCost> measured;
  second.on_cost = [&](const LayerCost& c) { measured.push_back(c); };
  second.stop_requested = [] { return false; };
  const CostMeasurement costs = measure(second);
  EXPECT_EQ(measured.size(), static_cast<size_t>(total - 3));
  ASSERT_EQ(costs.entries.size(), static_cast<size_t>(total));
  EXPECT_EQ(costs.entries[0].median_ms, 1234.5);
  EXPECT_EQ(costs.tables.front().ms.at(costs.entries[0].micro_batch), 1234.5);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(costs.entries[i].layer, first.known[i].layer);
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(costs.entries[3 + i].micro_batch, measured[i].micro_batch);
    EXPECT_GT(measured[i].median_ms, 0);
  }
}

TEST(LayerCosts, AStoppedStudyKeepsItsCostsAndGoesOnFromThem) { check_kept_costs(MicroBatchMode::Layer); }
TEST(ModelCosts, AStoppedStudyKeepsItsCostsAndGoesOnFromThem) { check_kept_costs(MicroBatchMode::Model); }

// One train step of a workload on its own synthetic batch of 8, whole or as the given micro-batches;
// dropout off, so that only the split and the precision can change the gradients it leaves.
std::vector<torch::Tensor> gradients_of_step(ExperimentConfig e, const std::vector<int64_t>& split) {
  e.batch_sizes = {8};
  Workload workload(e, torch::kCPU);
  DropoutOff dropout_off(workload.network());
  workload.prepare_batch(8);
  if (!split.empty()) workload.set_micro_batches(split);
  workload.stage();
  workload.step();
  EXPECT_TRUE(std::isfinite(workload.last_loss().item<double>()));
  return grads_of(workload.network());
}

// A batch at most `chunk` samples at a time: as few micro-batches as hold it, as even as can be (in eights
// from a chunk of 64 on that is a multiple of 8), never a sliver of the batch.
TEST(MicroBatchSizes, AreAsFewAsHoldTheBatchAndAsEvenAsCanBe) {
  std::vector<int64_t> eights(26, 8);
  eights.insert(eights.end(), 6, 7);
  EXPECT_EQ(micro_batch_sizes(250, 8), eights);
  EXPECT_EQ(micro_batch_sizes(4096, 1368), (std::vector<int64_t>{1368, 1368, 1360}));
  EXPECT_EQ(micro_batch_sizes(40, 16), (std::vector<int64_t>{14, 13, 13}));
  EXPECT_EQ(micro_batch_sizes(8, 3), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(micro_batch_sizes(8, 0), (std::vector<int64_t>{8}));
  EXPECT_EQ(micro_batch_sizes(8, 8), (std::vector<int64_t>{8}));
  EXPECT_EQ(micro_batch_text(micro_batch_sizes(250, 8)), "26×8 + 6×7");
  EXPECT_EQ(micro_batch_text(micro_batch_sizes(4096, 1368)), "2×1368 + 1360");
  EXPECT_EQ(micro_batch_text({5}), "5");
  EXPECT_EQ(smallest_chunk_for(5, 2), 3);  // at most 2: 2, 2, 1; at most 3: 3, 2
  EXPECT_EQ(smallest_chunk_for(8, 2), 2);
  EXPECT_EQ(smallest_chunk_for(7, 1), 1);
  for (int64_t batch = 1; batch <= 700; ++batch) {
    for (int64_t chunk = 1; chunk <= batch; ++chunk) {
      const std::vector<int64_t> sizes = micro_batch_sizes(batch, chunk);
      SCOPED_TRACE(std::to_string(batch) + " at most " + std::to_string(chunk));
      ASSERT_EQ(static_cast<int64_t>(sizes.size()), (batch + chunk - 1) / chunk);
      ASSERT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), batch);
      ASSERT_TRUE(std::is_sorted(sizes.rbegin(), sizes.rend()));
      ASSERT_LE(sizes.front(), chunk);
      ASSERT_LE(sizes.front() - sizes.back(), chunk >= 64 && chunk % 8 == 0 ? 8 : 1);
    }
  }
  // chunk: auto's choice for the largest micro-batch that fits runs as few passes as that one would.
  for (const auto& [batch, fits] :
       std::vector<std::pair<int64_t, int64_t>>{{4801, 200}, {4096, 1537}, {300, 13}, {250, 8}}) {
    const std::vector<int64_t> sizes = micro_batch_sizes(batch, even_chunk(batch, fits));
    EXPECT_EQ(static_cast<int64_t>(sizes.size()), (batch + fits - 1) / fits) << batch << " with " << fits;
    EXPECT_LE(sizes.front() - sizes.back(), 8) << batch << " with " << fits;
  }
}

// A training sweep's chunk is gradient accumulation: as few micro-batches of at most that many samples as
// hold the batch, as even as can be (8 in chunks of 3: 3, 3, 2), one optimizer step, the whole batch's
// gradients.
TEST(WorkloadMicroBatches, ATrainingChunkAccumulatesTheWholeBatchsGradients) {
  ExperimentConfig e = tiny_experiment("mnist_cnn", {1, 28, 28}, 10);
  const auto whole = gradients_of_step(e, {});
  e.chunk = 3;
  expect_close(gradients_of_step(e, {}), whole, 1e-5);
  e.batch_sizes = {8};
  Workload workload(e, torch::kCPU);
  workload.prepare_batch(8);
  EXPECT_EQ(workload.micro_batches(), (std::vector<int64_t>{3, 3, 2}));
  workload.prepare_batch(3);
  EXPECT_TRUE(workload.micro_batches().empty());  // a chunk that holds the batch runs it whole
  workload.stage();
  EXPECT_NO_THROW(workload.step());
  // chunk: auto after a size it split (shuffled or in a later pass): a smaller size that fits whole
  // runs whole, not in the micro-batches left from before (once: "the micro-batches add up to more").
  workload.set_chunk(6);
  workload.prepare_batch(12);
  EXPECT_EQ(workload.micro_batches(), (std::vector<int64_t>{6, 6}));
  workload.set_chunk(0);
  workload.prepare_batch(2);
  EXPECT_TRUE(workload.micro_batches().empty());
  workload.stage();
  EXPECT_NO_THROW(workload.step());
}

TEST(WorkloadMicroBatches, AccumulateToTheGradientsOfTheWholeBatch) {
  const ExperimentConfig e = tiny_experiment("mnist_cnn", {1, 28, 28}, 10);
  const auto whole = gradients_of_step(e, {});
  expect_close(gradients_of_step(e, {3, 2, 3}), whole, 1e-5);
  expect_close(gradients_of_step(e, {8}), whole, 1e-6);

  // The loss it reports is the batch's mean loss, the micro-batches' weighted by their share.
  ExperimentConfig sized = e;
  sized.batch_sizes = {8};
  Workload workload(sized, torch::kCPU);
  DropoutOff dropout_off(workload.network());
  workload.prepare_batch(8);
  workload.stage();
  const auto saved = workload.save_state();
  workload.step();
  const double whole_loss = workload.last_loss().item<double>();
  workload.restore_state(saved);
  workload.set_micro_batches({5, 3});
  const torch::Tensor before = workload.network().parameters().front().clone();
  workload.step();
  EXPECT_NEAR(workload.last_loss().item<double>(), whole_loss, 1e-5 * std::abs(whole_loss));
  EXPECT_FALSE(torch::equal(before, workload.network().parameters().front())) << "one optimizer step taken";

  workload.set_micro_batches({5, 2});
  EXPECT_THROW(workload.step(), c10::Error) << "micro-batches that do not add up to the batch";
  workload.set_micro_batches({5, 4});
  EXPECT_THROW(workload.step(), c10::Error);
  workload.set_micro_batches({7});
  EXPECT_THROW(workload.step(), c10::Error) << "one micro-batch that is not the batch";
  EXPECT_THROW(workload.set_micro_batches({4, 0, 4}), c10::Error);
  ExperimentConfig inference = sized;
  inference.phase = Phase::Infer;
  Workload infer(inference, torch::kCPU);
  EXPECT_THROW(infer.set_micro_batches({4, 4}), c10::Error);
}

TEST(WorkloadMicroBatches, RunUnderAutocastAndTheLossScaler) {
  ExperimentConfig e = tiny_experiment("mnist_cnn", {1, 28, 28}, 10);
  const auto fp32 = gradients_of_step(e, {4, 4});
  e.precision = Precision::BF16;
  const auto bf16 = gradients_of_step(e, {4, 4});
  // bf16 autocast rounds the forward: the gradients move, but only by its rounding.
  const double moved = relative_l2(bf16, fp32);
  EXPECT_GT(moved, 1e-4) << "the micro-batches ran without autocast";
  EXPECT_LT(moved, 0.1);

  // Each micro-batch's loss is scaled before its backward and the sum unscaled once before the step:
  // a power-of-two scale leaves the bf16 gradients as they were, up to overflow (none here).
  e.loss_scale = LossScale::Dynamic;
  expect_close(gradients_of_step(e, {4, 4}), bf16, 1e-3);
}

TEST(LayerCosts, TimeEachConvolutionOnTheInputTypeItSeesUnderAutocast) {
  auto network = build("mnist_cnn", {1, 28, 28}, 10);
  network->train();
  const CostMeasurement costs =
      measure_layer_costs(*network, {1, 28, 28}, torch::kCPU, {1, 2}, 0, 2, Precision::BF16);
  const auto convs = models::convolutions(*network);
  ASSERT_EQ(convs.size(), 2u);
  EXPECT_EQ(convs[0].second->input_dtype(), torch::kFloat) << "the first sees the images";
  EXPECT_EQ(convs[1].second->input_dtype(), torch::kBFloat16) << "the second, the first's bf16 output";
  EXPECT_EQ(costs.entries.size(), 4u);
  for (const LayerCost& c : costs.entries) EXPECT_GT(c.median_ms, 0);
  measure_layer_costs(*network, {1, 28, 28}, torch::kCPU, {1}, 0, 1);
  EXPECT_EQ(convs[1].second->input_dtype(), torch::kFloat) << "in fp32, fp32";
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
      EXPECT_NO_THROW(layer_cost_from_json(r));
      // A kept cost no measurement gives is refused at its record, before a stopped study measures on.
      for (const auto& [key, value] : std::vector<std::pair<std::string, Json>>{
               {"median_ms", -1.0}, {"p90_ms", -0.5}, {"micro_batch", 0}}) {
        Json damaged = r;
        damaged[key] = value;
        EXPECT_THROW(layer_cost_from_json(damaged), BadRecord) << key;
      }
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

// A short study of batch 8 under powerOfTwo: one warm-up run, three steps, one timed run per cost.
MicroBatchOptions short_study(MicroBatchMode mode) {
  MicroBatchOptions o;
  o.batch = 8;
  o.mode = mode;
  o.policies = {MicroBatchPolicy::PowerOfTwo};
  o.warmup = 1;
  o.steps = 3;
  o.repeats = 1;
  return o;
}

TEST(MicroBatchStudy, ModelModeStepsInTheExperimentsPrecisionOptimizerAndLossScaling) {
  ExperimentConfig e = tiny_experiment("mnist_cnn", {1, 28, 28}, 10);
  e.precision = Precision::BF16;
  e.loss_scale = LossScale::Dynamic;
  e.optimizer.kind = OptimizerKind::AdamW;
  e.optimizer.foreach = true;
  const MicroBatchOptions o = short_study(MicroBatchMode::Model);
  const MicroBatchStudy study = run_microbatch_study(e, o);
  ASSERT_EQ(study.outcomes.size(), 1u);
  const PolicyOutcome& outcome = study.outcomes.front();
  ASSERT_TRUE(outcome.undivided.skipped_steps.has_value()) << "loss scaling counts skipped steps";
  ASSERT_TRUE(outcome.planned.skipped_steps.has_value());
  EXPECT_LE(*outcome.undivided.skipped_steps, 3);
  const auto result_of = [](const MicroBatchStudy& s) {
    for (const Json& r : study_records(s))
      if (r["type"] == "microbatch_result") return r;
    return Json();
  };
  const Json result = result_of(study);
  EXPECT_TRUE(result["measured"]["planned"].contains("skipped_steps"));
  EXPECT_EQ(to_json(microbatch_result_from_json(result)).dump(), result.dump());
  EXPECT_NE(study_summary(study).find("(1x28x28, bf16, loss scaled)"), std::string::npos)
      << study_summary(study);
  const std::string report = study_report_markdown(study);
  EXPECT_NE(report.find("adamw with the multi-tensor (foreach) step, bf16 under autocast"), std::string::npos)
      << report;

  // In fp32 without loss scaling nothing is counted, and nothing is said of it.
  const MicroBatchStudy plain = run_microbatch_study(tiny_experiment("mnist_cnn", {1, 28, 28}, 10), o);
  EXPECT_FALSE(plain.outcomes.front().undivided.skipped_steps.has_value());
  EXPECT_FALSE(result_of(plain)["measured"]["planned"].contains("skipped_steps"));
}

// --channels-last: the layer costs and the steps run on NHWC inputs and weights, the split leaves the
// gradients as they were, and the summary and report say how the steps ran.
TEST(MicroBatchStudy, LayerModeRunsChannelsLast) {
  ExperimentConfig e = tiny_experiment("resnet18", {3, 32, 32}, 10);
  e.channels_last = true;
  const MicroBatchStudy study = run_microbatch_study(e, short_study(MicroBatchMode::Layer));
  ASSERT_EQ(study.outcomes.size(), 1u);
  EXPECT_LT(study.outcomes.front().gradient_difference, 1e-4);
  EXPECT_NE(study_summary(study).find("(3x32x32, fp32, channels-last)"), std::string::npos)
      << study_summary(study);
  EXPECT_NE(
      study_report_markdown(study).find(", channels-last (images and convolution weights laid out NHWC"),
      std::string::npos);
  EXPECT_TRUE(Json(to_json(study.experiment))["channels_last"].get<bool>());
}

TEST(MicroBatchResult, SaysWhereTheLossScalerSkippedSteps) {
  MicroBatchResultRecord r;
  r.undivided.steps = r.planned.steps = 10;
  EXPECT_EQ(skipped_steps_note(r), "") << "without loss scaling";
  r.undivided.skipped_steps = 0;
  r.planned.skipped_steps = 0;
  EXPECT_EQ(skipped_steps_note(r), "") << "none skipped";
  r.undivided.skipped_steps = 2;
  r.planned.skipped_steps = 1;
  EXPECT_EQ(skipped_steps_note(r),
            "the loss scaler skipped the optimizer step of 2 undivided and 1 planned of 10 timed steps each");
}

TEST(MicroBatchStudy, TheReportsBestSpeedupIsASplitsNotTheUndividedStepsAgainstItself) {
  // As a GPU measured AlexNet at batch 256: the undivided row (noise) came out above both splits.
  MicroBatchStudy study;
  study.experiment = tiny_experiment("alexnet", {3, 64, 64}, 10);
  study.options.batch = 256;
  for (const auto& [policy, speedup] :
       std::vector<std::pair<MicroBatchPolicy, double>>{{MicroBatchPolicy::Undivided, 1.001},
                                                        {MicroBatchPolicy::PowerOfTwo, 0.987},
                                                        {MicroBatchPolicy::All, 0.986}}) {
    PolicyOutcome o;
    o.policy = policy;
    o.measured_speedup = speedup;
    study.outcomes.push_back(o);
  }
  const std::string report = study_report_markdown(study);
  EXPECT_NE(report.find("best measured whole-step speedup of a split is 0.987x (powerOfTwo), against 1.001x "
                        "for the undivided step set against itself (noise)"),
            std::string::npos)
      << report;
  study.outcomes.erase(study.outcomes.begin() + 1, study.outcomes.end());
  EXPECT_NE(study_report_markdown(study).find("Only the undivided policy ran here"), std::string::npos);
}

TEST(MicroBatchStudy, RefusesBadOptions) {
  MicroBatchOptions o;
  o.batch = 0;
  EXPECT_THROW(run_microbatch_study(tiny_experiment("mnist_cnn", {1, 28, 28}, 10), o), std::invalid_argument);
}

TEST(LayerPeak, TimesEveryGemmLayerAloneInEachPassWithTheFlopsAnalyzeCounts) {
  LayerPeakOptions o;
  o.model = "mnist_cnn";
  o.input = {1, 28, 28};
  o.classes = 10;
  o.batches = {2, 4};
  o.warmup = 1;
  o.steps = 3;
  o.profiled_runs = 2;
  const torch::Device cpu("cpu");
  const std::vector<GemmLayer> layers = gemm_layers("mnist_cnn", o.input, o.classes);
  ASSERT_EQ(layers.size(), 4u);  // conv1, conv2, fc1, fc2
  const std::vector<PeakRate> train =
      measure_layer_peak_rates(cpu, "fp32", "train", {"contiguous", "channels_last"}, o);
  // Contiguous: 4 layers x 2 passes x 2 batches; channels-last the 2 convolutions only (a linear layer
  // has no layout of its own).
  ASSERT_EQ(train.size(), 4u * 2 * 2 + 2u * 2 * 2);
  std::map<std::string, int> seen;
  for (const PeakRate& r : train) {
    EXPECT_EQ(r.operation, "layer");
    EXPECT_EQ(r.phase, "train");
    EXPECT_TRUE(r.skipped.empty()) << r.skipped;
    EXPECT_EQ(static_cast<int>(r.times_ms.size()), o.steps);
    EXPECT_GT(r.median_tflops, 0);
    const auto layer = std::find_if(layers.begin(), layers.end(),
                                    [&](const GemmLayer& l) { return l.name == r.layer.name; });
    ASSERT_NE(layer, layers.end()) << r.layer.name;
    EXPECT_DOUBLE_EQ(r.flops,
                     gemm_flops_per_sample(*layer, r.layer.pass) * static_cast<double>(r.layer.batch));
    EXPECT_NEAR(r.median_tflops, r.flops / (r.median_ms / 1e3) / 1e12, 1e-9 * r.median_tflops);
    // The runs under the profiler, timed as a profiled step's layers are: operators' host time here.
    EXPECT_EQ(r.profiled_as, "operators");
    EXPECT_EQ(r.profiled_ms.size(), 2u);
    EXPECT_GT(r.profiled_median_ms, 0);
    EXPECT_NEAR(r.profiled_tflops, r.flops / (r.profiled_median_ms / 1e3) / 1e12, 1e-9 * r.profiled_tflops);
    EXPECT_EQ(r.layer.kind, r.layer.name.rfind("conv", 0) == 0 ? "conv" : "linear");
    if (r.layer.kind == "linear") EXPECT_EQ(r.memory_format, "contiguous");
    ++seen[r.layer.name + " " + r.layer.pass + " " + r.memory_format];
  }
  EXPECT_EQ(seen["conv1 backward channels_last"], 2);
  EXPECT_EQ(seen["fc2 forward contiguous"], 2);
  // Each layer's input as the step hands it on: conv2 takes conv1's 32 channels at 26x26 (after its 3x3),
  // fc1 the 9216 features of the flattened pool.
  for (const PeakRate& r : train) {
    if (r.layer.name == "conv2") EXPECT_EQ(r.layer.input, (std::vector<int64_t>{32, 26, 26}));
    if (r.layer.name == "fc1") EXPECT_EQ(r.layer.input, (std::vector<int64_t>{9216}));
  }
  // The first layer's backward pass is its weight gradient alone: as many FLOPs as its forward.
  EXPECT_DOUBLE_EQ(train[1].flops, train[0].flops);
  EXPECT_EQ(train[0].layer.name, "conv1");
  EXPECT_DOUBLE_EQ(train[3].flops, 2 * train[2].flops);
  const Json j = to_json(train[3]);
  EXPECT_EQ(j["operation"], "layer");
  EXPECT_EQ(j["layer"], "conv2");
  EXPECT_EQ(j["kind"], "conv");
  EXPECT_EQ(j["pass"], "backward");
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["layer_input"], Json({32, 26, 26}));
  EXPECT_EQ(j["profiled"]["as"], "operators");
  EXPECT_EQ(j["profiled"]["times_ms"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["profiled"]["median_tflops"].get<double>(), train[3].profiled_tflops);
  // Kernels are counted and their layout conversions timed where a GPU ran them only.
  EXPECT_FALSE(j["profiled"].contains("kernels_per_run"));
  EXPECT_FALSE(j["profiled"].contains("layout_ms"));
  EXPECT_FALSE(j.contains("profiled_dropped"));
  PeakRate dropped = train[3];
  dropped.profiled_ms.clear();
  dropped.profiled_dropped =
      "its 5 runs under the profiler showed from 2 to 3 kernels, so some were not recorded";
  EXPECT_FALSE(to_json(dropped).contains("profiled"));
  EXPECT_EQ(to_json(dropped)["profiled_dropped"], dropped.profiled_dropped);
  PeakRate on_gpu = train[3];
  on_gpu.profiled_as = "kernels";
  on_gpu.profiled_kernels = 4;
  on_gpu.profiled_layout_ms = 0.0;
  EXPECT_EQ(to_json(on_gpu)["profiled"]["kernels_per_run"], 4);
  EXPECT_EQ(to_json(on_gpu)["profiled"]["layout_ms"], 0.0);
  // Inference times the forward passes alone; TF32 is not measured on a CPU. No profiled runs where none
  // are asked for.
  o.profiled_runs = 0;
  const std::vector<PeakRate> infer = measure_layer_peak_rates(cpu, "fp32", "infer", {"contiguous"}, o);
  ASSERT_EQ(infer.size(), 4u * 2);
  for (const PeakRate& r : infer) {
    EXPECT_EQ(r.layer.pass, "forward");
    EXPECT_TRUE(r.profiled_ms.empty());
    EXPECT_FALSE(to_json(r).contains("profiled"));
  }
  const std::vector<PeakRate> tf32 = measure_layer_peak_rates(cpu, "tf32", "train", {"contiguous"}, o);
  ASSERT_EQ(tf32.size(), 1u);
  EXPECT_FALSE(tf32[0].skipped.empty());
  // A sequence model is not laid out as such layers.
  o.model = "lstm_lm";
  o.input = {35};
  o.classes = 100;
  EXPECT_THROW(measure_layer_peak_rates(cpu, "fp32", "train", {"contiguous"}, o), std::invalid_argument);
}

}  // namespace
}  // namespace batchscope
