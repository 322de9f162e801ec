// Repeated passes over the ladder (repeats: R): each pass in its own order, records with their pass,
// resume per pass, and jumps judged against the spread between passes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "lib/analysis/analyzer.h"
#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/analysis/run_comparison.h"
#include "lib/common/statistics.h"
#include "lib/records/jsonl.h"
#include "lib/records/summary_table.h"
#include "lib/sweep/sweep_runner.h"
#include "tests/test_support.h"

using namespace batchscope;

namespace {

ExperimentConfig repeated(int repeats, std::vector<int64_t> batches) {
  ExperimentConfig e;
  e.name = "mnist_repeats";
  e.model = "mnist_cnn";
  e.input_shape = {1, 28, 28};
  e.classes = 10;
  e.batch_sizes = std::move(batches);
  e.warmup_steps = 1;
  e.timed_steps = 2;
  e.device = "cpu";
  e.repeats = repeats;
  return e;
}

// (pass, batch size) of every point record, in log order.
std::vector<std::pair<int64_t, int64_t>> points_of(const std::vector<SweepRecord>& records) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const SweepRecord& r : records) {
    if (const auto* p = std::get_if<PointRecord>(&r)) out.emplace_back(p->key.pass.value_or(0), p->key.batch_size);
  }
  return out;
}

}  // namespace

TEST(Repeats, EachPassRunsEverySizeOnceInAnOrderOfItsOwn) {
  const ExperimentConfig e = repeated(2, {1, 2, 3, 4, 5, 6});
  EXPECT_NE(batch_order(e, 1), batch_order(e, 2));
  EXPECT_EQ(batch_order(e, 2), batch_order(e, 2));
  const testing_support::TempDir dir;
  SweepOptions options;
  options.out_dir = dir / "r";
  options.measure_energy = false;
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(resolve_for_machine(SweepConfig{"test", {e}}), options, progress);
  const auto points = points_of(outcome.records);
  ASSERT_EQ(points.size(), 12u);
  std::vector<int64_t> first, second;
  for (const auto& [pass, batch] : points) (pass == 1 ? first : pass == 2 ? second : first).push_back(batch);
  EXPECT_EQ(first, batch_order(e, 1));
  EXPECT_EQ(second, batch_order(e, 2));
  // Steps carry their pass too, and steps.csv has the column.
  for (const SweepRecord& r : outcome.records) {
    if (const auto* s = std::get_if<StepRecord>(&r)) EXPECT_TRUE(s->key.pass.has_value());
  }
  std::ifstream csv(outcome.csv_path);
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find(",pass,"), std::string::npos);
  // A single pass writes no pass at all.
  options.out_dir = dir / "single";
  const SweepOutcome single = run_sweep(resolve_for_machine(SweepConfig{"test", {repeated(1, {1, 2})}}), options, progress);
  for (const auto& [pass, batch] : points_of(single.records)) EXPECT_EQ(pass, 0);
}

// A sweep killed in its second pass resumes there: every (pass, size) once.
TEST(Repeats, AKilledSweepResumesInItsPass) {
  const ExperimentConfig e = repeated(2, {1, 2, 3, 4});
  const testing_support::TempDir dir;
  SweepOptions options;
  options.out_dir = dir / "r";
  options.measure_energy = false;
  std::ostringstream progress;
  run_sweep(resolve_for_machine(SweepConfig{"test", {e}}), options, progress);
  // Cut the log after the second pass's first size, as a kill would leave it.
  const std::string log = dir / "r/steps.jsonl";
  std::vector<std::string> kept;
  {
    std::ifstream in(log);
    std::string line;
    int second_pass_points = 0;
    while (std::getline(in, line) && second_pass_points < 1) {
      kept.push_back(line);
      const Json j = Json::parse(line);
      if (j.value("type", "") == "point" && j.value("pass", 0) == 2) ++second_pass_points;
    }
  }
  {
    std::ofstream out(log, std::ios::trunc);
    for (const std::string& line : kept) out << line << "\n";
  }
  const SweepOutcome resumed = run_sweep(resolve_for_machine(SweepConfig{"test", {e}}), options, progress);
  EXPECT_TRUE(resumed.resumed);
  const auto points = points_of(resumed.records);
  const std::set<std::pair<int64_t, int64_t>> unique(points.begin(), points.end());
  EXPECT_EQ(points.size(), 8u);
  EXPECT_EQ(unique.size(), 8u);
}

namespace {

// A generated log: per pass and batch size, 8 tight steps (±0.2%) around the level `level(pass, b, position)`,
// where position is the size's place in that pass's shuffled order (for drift over time).
std::string write_log(const testing_support::TempDir& dir, int passes, int64_t last,
                      const std::function<double(int pass, int64_t b, int position)>& level) {
  const std::string path = dir / ("log" + std::to_string(passes) + ".jsonl");
  std::ofstream out(path);
  const Json config = {{"name", "g"}, {"model", "vgg16"}, {"phase", "train"}, {"precision", "fp32"},
                       {"input", {3, 32, 32}}, {"classes", 10}, {"data", "synthetic"}};
  out << Json{{"type", "run"}, {"run_id", "r"}, {"libtorch_version", "1.13"}, {"config", {{"experiments", {config}}}}}.dump()
      << "\n";
  for (int pass = 1; pass <= passes; ++pass) {
    std::vector<int64_t> order;
    for (int64_t b = 1; b <= last; ++b) order.push_back(b);
    std::mt19937_64 rng(static_cast<uint64_t>(pass));
    std::shuffle(order.begin(), order.end(), rng);
    for (int position = 0; position < static_cast<int>(order.size()); ++position) {
      const int64_t b = order[static_cast<std::size_t>(position)];
      BatchKey key{"g", "vgg16", "train", "fp32", "cpu", "", b, std::nullopt};
      if (passes > 1) key.pass = pass;
      const double m = level(pass, b, position);
      for (int i = 0; i < 8; ++i) {
        out << to_json(SweepRecord(StepRecord{key, i, m * (1.0 + 0.002 * ((i % 3) - 1)), std::nullopt, std::nullopt})).dump()
            << "\n";
      }
    }
  }
  out << to_json(SweepRecord(end_record())).dump() << "\n";
  return path;
}

double trend(int64_t b) { return 10.0 + 0.8 * static_cast<double>(b); }

}  // namespace

// Drift: each pass 3% slower than the last, and within a pass 2% slower from its first size to its last,
// in shuffled order. Without a real jump nothing is found.
TEST(RepeatsDetector, DriftBetweenAndWithinPassesIsNoJump) {
  const testing_support::TempDir dir;
  const std::string log = write_log(dir, 3, 64, [](int pass, int64_t b, int position) {
    return trend(b) * (1.0 + 0.03 * (pass - 1)) * (1.0 + 0.02 * position / 64.0);
  });
  const Analysis a = analyze_logs({log}, AnalyzeOptions{});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_TRUE(a.groups[0].jumps.jumps.empty()) << a.groups[0].jumps.jumps.front().from_batch;
  EXPECT_TRUE(a.groups[0].jumps.drops.empty());
  EXPECT_EQ(a.groups[0].points[10].pass_medians.size(), 3u);
  EXPECT_GT(a.groups[0].points[10].between_pass_se_ms.value_or(0), 0);
}

// A +20% jump at 16→17 in every pass is found, in 3 of 3 passes, while the sizes from 40 on scatter by
// several ms from pass to pass; nothing else is reported.
TEST(RepeatsDetector, ARealJumpIsFoundInEveryPassDespiteScatterAtLargeSizes) {
  const testing_support::TempDir dir;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> scatter(0.0, 3.0);
  std::map<std::pair<int, int64_t>, double> noise;
  for (int pass = 1; pass <= 3; ++pass) {
    for (int64_t b = 40; b <= 64; ++b) noise[{pass, b}] = scatter(rng);
  }
  const std::string log = write_log(dir, 3, 64, [&](int pass, int64_t b, int) {
    const double base = trend(b) * (b >= 17 ? 1.2 : 1.0);
    const auto n = noise.find({pass, b});
    return base + (n == noise.end() ? 0.0 : n->second);
  });
  const Analysis a = analyze_logs({log}, AnalyzeOptions{});
  const JumpAnalysis& j = a.groups.at(0).jumps;
  ASSERT_EQ(j.jumps.size(), 1u);
  EXPECT_EQ(j.jumps[0].from_batch, 16);
  EXPECT_EQ(j.jumps[0].to_batch, 17);
  EXPECT_EQ(j.jumps[0].passes, 3);
  EXPECT_EQ(j.jumps[0].passes_with, 3);
  EXPECT_TRUE(j.drops.empty());
}

// Fast sizes count the passes that show them: 24 is 15% faster than the trend in all three passes; 40 is
// 22% faster in two, and in the third by less than half of that, so it shows in 2 of 3.
TEST(RepeatsDetector, FastSizesSayInHowManyPassesTheyShow) {
  const testing_support::TempDir dir;
  const double gain_40 = 1.0 - 0.78 * trend(40) / trend(39);  // the pooled gain, of the size before
  const std::string log = write_log(dir, 3, 64, [&](int pass, int64_t b, int) {
    if (b == 24) return trend(b) * 0.85;
    if (b == 40) return pass < 3 ? trend(b) * 0.78 : trend(39) * (1.0 - 0.45 * gain_40);
    return trend(b);
  });
  const Analysis a = analyze_logs({log}, AnalyzeOptions{});
  const JumpAnalysis& j = a.groups.at(0).jumps;
  ASSERT_EQ(j.fast_sizes.size(), 2u);
  EXPECT_EQ(j.fast_sizes[0].first_batch, 24);
  EXPECT_EQ(j.fast_sizes[0].before_batch, 23);
  EXPECT_EQ(j.fast_sizes[0].after_batch, 25);
  EXPECT_EQ(j.fast_sizes[0].passes, 3);
  EXPECT_EQ(j.fast_sizes[0].passes_with, 3);
  EXPECT_EQ(j.fast_sizes[1].first_batch, 40);
  EXPECT_EQ(j.fast_sizes[1].passes, 3);
  EXPECT_EQ(j.fast_sizes[1].passes_with, 2);
  EXPECT_FALSE(j.fast_sizes[1].doubtful);
  const Json fast = analysis_to_json(a, {})["groups"][0]["jumps"]["fast_sizes"];
  EXPECT_EQ(fast[1]["passes_with"], 2);
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream report;
  write_report(report, a, plots, "plots");
  EXPECT_NE(report.str().find("% less, in 2 of 3 passes)"), std::string::npos) << report.str();
}

// One pass, sizes whose medians wander ±5% around the trend while their own steps are tight: scatter,
// not jumps.
TEST(RepeatsDetector, WanderingMediansInASinglePassAreNoJumps) {
  const testing_support::TempDir dir;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> wander(-0.05, 0.05);
  std::map<int64_t, double> offset;
  for (int64_t b = 1; b <= 64; ++b) offset[b] = wander(rng);
  const std::string log = write_log(dir, 1, 64, [&](int, int64_t b, int) { return trend(b) * (1.0 + offset[b]); });
  const Analysis a = analyze_logs({log}, AnalyzeOptions{});
  EXPECT_TRUE(a.groups.at(0).jumps.jumps.empty()) << a.groups[0].jumps.jumps.size() << " jumps, first at "
                                                  << a.groups[0].jumps.jumps.front().to_batch;
  EXPECT_TRUE(a.groups[0].points[0].pass_medians.empty());
}

TEST(RepeatsConfig, IsReadAndRefusedOutOfRange) {
  const SweepConfig c = parse_sweep_config("model: mnist_cnn\nbatch: 1:2\nrepeats: 3\n", "r.yaml");
  EXPECT_EQ(c.experiments.at(0).repeats, 3);
  EXPECT_EQ(to_json(c.experiments[0])["repeats"], 3);
  EXPECT_TRUE(testing_support::refuses_with(
      [] { parse_sweep_config("model: mnist_cnn\nbatch: 1:2\nrepeats: 0\n", "r.yaml"); },
      {"r.yaml:3", "repeats", "give 1 to 100 passes"}));
}

// The end-of-sweep table gives one row per batch size, pooling its passes' steps.
TEST(Repeats, TheSummaryTablePoolsThePasses) {
  BatchKey key{"e", "mnist_cnn", "train", "fp32", "cpu", "", 4, 1};
  std::vector<SweepRecord> records;
  for (int pass = 1; pass <= 2; ++pass) {
    key.pass = pass;
    std::vector<double> times = pass == 1 ? std::vector<double>{1.0, 1.0, 1.0} : std::vector<double>{3.0, 3.0, 3.0};
    for (double t : times) records.push_back(StepRecord{key, 0, t, std::nullopt, std::nullopt});
    records.push_back(point_record(key, times, 1e9, std::nullopt));
  }
  const std::string table = format_summary_table(records);
  // Six steps, three at 1 ms and three at 3 ms: the pooled median is 2 ms; one row.
  EXPECT_NE(table.find("       4        2.000"), std::string::npos) << table;
  EXPECT_EQ(table.find("3.000        3.000"), std::string::npos) << table;
  EXPECT_EQ(table.find("skipped"), std::string::npos) << table;
  EXPECT_FALSE(summary_json(records).at(0).contains("skipped_steps"));

  // With loss scaling, the row says how many of the pooled steps skipped their optimizer step.
  std::get<PointRecord>(records[3]).skipped_steps = 2;
  std::get<PointRecord>(records[7]).skipped_steps = 1;
  EXPECT_NE(format_summary_table(records).find("  (3 timed step(s) skipped: gradients overflowed)"),
            std::string::npos)
      << format_summary_table(records);
  EXPECT_EQ(summary_json(records).at(0).at("skipped_steps"), 3);
}

// analyze reads a batch size measured in two passes as one: its peak memory the higher pass's, its
// skipped steps and energy windows added up, its host median over all the steps; the sweep's own table
// pools them the same way. (Each of these was once the last pass's alone.)
TEST(RepeatsAnalysis, ABatchSizesPassesCountTogetherBeyondItsStepTimes) {
  const testing_support::TempDir dir;
  std::vector<SweepRecord> records;
  // The log of the two passes, each read by a counter that updates every resolution_ms.
  const auto write_log = [&](const std::string& name, double resolution_ms) {
    const std::string path = dir / name;
    records.clear();
    for (int pass = 1; pass <= 2; ++pass) {
      BatchKey key{"g", "vgg16", "train", "fp16", "cuda:0", "excluded", 8, pass};
      std::vector<double> times;
      for (int i = 0; i < 6; ++i) {
        const double ms = pass == 1 ? 10.0 + 0.01 * i : 12.0 + 0.01 * i;
        times.push_back(ms);
        // Host times: pass 1's at 1 ms, pass 2's at 5 ms; over both the median is 3 ms.
        records.push_back(StepRecord{key, i, ms, 1.0, std::nullopt, pass == 1 ? 1.0 : 5.0});
      }
      PointRecord point = point_record(key, times, 1e9, pass == 1 ? 300 : 100);
      point.host_median_ms = pass == 1 ? 1.0 : 5.0;
      point.skipped_steps = pass;  // 1, then 2
      PointEnergy e;
      e.method = "nvml energy counter";
      e.scope = "GPU board";
      e.resolution_ms = resolution_ms;
      e.joules = pass == 1 ? 10.0 : 30.0;
      e.window_ms = pass == 1 ? 100.0 : 200.0;
      e.steps = 6;
      e.idle_power_w = pass == 1 ? 40.0 : 60.0;
      e.start.sm_clock_mhz = 1980;
      e.end.sm_clock_mhz = pass == 1 ? 1500 : 1950;  // the first pass's window ended throttled
      derive_energy_figures(e, 8);
      point.energy = e;
      records.push_back(point);
    }
    {
      std::ofstream out(path);
      const Json config = {{"name", "g"},         {"model", "vgg16"},     {"phase", "train"},
                           {"precision", "fp16"}, {"input", {3, 32, 32}}, {"classes", 10},
                           {"data", "synthetic"}};
      out << Json{{"type", "run"},
                  {"run_id", "r"},
                  {"libtorch_version", "1.13"},
                  {"config", {{"experiments", {config}}}}}
                 .dump()
          << "\n";
      for (const SweepRecord& r : records) out << to_json(r).dump() << "\n";
      out << to_json(SweepRecord(end_record())).dump() << "\n";
    }
    return path;
  };
  const Analysis a = analyze_logs({write_log("passes.jsonl", 1.0)}, AnalyzeOptions{});
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_EQ(a.groups[0].points.size(), 1u);
  const PointStats& p = a.groups[0].points[0];
  EXPECT_EQ(p.samples, 12);
  EXPECT_EQ(p.peak_memory_bytes, 300);
  EXPECT_EQ(p.skipped_steps, 3);
  EXPECT_DOUBLE_EQ(p.host_median_ms.value_or(0), 3.0);
  ASSERT_TRUE(p.energy.has_value());
  const PointEnergyStats& e = *p.energy;
  EXPECT_DOUBLE_EQ(e.joules.value_or(0), 40.0);
  EXPECT_DOUBLE_EQ(e.window_ms.value_or(0), 300.0);
  EXPECT_EQ(e.steps, 12);
  EXPECT_NEAR(e.j_per_sample.value_or(0), 40.0 / 12 / 8, 1e-12);
  EXPECT_NEAR(e.avg_power_w.value_or(0), 40.0 / 0.3, 1e-9);
  // Idle weighted by window: (40 W x 0.1 s + 60 W x 0.2 s) / 0.3 s; the energy above it is each
  // window's above its own idle, added up: (10 - 4) + (30 - 12) = 24 J.
  EXPECT_NEAR(e.idle_power_w.value_or(0), 16.0 / 0.3, 1e-9);
  EXPECT_NEAR(e.j_per_step_above_idle.value_or(0), 24.0 / 12, 1e-9);
  EXPECT_EQ(e.end.sm_clock_mhz, 1500.0);
  EXPECT_TRUE(e.throttled);
  EXPECT_EQ(e.shortest_window_ms, 100.0);
  EXPECT_FALSE(e.low_confidence);  // 100 ms of a counter that updates every 1 ms

  const Json table = summary_json(records).at(0);
  EXPECT_EQ(table.at("samples"), 12);
  EXPECT_EQ(table.at("skipped_steps"), 3);
  EXPECT_NEAR(table.at("samples_per_j").get<double>(), 12.0 * 8 / 40, 1e-9);

  // A counter that updates every 15 ms: the first pass's window saw under 10 updates (100 < 150 ms), and
  // its edges' rounding is in the sum, though the two windows add up to 300 ms.
  const Analysis coarse = analyze_logs({write_log("coarse.jsonl", 15.0)}, AnalyzeOptions{});
  ASSERT_TRUE(coarse.groups.at(0).points.at(0).energy.has_value());
  EXPECT_TRUE(coarse.groups[0].points[0].energy->low_confidence);
  EXPECT_EQ(coarse.groups[0].energy->low_confidence, std::vector<int64_t>{8});
}

namespace {

// A log of one batch size whose passes' steps lie at the given levels, each pass's steps spread
// +-0.1% around its level; pass 0 writes steps without a pass, as a sweep of one pass does.
LoadedLog passes_at(const std::vector<double>& levels, bool with_pass = true) {
  LoadedLog log;
  BatchKey key{"e", "mnist_cnn", "train", "fp32", "cpu", "", 8, std::nullopt};
  for (std::size_t p = 0; p < levels.size(); ++p) {
    if (with_pass) key.pass = static_cast<int64_t>(p + 1);
    for (double spread : {-0.001, -0.0005, 0.0, 0.0005, 0.001, -0.0002, 0.0002, 0.0}) {
      log.records.push_back(StepRecord{key, 0, levels[p] * (1 + spread), std::nullopt, std::nullopt});
    }
  }
  return log;
}

}  // namespace

// Where each run's steps are tight, a 6% difference is beyond their noise: slower.
TEST(RepeatsCompare, TightStepsMakeANarrowBand) {
  const RunComparison c = compare_runs(passes_at({10.0}), passes_at({10.6}), 0.05);
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_EQ(c.sizes[0].verdict, "slower");
  EXPECT_EQ(c.slower, 1);
  EXPECT_LT(c.sizes[0].noise, 0.01);
  EXPECT_EQ(c.sizes[0].baseline_passes, 1);
}

// Five passes, one of them 20% slower than the rest (what a busy machine does to a pass): the band
// takes the spread of the pass medians, and a 6% difference is within noise, as analyze would judge a
// jump. Pooled without their passes, the same steps are tight around the four quiet passes, and the 6%
// is judged slower.
TEST(RepeatsCompare, DriftBetweenPassesWidensTheBand) {
  const std::vector<double> baseline = {10.0, 10.0, 10.0, 10.0, 12.0}, contender = {10.6, 10.6, 10.6, 10.6, 12.6};
  const RunComparison c = compare_runs(passes_at(baseline), passes_at(contender), 0.05);
  ASSERT_EQ(c.sizes.size(), 1u);
  EXPECT_EQ(c.sizes[0].baseline_passes, 5);
  EXPECT_EQ(c.sizes[0].contender_passes, 5);
  EXPECT_NEAR(c.sizes[0].ratio, 1.06, 1e-9);
  EXPECT_EQ(c.sizes[0].verdict, "within noise") << c.sizes[0].noise;
  EXPECT_EQ(c.slower, 0);
  // 3 standard errors of the ratio from the pass medians' spread: sd/sqrt(5) of each, relative.
  const double rb = stddev(baseline).value() / std::sqrt(5.0) / c.sizes[0].baseline_ms;
  const double ro = stddev(contender).value() / std::sqrt(5.0) / c.sizes[0].contender_ms;
  EXPECT_NEAR(c.sizes[0].noise, 3 * c.sizes[0].ratio * std::sqrt(rb * rb + ro * ro), 1e-6);

  const RunComparison pooled =
      compare_runs(passes_at(baseline, /*with_pass=*/false), passes_at(contender, /*with_pass=*/false), 0.05);
  EXPECT_EQ(pooled.sizes.at(0).baseline_passes, 1);
  EXPECT_EQ(pooled.sizes[0].verdict, "slower") << pooled.sizes[0].noise;
  EXPECT_EQ(pooled.slower, 1);
}

namespace {

// A sweep of 1..40 on the line 10 + 1.5 b with the given sizes at 0.6 of it, each size's steps spread
// +-0.1% around its level.
LoadedLog sawtooth_at(const std::vector<int64_t>& fast) {
  LoadedLog log;
  for (int64_t b = 1; b <= 40; ++b) {
    BatchKey key{"vgg16_train_fp32", "vgg16", "train", "fp32", "cuda:0", "", b, std::nullopt};
    const double line = 10 + 1.5 * static_cast<double>(b);
    const double level = std::find(fast.begin(), fast.end(), b) == fast.end() ? line : 0.6 * line;
    for (double spread : {-0.001, -0.0005, 0.0, 0.0005, 0.001, -0.0002, 0.0002, 0.0}) {
      log.records.push_back(StepRecord{key, 0, level * (1 + spread), std::nullopt, std::nullopt});
    }
  }
  return log;
}

}  // namespace

// Two passes of a sawtooth: which fast sizes hold in both, and which in one run only.
TEST(RepeatsCompare, SaysWhichFastSizesHoldInBothRuns) {
  const RunComparison c = compare_runs(sawtooth_at({8, 16, 26, 32}), sawtooth_at({8, 16, 31, 32, 36}), 0.05);
  ASSERT_EQ(c.fast_sizes.size(), 1u);
  EXPECT_EQ(c.fast_sizes[0].experiment, "vgg16_train_fp32");
  EXPECT_EQ(c.fast_sizes[0].baseline.size(), 4u);
  EXPECT_EQ(c.fast_sizes[0].contender.size(), 4u);  // 31-32 is one run of two sizes
  const std::string text = format_run_comparison(c);
  EXPECT_NE(
      text.find("Fast sizes of vgg16_train_fp32 (faster than the sizes on both sides): in both runs 8, 16, "
                "32 (31–32 in the contender); in the baseline only 26; in the contender only 36.\n"),
      std::string::npos)
      << text;
  // A run without fast sizes against itself says nothing of them.
  EXPECT_TRUE(compare_runs(sawtooth_at({}), sawtooth_at({}), 0.05).fast_sizes.empty());
}
