#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>

#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/common/statistics.h"
#include "lib/device/cpu_memory.h"
#include "lib/sweep/sweep_runner.h"
#include "lib/timing/measure_batch.h"
#include "lib/timing/step_runner.h"
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

TEST(Workload, EveryStepOnADatasetRunsAWholeBatch) {
  // 10 images at batch 4: an epoch holds two whole batches and 2 images over. Timing that short last
  // batch as a batch of 4 made a step look faster than it was.
  data::Dataset dataset;
  dataset.name = "mnist";
  dataset.images = torch::randn({10, 1, 28, 28});
  dataset.labels = torch::randint(0, 10, {10}, torch::kInt64);
  for (const Phase phase : {Phase::Infer, Phase::Train}) {
    ExperimentConfig e = tiny_sweep({4}).experiments[0];
    e.phase = phase;
    Workload w(e, torch::Device("cpu"), &dataset);
    w.prepare_batch(4);
    for (int i = 0; i < 7; ++i) {
      w.stage();
      ASSERT_EQ(w.staged_inputs().size(0), 4) << "step " << i;
      w.step();
    }
  }
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

// --force keeps the sweep it replaces, whole, until the new one is complete: a replacement stopped
// half-way loses nothing, and a second --force starts again beside the same kept sweep.
TEST(ForcedSweep, TheReplacedSweepIsKeptUntilTheNewOneIsComplete) {
  const testing_support::TempDir dir;
  SweepOptions options;
  options.out_dir = dir / "records";
  std::ostringstream progress;
  const SweepConfig config = resolve_for_machine(tiny_sweep({1, 2, 3}));
  run_sweep(config, options, progress);
  const fs::path out(options.out_dir);
  const std::string original = testing_support::file_bytes((out / "steps.jsonl").string());
  fs::create_directories(out / "analysis");
  std::ofstream(out / "notes.txt") << "the user's own\n";

  options.force = true;
  const std::optional<std::string> kept = set_aside_replaced_sweep(options.out_dir);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(*kept, (out / ".replaced").string());
  EXPECT_EQ(testing_support::file_bytes(*kept + "/steps.jsonl"), original);
  EXPECT_TRUE(fs::exists(*kept + "/steps.csv"));
  EXPECT_TRUE(fs::is_directory(*kept + "/analysis"));
  EXPECT_FALSE(fs::exists(out / "steps.jsonl"));
  EXPECT_TRUE(fs::exists(out / "notes.txt")) << "not the sweep's: left where it is";

  std::atomic<bool> stop{true};
  options.stop_requested = &stop;
  EXPECT_TRUE(run_sweep(config, options, progress).interrupted);
  EXPECT_TRUE(fs::exists(out / "steps.jsonl"));
  EXPECT_EQ(set_aside_replaced_sweep(options.out_dir), kept);
  EXPECT_EQ(testing_support::file_bytes(*kept + "/steps.jsonl"), original) << "the complete one is kept";
  EXPECT_FALSE(fs::exists(out / "steps.jsonl")) << "the stopped replacement starts again";

  options.stop_requested = nullptr;
  const SweepOutcome replaced = run_sweep(config, options, progress);
  EXPECT_FALSE(replaced.interrupted);
  EXPECT_EQ(count_type(replaced.records, "end"), 1);
  EXPECT_FALSE(fs::exists(*kept)) << "removed once the new sweep is complete";
  EXPECT_TRUE(fs::exists(out / "notes.txt"));

  // A .replaced that outlived a complete replacement (its removal failed) holds the older sweep: the
  // complete one is set aside in its place, never removed.
  const std::string complete = testing_support::file_bytes((out / "steps.jsonl").string());
  fs::create_directories(*kept);
  std::ofstream(*kept + "/steps.jsonl") << "older\n";
  ASSERT_EQ(set_aside_replaced_sweep(options.out_dir), kept);
  EXPECT_EQ(testing_support::file_bytes(*kept + "/steps.jsonl"), complete);

  // Moved back by hand, leaving .replaced empty: the restored sweep is the one kept.
  for (const auto& entry : fs::directory_iterator(*kept))
    fs::rename(entry.path(), out / entry.path().filename());
  ASSERT_TRUE(fs::is_empty(*kept));
  ASSERT_EQ(set_aside_replaced_sweep(options.out_dir), kept);
  EXPECT_EQ(testing_support::file_bytes(*kept + "/steps.jsonl"), complete);
}

// A replacement killed while moving the old sweep aside goes on moving it on the next --force, into the
// same place: the old sweep is never split between two.
TEST(ForcedSweep, AMoveStoppedHalfWayIsFinished) {
  const testing_support::TempDir dir;
  const fs::path out = fs::path(dir / "records");
  fs::create_directories(out / ".replaced.moving");
  std::ofstream(out / ".replaced.moving" / "steps.jsonl") << "moved\n";
  std::ofstream(out / "steps.csv") << "not yet moved\n";
  const std::optional<std::string> kept = set_aside_replaced_sweep(out.string());
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(testing_support::file_bytes(*kept + "/steps.jsonl"), "moved\n");
  EXPECT_EQ(testing_support::file_bytes(*kept + "/steps.csv"), "not yet moved\n");
  EXPECT_FALSE(fs::exists(out / ".replaced.moving"));
  EXPECT_FALSE(fs::exists(out / "steps.csv"));
  // Nothing of a sweep there: nothing set aside.
  const testing_support::TempDir empty;
  fs::create_directories(empty / "records");
  EXPECT_FALSE(set_aside_replaced_sweep(empty / "records").has_value());
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
  // The steps fill most of the second (a loaded machine only lengthens them). How near the limit they
  // stop depends on the machine's pace from block to block; AutoStepsPlan checks that on a steady clock.
  const std::vector<double>& steps = out.steps.at(1);
  EXPECT_GE(std::accumulate(steps.begin(), steps.end(), 0.0), 500.0);
}

namespace {

// Runs next_auto_block's plan on a clock that only the steps move: step i takes step_ms(i), and
// elapsed time is the steps' sum. Returns the steps' times and why they stopped.
std::vector<double> simulate_auto(const AutoSteps& a, const std::function<double(std::size_t)>& step_ms,
                                  std::string& stopped_by, std::vector<int64_t>* blocks = nullptr) {
  std::vector<double> times;
  double elapsed_s = 0;
  int64_t block = 1;
  for (;;) {
    if (blocks != nullptr) blocks->push_back(block);
    for (int64_t i = 0; i < block; ++i) {
      times.push_back(step_ms(times.size()));
      elapsed_s += times.back() / 1000;
    }
    const AutoStepsNext next = next_auto_block(a, limits::kAutoFirstSteps, times, elapsed_s);
    if (!next.stopped_by.empty()) {
      stopped_by = next.stopped_by;
      return times;
    }
    EXPECT_GE(next.block, 1);
    block = next.block;
  }
}

}  // namespace

TEST(AutoStepsPlan, AtASteadyPaceTheTimeLimitIsOverrunByOneStepAtMost) {
  AutoSteps a;
  a.ci_width = 1e-9;  // never reached: alternating times keep the interval wide
  a.max_time_s = 1.0;
  std::string stopped_by;
  std::vector<int64_t> blocks;
  const std::vector<double> times = simulate_auto(
      a, [](std::size_t i) { return i % 2 == 0 ? 9.0 : 11.0; }, stopped_by, &blocks);
  EXPECT_EQ(stopped_by, kStoppedByMaxTime);
  const double timed_ms = std::accumulate(times.begin(), times.end(), 0.0);
  EXPECT_GE(timed_ms, 1000.0);
  EXPECT_LE(timed_ms, 1000.0 + 11.0 + 1e-9);
  // A plan blind to the limit would double the steps once past the first ten (10, 20, 40, 80 ...) and end
  // near 1.6 s; this one halves the time left each block, so the last blocks are single steps.
  EXPECT_EQ(blocks.front(), 1);
  EXPECT_EQ(blocks.back(), 1);
}

TEST(AutoStepsPlan, ANextBlockTakesAtMostHalfTheTimeLeftAtThePaceSoFar) {
  AutoSteps a;
  a.ci_width = 1e-9;
  a.max_time_s = 1.0;
  const std::vector<double> forty(40, 10.0);
  const std::vector<double> jittered = [] {
    std::vector<double> t;
    for (int i = 0; i < 40; ++i) t.push_back(i % 2 == 0 ? 9.0 : 11.0);
    return t;
  }();
  // 40 steps in 0.41 s: half of the 0.59 s left holds 28 steps at that pace (the interval alone wants 40).
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, jittered, 0.41).block, 28);
  // The pace is the wall time per step, overhead between steps included: 40 steps in 0.81 s leave room for 4.
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, jittered, 0.81).block, 4);
  // With less than one step's time left, one more step; at the limit, stop.
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, jittered, 0.999).block, 1);
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, jittered, 1.0).stopped_by, kStoppedByMaxTime);
  // Equal times give a zero-width interval: stopped by the interval, before any time limit is looked at.
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, forty, 2.0).stopped_by, kStoppedByCiWidth);
}

TEST(AutoStepsPlan, TheFirstStepsRunBeforeTheIntervalIsJudgedUnlessTimeRunsOut) {
  AutoSteps a;
  a.ci_width = 0.5;
  a.max_time_s = 60;
  const std::vector<double> one{10.0};
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, one, 0.01).block, limits::kAutoFirstSteps - 1);
  a.max_time_s = 0.055;  // room for 2 of the 9 (half of the 45 ms left, at 10 ms a step)
  EXPECT_EQ(next_auto_block(a, limits::kAutoFirstSteps, one, 0.01).block, 2);
  // min_time keeps a narrow interval timing: 20 steps in 0.2 s with 1 s wanted asks for at most 20 more.
  a.max_time_s = 60;
  a.min_time_s = 1.0;
  const std::vector<double> twenty(20, 10.0);
  const AutoStepsNext next = next_auto_block(a, limits::kAutoFirstSteps, twenty, 0.2);
  EXPECT_TRUE(next.stopped_by.empty());
  EXPECT_EQ(next.block, 20);
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

// The timed steps keep nothing of a step on the device once it has ended: a size's peak memory is the
// same after 5 steps as after 50 (each step's loss, kept as a tensor until the end, once added 4 bytes a
// step on the CPU and 512 on a GPU).
TEST(Workload, ThePeakMemoryOfTimedStepsDoesNotGrowWithTheirCount) {
  cpu_memory::install();
  ExperimentConfig e = tiny_sweep({2}).experiments[0];
  Workload w(e, torch::Device("cpu"));
  w.prepare_batch(2);
  w.warm_up(2);
  HostStepTimer timer;
  const auto peak_after = [&](int steps) {
    cpu_memory::reset_peak();
    const TimedSteps timed = run_timed_steps(w, timer, steps);
    EXPECT_EQ(timed.losses.size(), static_cast<std::size_t>(steps));
    return cpu_memory::peak_bytes();
  };
  const int64_t few = peak_after(5);
  EXPECT_EQ(peak_after(50), few);
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
