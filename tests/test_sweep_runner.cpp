#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/common/statistics.h"
#include "lib/timing/step_runner.h"
#include "lib/sweep/sweep_runner.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

SweepConfig tiny_sweep(std::vector<int64_t> batches) {
  ExperimentConfig e;
  e.name = "mnist_tiny";
  e.model = "mnist_cnn";
  e.input_shape = {1, 28, 28};
  e.classes = 10;
  e.batch_sizes = std::move(batches);
  e.warmup_steps = 1;
  e.timed_steps = 3;
  e.device = "cpu";
  return SweepConfig{"test", {e}};
}

int count_type(const std::vector<SweepRecord>& records, const std::string& type) {
  return static_cast<int>(std::count_if(records.begin(), records.end(),
                                        [&](const SweepRecord& r) { return type_of(r) == type; }));
}

}  // namespace

TEST(BatchOrder, ShuffledIsADeterministicPermutation) {
  ExperimentConfig e;
  e.batch_sizes = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(batch_order(e), e.batch_sizes);
  e.order = BatchOrder::Shuffled;
  e.seed = 7;
  const auto a = batch_order(e);
  EXPECT_EQ(a, batch_order(e));
  EXPECT_NE(a, e.batch_sizes);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, e.batch_sizes);
  e.seed = 8;
  EXPECT_NE(batch_order(e), a);
}

TEST(Workload, TrainStepLowersTheLossOnAFixedBatch) {
  ExperimentConfig e = tiny_sweep({4}).experiments[0];
  e.optimizer.lr = 0.05;
  Workload w(e, torch::Device("cpu"));
  w.prepare_batch(4);
  w.step();
  const double first = w.last_loss().item<double>();
  for (int i = 0; i < 20; ++i) w.step();
  EXPECT_LT(w.last_loss().item<double>(), first);
  EXPECT_DOUBLE_EQ(w.flops_per_step(4), 4 * w.flops_per_step(1));
}

TEST(SweepRunner, WritesStepsAndPointsForEveryBatchSize) {
  const testing_support::TempDir dir;
  SweepOptions options;
  options.out_dir = dir / "records";
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(resolve_for_machine(tiny_sweep({1, 2, 3})), options, progress);
  EXPECT_FALSE(outcome.resumed);
  EXPECT_EQ(count_type(outcome.records, "run"), 1);
  EXPECT_EQ(count_type(outcome.records, "step"), 9);
  EXPECT_EQ(count_type(outcome.records, "point"), 3);
  EXPECT_EQ(count_type(outcome.records, "end"), 1);
  std::map<int64_t, int> steps, points;
  for (const SweepRecord& record : outcome.records) {
    const Json r = to_json(record);
    if (r["type"] == "point") ++points[r["batch_size"].get<int64_t>()];
    if (r["type"] != "step") continue;
    ++steps[r["batch_size"].get<int64_t>()];
    EXPECT_GT(r["time_ms"].get<double>(), 0.0);
    EXPECT_TRUE(r["loss"].is_number());
    // The issuing thread's CPU time: the step's own work on one thread, never more than its wall time
    // by more than the two clock reads around the timer's.
    ASSERT_TRUE(r.contains("host_ms"));
    EXPECT_GT(r["host_ms"].get<double>(), 0.0);
    if (torch::get_num_threads() == 1) EXPECT_LE(r["host_ms"].get<double>(), r["time_ms"].get<double>() + 0.5);
  }
  // The end record says where the session's time went, part by part, adding up to the whole.
  const EndRecord& end = std::get<EndRecord>(outcome.records.back());
  ASSERT_TRUE(end.time_spent.has_value());
  ASSERT_EQ(end.time_spent->parts.size(), std::size(kSweepParts));
  double sum = 0;
  for (std::size_t i = 0; i < end.time_spent->parts.size(); ++i) {
    EXPECT_EQ(end.time_spent->parts[i].first, kSweepParts[i]);
    EXPECT_GE(end.time_spent->parts[i].second, 0.0);
    sum += end.time_spent->parts[i].second;
  }
  EXPECT_NEAR(sum, end.time_spent->total_s, 1e-6);
  EXPECT_GT(end.time_spent->parts[0].second, 0.0) << "timed steps";
  EXPECT_GT(end.time_spent->parts[4].second, 0.0) << "model building";
  // Each batch size: its three timed steps and one point, no more, no other size.
  EXPECT_EQ(steps, (std::map<int64_t, int>{{1, 3}, {2, 3}, {3, 3}}));
  EXPECT_EQ(points, (std::map<int64_t, int>{{1, 1}, {2, 1}, {3, 1}}));
  EXPECT_TRUE(progress.str().empty()) << "no progress line unless asked for";
}

namespace {

// The steps and the point of each batch size of an auto-step sweep.
struct AutoOutcome {
  std::map<int64_t, std::vector<double>> steps;
  std::map<int64_t, Json> points;
};

AutoOutcome run_auto(const AutoSteps& a, std::vector<int64_t> batches) {
  const testing_support::TempDir dir;
  SweepConfig config = tiny_sweep(std::move(batches));
  config.experiments[0].auto_steps = a;
  config.experiments[0].timed_steps = limits::kAutoFirstSteps;
  SweepOptions options;
  options.out_dir = dir / "records";
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(resolve_for_machine(config), options, progress);
  AutoOutcome out;
  for (const SweepRecord& record : outcome.records) {
    const Json r = to_json(record);
    if (r["type"] == "step") out.steps[r["batch_size"].get<int64_t>()].push_back(r["time_ms"].get<double>());
    if (r["type"] == "point") out.points[r["batch_size"].get<int64_t>()] = r;
  }
  return out;
}

}  // namespace

TEST(AutoSteps, AWideEnoughIntervalStopsTheSize) {
  AutoSteps a;
  a.ci_width = 0.5;
  a.max_time_s = 60;
  const AutoOutcome out = run_auto(a, {1, 2});
  ASSERT_EQ(out.points.size(), 2u);
  for (const auto& [batch, point] : out.points) {
    EXPECT_EQ(point["steps_stopped_by"], kStoppedByCiWidth) << point.dump();
    EXPECT_GE(out.steps.at(batch).size(), static_cast<std::size_t>(limits::kAutoFirstSteps));
    EXPECT_EQ(point["samples"].get<std::size_t>(), out.steps.at(batch).size());
    // The interval the point records is the one the steps give, and it is within ±50% of the median.
    const auto ci = median_confidence_interval(out.steps.at(batch));
    ASSERT_TRUE(ci);
    EXPECT_DOUBLE_EQ(point["median_ci_low_ms"].get<double>(), ci->low);
    EXPECT_DOUBLE_EQ(point["median_ci_high_ms"].get<double>(), ci->high);
    EXPECT_LE((ci->high - ci->low) / 2, 0.5 * point["median_ms"].get<double>());
  }
}

TEST(AutoSteps, TheTimeLimitStopsAnIntervalThatCannotBeReached) {
  AutoSteps a;
  a.ci_width = 1e-9;
  a.max_time_s = 1.0;
  const AutoOutcome out = run_auto(a, {1});
  ASSERT_EQ(out.points.size(), 1u);
  EXPECT_EQ(out.points.at(1)["steps_stopped_by"], kStoppedByMaxTime);
  // Blocks are sized to the time left: the steps fill most of the second and stop near it, not at the end
  // of a block planned without regard to the limit (however slow a loaded machine makes each step).
  const std::vector<double>& steps = out.steps.at(1);
  const double timed_ms = std::accumulate(steps.begin(), steps.end(), 0.0);
  EXPECT_GE(timed_ms, 500.0);
  EXPECT_LE(timed_ms, 1000.0 + 2 * *std::max_element(steps.begin(), steps.end()));
}

TEST(AutoSteps, ASlowFirstStepKeepsToTheTimeLimit) {
  // A limit shorter than one step: the first step runs alone and is the only one.
  AutoSteps a;
  a.max_time_s = 1e-6;
  const AutoOutcome out = run_auto(a, {1});
  EXPECT_EQ(out.points.at(1)["steps_stopped_by"], kStoppedByMaxTime);
  EXPECT_EQ(out.steps.at(1).size(), 1u);
  EXPECT_FALSE(out.points.at(1).contains("median_ci_low_ms")) << "one step has no interval";
}

TEST(AutoSteps, MinTimeKeepsTimingPastANarrowInterval) {
  AutoSteps a;
  a.ci_width = 0.5;
  a.min_time_s = 1.0;
  a.max_time_s = 60;
  const AutoOutcome out = run_auto(a, {1});
  ASSERT_EQ(out.points.size(), 1u);
  EXPECT_EQ(out.points.at(1)["steps_stopped_by"], kStoppedByCiWidth);
  // The interval is wide enough after the first block, yet timing goes on until the steps' own times
  // make up most of the second (steps of a few milliseconds, or tens on a loaded machine).
  const std::vector<double>& steps = out.steps.at(1);
  EXPECT_GE(std::accumulate(steps.begin(), steps.end(), 0.0), 500.0);
  if (steps.front() * limits::kAutoFirstSteps < 500.0) {
    EXPECT_GT(steps.size(), static_cast<std::size_t>(limits::kAutoFirstSteps));
  }
}

TEST(AutoSteps, AFixedCountRecordsNoReason) {
  const AutoOutcome out = [] {
    const testing_support::TempDir dir;
    SweepOptions options;
    options.out_dir = dir / "records";
    std::ostringstream progress;
    SweepConfig config = tiny_sweep({1});
    config.experiments[0].timed_steps = 6;
    const SweepOutcome outcome = run_sweep(resolve_for_machine(config), options, progress);
    AutoOutcome o;
    for (const SweepRecord& record : outcome.records) {
      const Json r = to_json(record);
      if (r["type"] == "point") o.points[r["batch_size"].get<int64_t>()] = r;
    }
    return o;
  }();
  const Json& point = out.points.at(1);
  EXPECT_FALSE(point.contains("steps_stopped_by"));
  EXPECT_TRUE(point.contains("median_ci_low_ms")) << "six steps have a 95% interval";
}

TEST(SweepRunner, UnknownCudaDeviceIsRefusedWithItsName) {
  SweepConfig config = tiny_sweep({1});
  config.experiments[0].device = "cuda:7";
  EXPECT_TRUE(testing_support::refuses_with([&] { resolve_for_machine(config); }, {"cuda:7"}));
}

TEST(SweepRunner, Fp16OnTheCpuIsRefusedWithTheFix) {
  SweepConfig config = tiny_sweep({1});
  config.experiments[0].precision = Precision::FP16;
  EXPECT_TRUE(testing_support::refuses_with([&] { resolve_for_machine(config); }, {"fp16", "bf16"}));
}

TEST(OutOfMemory, RecognisesAllocatorErrors) {
  EXPECT_TRUE(is_out_of_memory(std::bad_alloc()));
  EXPECT_TRUE(is_out_of_memory(std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB")));
  EXPECT_TRUE(is_out_of_memory(std::runtime_error("DefaultCPUAllocator: can't allocate memory: you tried")));
  EXPECT_FALSE(is_out_of_memory(std::runtime_error("shape mismatch")));
}

TEST(UnsupportedOperation, RecognisesAMissingKernelOnly) {
  const c10::SourceLocation here{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
  const c10::Error missing(here, "\"hardshrink_backward_cpu\" not implemented for 'BFloat16'");
  const auto reason = unsupported_operation(missing);
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, "\"hardshrink_backward_cpu\" not implemented for 'BFloat16'");  // no backtrace
  EXPECT_TRUE(unsupported_operation(c10::NotImplementedError(here, "no kernel")).has_value());
  EXPECT_FALSE(unsupported_operation(c10::Error(here, "shape mismatch")).has_value());
  EXPECT_FALSE(unsupported_operation(std::runtime_error("not implemented for 'BFloat16'")).has_value());
}

TEST(Workload, Bf16AutocastAndChannelsLastTrainOnTheCpu) {
  ExperimentConfig e = tiny_sweep({2}).experiments[0];
  e.precision = Precision::BF16;
  e.channels_last = true;
  Workload w(e, torch::Device("cpu"));
  w.prepare_batch(2);
  w.warm_up(2);
  HostStepTimer timer;
  const TimedSteps steps = run_timed_steps(w, timer, 3);
  ASSERT_EQ(steps.times_ms.size(), 3u);
  ASSERT_EQ(steps.losses.size(), 3u);
  for (double loss : steps.losses) EXPECT_TRUE(std::isfinite(loss));
  // Autocast is switched off again after each step.
  EXPECT_EQ((torch::ones({2, 2}).mm(torch::ones({2, 2}))).scalar_type(), torch::kFloat);
}

TEST(Workload, InferenceRecordsNoLossAndLeavesNoGradients) {
  ExperimentConfig e = tiny_sweep({3}).experiments[0];
  e.phase = Phase::Infer;
  Workload w(e, torch::Device("cpu"));
  w.prepare_batch(3);
  HostStepTimer timer;
  const TimedSteps steps = run_timed_steps(w, timer, 2);
  EXPECT_EQ(steps.times_ms.size(), 2u);
  EXPECT_TRUE(steps.losses.empty());
  EXPECT_DOUBLE_EQ(w.flops_per_step(3), 3 * w.flops_per_step(1));
}
