#include <gtest/gtest.h>

#include <set>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/analyzer.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/common/errors.h"
#include "tests/analysis_test_support.h"

namespace batchscope {
namespace {
namespace fs = std::filesystem;

using analysis_test::AnalyzeTest;
using analysis_test::contains;
using analysis_test::FakeLog;
using analysis_test::range;
using analysis_test::report_of;
using analysis_test::user_error_of;

TEST_F(AnalyzeTest, StaircaseLogGivesJumpsPeriodAndBestSizes) {
  FakeLog log;
  log.batches = range(1, 70);
  log.level = [](int64_t b) {
    return 20.0 + 0.2 * static_cast<double>(b) + 4.0 * static_cast<double>((b - 1) / 16);
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_EQ(g.points.size(), 70u);
  ASSERT_EQ(g.jumps.jumps.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(g.jumps.jumps[i].from_batch, 16 * static_cast<int64_t>(i + 1));
    EXPECT_EQ(g.jumps.jumps[i].to_batch, 16 * static_cast<int64_t>(i + 1) + 1);
    EXPECT_NEAR(g.jumps.jumps[i].delta_ms, 4.0, 0.3);
  }
  ASSERT_TRUE(g.periodicity.best.has_value());
  EXPECT_EQ(g.periodicity.best->k, 16);
  EXPECT_TRUE(g.periodicity.periodic);
  ASSERT_EQ(g.before_jumps.size(), 4u);
  EXPECT_EQ(g.before_jumps[0].batch_size, 16);
  ASSERT_TRUE(g.fastest.has_value());
  EXPECT_EQ(g.fastest->batch_size, 64);  // just before the last jump: the sawtooth's best tooth
  EXPECT_EQ(g.largest_fitting, 70);
  ASSERT_TRUE(g.trend.has_value());
  EXPECT_GT(g.trend->slope_ms_per_sample, 0.2);
  ASSERT_TRUE(g.points[0].tflops.has_value());
  EXPECT_NEAR(*g.points[0].tflops, 1e9 / (g.points[0].median_ms / 1e3) / 1e12, 1e-12);
}

// A sweep with chunk: auto past what fits: the sizes above 48 ran in two micro-batches each, so their
// step holds two passes of half the batch and starts 12 ms above the last whole one. That rise is where
// accumulation starts, not a jump of the batch's shapes: the jumps, the periodicity and the trend read the
// whole sizes only, while the best batch size counts every size, as the throughput a user gets.
TEST_F(AnalyzeTest, SizesInMicroBatchesAreLeftOutOfTheJumpsAndTheTrend) {
  FakeLog log;
  log.batches = range(1, 70);
  log.level = [](int64_t b) {
    const double whole = 20.0 + 0.2 * static_cast<double>(b) + 4.0 * static_cast<double>((b - 1) / 16);
    return b <= 48 ? whole : 40.0 + 0.2 * static_cast<double>(b);
  };
  log.point_fields = [](int64_t b) {
    if (b <= 48) return Json::object();
    Json f = {{"chunk", (b + 1) / 2},
              {"chunk_largest_fitting", 48},
              {"chunk_tries", b == 49 ? 6 : 0},
              {"chunk_search_s", b == 49 ? 1.5 : 0.0}};
    if (b > 49) f["chunk_bound_from_batch"] = 49;
    return f;
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_EQ(g.points.size(), 70u);
  ASSERT_EQ(g.jumps.jumps.size(), 2u);
  EXPECT_EQ(g.jumps.jumps[0].from_batch, 16);
  EXPECT_EQ(g.jumps.jumps[1].from_batch, 32);
  ASSERT_TRUE(g.periodicity.best.has_value());
  EXPECT_EQ(g.periodicity.best->k, 16);
  ASSERT_TRUE(g.trend.has_value());
  EXPECT_EQ(g.trend->points, 48);
  ASSERT_EQ(g.accumulated.size(), 22u);
  EXPECT_EQ(g.accumulated.front(), 49);
  EXPECT_EQ(g.largest_whole, 48);
  // 70 in two micro-batches: 70 / 54 ms beats 48 whole: 48 / 37.6 ms.
  ASSERT_TRUE(g.fastest.has_value());
  EXPECT_EQ(g.fastest->batch_size, 70);
  EXPECT_EQ(g.largest_fitting, 70);
  std::ostringstream report;
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  write_report(report, a, plots, "plots");
  EXPECT_NE(report.str().find("the trend, the jumps and the periodicity read the whole sizes only"),
            std::string::npos)
      << report.str();
  EXPECT_EQ(report.str().find("| 48→49 |"), std::string::npos) << report.str();
}

// A run record's GPU entry damaged by hand: an SM count no GPU has predicts nothing (a count of 0 once
// divided by zero), and an index that is not a number names no GPU (it once threw a JSON type error).
TEST_F(AnalyzeTest, ADamagedGpuEntryPredictsNothingAndTheAnalysisGoesOn) {
  FakeLog log;
  log.gpu = "GPU A";
  log.batches = range(1, 40);
  const auto analysed_with = [&](const Json& entry) {
    std::string text = log.text();
    const std::size_t end = text.find('\n');
    Json run = Json::parse(text.substr(0, end));
    run["gpus"] = Json::array({entry});
    return analyze_logs({write("steps.jsonl", run.dump() + text.substr(end))}, {});
  };
  const Analysis good = analysed_with({{"index", 0}, {"name", "GPU A"}, {"sm_count", 132}});
  ASSERT_EQ(good.groups.size(), 1u);
  EXPECT_EQ(good.groups[0].no_prediction.find("no SM count"), std::string::npos)
      << good.groups[0].no_prediction;
  for (const Json& sms : {Json(0), Json(-4)}) {
    const Analysis a = analysed_with({{"index", 0}, {"name", "GPU A"}, {"sm_count", sms}});
    ASSERT_EQ(a.groups.size(), 1u);
    EXPECT_NE(a.groups[0].no_prediction.find("no SM count"), std::string::npos) << sms;
    EXPECT_EQ(a.groups[0].points.size(), 40u);
  }
  for (const Json& index : {Json("x"), Json(), Json::array(), Json::object()}) {
    const Analysis a = analysed_with({{"index", index}, {"name", "GPU A"}, {"sm_count", 132}});
    ASSERT_EQ(a.groups.size(), 1u);
    EXPECT_NE(a.groups[0].no_prediction.find("no SM count"), std::string::npos) << index;
  }
}

TEST_F(AnalyzeTest, StraightLineHasNoJumps) {
  FakeLog log;
  log.batches = range(1, 70);
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_TRUE(a.groups[0].jumps.jumps.empty());
  EXPECT_FALSE(a.groups[0].periodicity.periodic);
  EXPECT_NEAR(a.groups[0].trend->slope_ms_per_sample, 0.5, 0.01);
  EXPECT_NEAR(a.groups[0].trend->intercept_ms, 10.0, 0.2);
  // samples/s = b / (10 + 0.5 b) ms grows to 70 / 45 at b = 70; 90% of that is first reached at b = 47.
  ASSERT_TRUE(a.groups[0].saturation.has_value());
  EXPECT_EQ(a.groups[0].saturation->batch_size, 47);
}

// A sawtooth: sizes past the first that reaches 90% of the fastest fall below it again, and the report
// names them instead of saying that larger batches gain little more.
TEST_F(AnalyzeTest, SizesBelowNinetyPercentAfterTheFirstAreNamed) {
  FakeLog log;
  log.batches = range(1, 40);
  // 1 ms a sample, with every size past 16 but 24 and 32..34 twice as slow.
  log.level = [](int64_t b) {
    const bool slow = b > 16 && b != 24 && (b < 32 || b > 34);
    return static_cast<double>(b) * (slow ? 2.0 : 1.0);
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_TRUE(a.groups[0].saturation.has_value());
  EXPECT_EQ(a.groups[0].saturation->batch_size, 1);
  std::ostringstream report;
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  write_report(report, a, plots, "plots");
  EXPECT_NE(report.str().find("- 90% of the highest throughput first at batch 1 ("), std::string::npos);
  EXPECT_NE(
      report.str().find(" samples/s); larger sizes below 90% again: 17\u201323, 25\u201331, 35\u201340\n"),
      std::string::npos)
      << report.str();
}

TEST_F(AnalyzeTest, SplitSweepIsMergedIntoOneGroup) {
  FakeLog first, second;
  first.batches = range(1, 30);
  second.batches = range(31, 60);
  second.run_id = "run-b";
  second.end = false;
  const Analysis a = analyze_logs({write("a.jsonl", first.text()), write("b.jsonl", second.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].points.size(), 60u);
  EXPECT_EQ(a.groups[0].logs.size(), 2u);
  EXPECT_EQ(a.groups[0].run_ids, (std::vector<std::string>{"run-a", "run-b"}));
  EXPECT_TRUE(a.comparisons.empty());
}

TEST_F(AnalyzeTest, BatchSizeMeasuredTwiceIsRefusedUnlessSeparate) {
  FakeLog first, second;
  first.batches = range(1, 30);
  second.batches = range(25, 40);
  const std::string a = write("a.jsonl", first.text());
  const std::string b = write("b.jsonl", second.text());
  const std::string message = user_error_of([&] { analyze_logs({a, b}, {}); });
  EXPECT_NE(message.find("batch size 25"), std::string::npos) << message;
  EXPECT_NE(message.find("--separate"), std::string::npos) << message;
  AnalyzeOptions separate;
  separate.grouping.separate = true;
  const Analysis both = analyze_logs({a, b}, separate);
  EXPECT_EQ(both.groups.size(), 2u);
  ASSERT_EQ(both.comparisons.size(), 1u);
  EXPECT_EQ(both.comparisons[0].curves[0].speedup.size(), 6u);  // 25..30 in common
}

TEST_F(AnalyzeTest, PartsOfOneSweepOnDifferentGpusAreRefused) {
  FakeLog first, second;
  first.batches = range(1, 30);
  second.batches = range(31, 60);
  second.gpu = "GPU B";
  const std::string message = user_error_of([&] {
    analyze_logs({write("a.jsonl", first.text()), write("b.jsonl", second.text())}, {});
  });
  EXPECT_NE(message.find("GPU A vs GPU B"), std::string::npos) << message;
  // The file and the line of its run record, where the machine it names is read.
  EXPECT_NE(message.find("b.jsonl:1:"), std::string::npos) << message;
}

TEST_F(AnalyzeTest, TwoGpusAreComparedPerBatchSize) {
  FakeLog slow, fast;
  slow.batches = fast.batches = range(1, 20);
  fast.gpu = "GPU B";
  fast.level = [](int64_t b) { return (10.0 + 0.5 * static_cast<double>(b)) / 2.5; };
  const Analysis a = analyze_logs({write("a.jsonl", slow.text()), write("b.jsonl", fast.text())}, {});
  ASSERT_EQ(a.groups.size(), 2u);
  ASSERT_EQ(a.comparisons.size(), 1u);
  const Comparison& c = a.comparisons[0];
  EXPECT_EQ(c.baseline_id, a.groups[0].id);
  EXPECT_EQ(c.baseline_label, "GPU A");
  ASSERT_EQ(c.curves.size(), 1u);
  EXPECT_EQ(c.curves[0].label, "GPU B");
  ASSERT_EQ(c.curves[0].speedup.size(), 20u);
  for (const auto& [batch, speedup] : c.curves[0].speedup) EXPECT_NEAR(speedup, 2.5, 1e-9) << batch;
  EXPECT_NEAR(c.curves[0].median_speedup, 2.5, 1e-9);
  EXPECT_NE(a.groups[0].label, a.groups[1].label);
}

TEST_F(AnalyzeTest, SettingsThatDifferNameTheGroupsAndTheCurves) {
  FakeLog off, on, bf16;
  off.batches = on.batches = bf16.batches = range(1, 10);
  on.cudnn_benchmark = true;
  on.experiment = "vgg16_bench";
  bf16.precision = "bf16";
  bf16.experiment = "vgg16_bf16";
  const Analysis a = analyze_logs(
      {write("off.jsonl", off.text()), write("on.jsonl", on.text()), write("bf16.jsonl", bf16.text())}, {});
  ASSERT_EQ(a.groups.size(), 3u);
  EXPECT_NE(a.groups[1].label.find("cudnn_benchmark on"), std::string::npos) << a.groups[1].label;
  ASSERT_EQ(a.comparisons.size(), 1u);
  ASSERT_EQ(a.comparisons[0].curves.size(), 2u);
  EXPECT_NE(a.comparisons[0].curves[0].label.find("cudnn_benchmark on"), std::string::npos);
  EXPECT_NE(a.comparisons[0].curves[1].label.find("bf16"), std::string::npos);
}

TEST_F(AnalyzeTest, DamagedLogIsAnalysedWithWarnings) {
  FakeLog log;
  log.batches = range(1, 12);
  log.end = false;
  std::string text = log.text();
  const size_t third_line = text.find('\n', text.find('\n') + 1) + 1;
  text.insert(third_line, "this is not json\n{\"type\":\"mystery\",\"x\":1}\n");
  text += R"({"type":"step","experiment":"vgg16_train_fp32","model":"vgg16","ba)";
  const std::string path = write("steps.jsonl", text);
  const Analysis a = analyze_logs({path}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].points.size(), 12u);
  EXPECT_TRUE(contains(a.warnings, path + ":3: line(s) 3 are not batchscope records")) << a.warnings.front();
  EXPECT_TRUE(contains(a.warnings, path + ":4: record type \"mystery\""));
  EXPECT_TRUE(contains(a.warnings, "the last line is unfinished"));
  ASSERT_EQ(a.logs.size(), 1u);
  EXPECT_TRUE(a.logs[0].truncated_tail);
  EXPECT_FALSE(a.logs[0].complete);
}

// A sweep killed while writing a batch size leaves its steps without the point after them: that size is
// left out, with a warning, rather than analysed from part of its steps.
TEST_F(AnalyzeTest, StepsCutOffBeforeTheirPointAreLeftOut) {
  FakeLog log;
  log.batches = range(1, 13);
  log.end = false;
  std::istringstream lines(log.text());
  std::vector<std::string> kept;
  for (std::string line; std::getline(lines, line);) kept.push_back(line);
  const auto last_point = std::find_if(kept.rbegin(), kept.rend(), [](const std::string& line) {
    return line.find("\"type\":\"point\"") != std::string::npos;
  });
  ASSERT_NE(last_point, kept.rend());
  ASSERT_NE(last_point->find("\"batch_size\":13"), std::string::npos) << *last_point;
  kept.erase(std::next(last_point).base());
  std::string text;
  for (const std::string& line : kept) text += line + "\n";
  const std::string path = write("steps.jsonl", text);
  const Analysis a = analyze_logs({path}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].points.size(), 12u);
  EXPECT_EQ(a.groups[0].points.back().batch_size, 12);
  EXPECT_TRUE(contains(a.warnings, "batch size 13 of experiment"))
      << (a.warnings.empty() ? "" : a.warnings.front());
  EXPECT_TRUE(contains(a.warnings, "have no point record after them"));
}

// Logs written before a resumed sweep cut such steps hold them before the next session's run record,
// then the size measured again: the cut-off steps are left out, and only the second attempt's count.
TEST_F(AnalyzeTest, StepsCutOffBeforeAResumedSessionAreLeftOut) {
  FakeLog log;
  log.batches = range(1, 13);
  std::istringstream lines(log.text());
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  const auto last_point = std::find_if(all.begin(), all.end(), [](const std::string& line) {
    return line.find("\"type\":\"point\"") != std::string::npos &&
           line.find("\"batch_size\":13") != std::string::npos;
  });
  ASSERT_NE(last_point, all.end());
  auto first_step = last_point;
  while (first_step != all.begin() && std::prev(first_step)->find("\"type\":\"step\"") != std::string::npos)
    --first_step;
  std::string text;
  for (auto it = all.begin(); it != last_point; ++it) text += *it + "\n";  // 13's steps, no point
  text += all.front() + "\n";                                              // a second session
  for (auto it = first_step; it != all.end(); ++it) text += *it + "\n";    // 13 again, whole
  const Analysis a = analyze_logs({write("steps.jsonl", text)}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_EQ(a.groups[0].points.size(), 13u);
  EXPECT_EQ(a.groups[0].points.back().samples, static_cast<int>(last_point - first_step));
  EXPECT_TRUE(contains(a.warnings, "before the next session began"));
}

TEST_F(AnalyzeTest, ASingleBatchSizeIsNamedAlone) {
  FakeLog log;
  log.batches = {8};
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const std::string report = report_of(a);
  EXPECT_NE(report.find("Batch size 8 alone from 1 log."), std::string::npos) << report;
  EXPECT_EQ(report.find("Batch sizes 8–8"), std::string::npos) << report;
}

TEST_F(AnalyzeTest, MissingLogBesideAGoodOneIsAWarning) {
  FakeLog log;
  log.batches = range(1, 5);
  const Analysis a = analyze_logs({write("steps.jsonl", log.text()), (dir_ / "absent.jsonl").string()}, {});
  EXPECT_EQ(a.groups.size(), 1u);
  EXPECT_TRUE(contains(a.warnings, "absent.jsonl: does not exist"));
}

TEST_F(AnalyzeTest, NothingToAnalyseIsAUserError) {
  EXPECT_NE(
      user_error_of([&] { analyze_logs({(dir_ / "absent.jsonl").string()}, {}); }).find("does not exist"),
      std::string::npos);
  EXPECT_NE(user_error_of([&] { analyze_logs({dir_.string()}, {}); }).find("steps.jsonl: is missing"),
            std::string::npos);
  EXPECT_NE(
      user_error_of([&] { analyze_logs({write("x.csv", "a,b\n1,2\n")}, {}); }).find("no batchscope records"),
      std::string::npos);
  FakeLog oom;
  oom.batches = range(1, 4);
  oom.oom_from = 1;
  const std::string message = user_error_of([&] { analyze_logs({write("oom.jsonl", oom.text())}, {}); });
  EXPECT_NE(message.find("only out-of-memory records: even batch size 1"), std::string::npos) << message;
}

TEST_F(AnalyzeTest, OutOfMemoryAndTooFewSamplesAreReported) {
  FakeLog log;
  log.batches = range(1, 10);
  log.oom_from = 8;
  const std::string text = log.text();
  const Analysis a = analyze_logs({write("steps.jsonl", text)}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].largest_fitting, 7);
  EXPECT_EQ(a.groups[0].first_oom, 8);
  EXPECT_EQ(a.groups[0].skipped, (std::vector<int64_t>{9, 10}));

  AnalyzeOptions strict;
  strict.min_samples = 9;  // the fake log times 8 steps per size
  const Analysis flagged = analyze_logs({write("steps2.jsonl", text)}, strict);
  EXPECT_EQ(flagged.groups[0].flagged.size(), 7u);
  EXPECT_FALSE(flagged.groups[0].fastest.has_value());
  EXPECT_FALSE(flagged.groups[0].trend.has_value());
  EXPECT_TRUE(contains(flagged.warnings, "fewer than 9 timed steps"));
}

TEST_F(AnalyzeTest, ReportNamesJumpsPeriodAndWarnings) {
  FakeLog log;
  log.batches = range(1, 40);
  log.level = [](int64_t b) {
    return 20.0 + 0.2 * static_cast<double>(b) + (b > 16 ? 5.0 : 0.0) + (b > 32 ? 5.0 : 0.0);
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  std::ostringstream report, terminal;
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  write_report(report, a, plots, "plots");
  write_terminal_summary(terminal, a);
  EXPECT_NE(report.str().find("| 16→17 |"), std::string::npos) << report.str();
  EXPECT_NE(report.str().find("| 32→33 |"), std::string::npos);
  EXPECT_NE(report.str().find("Plots were skipped: none wanted"), std::string::npos);
  EXPECT_NE(report.str().find("**Periodicity:** " + a.groups[0].periodicity.verdict), std::string::npos);
  // The best of the 18 k tried (2..19; 20 has one multiple, 20 itself, in 1..40): (2/39)² for k = 16
  // alone, 18 times that for the best of them.
  EXPECT_EQ(a.groups[0].periodicity.periods_tried, 18);
  EXPECT_NE(
      report.str().find("| 16 (best fit) | 2 of 2 | 2 of 2 | 0.0026 (0.047 for the best of 18 k) | 1.0 |"),
      std::string::npos)
      << report.str();
  EXPECT_NE(terminal.str().find("16→17"), std::string::npos) << terminal.str();
  EXPECT_NE(
      report.str().find("**Multiples of 16:** the pattern holds: 2 of 2 jumps fall on a multiple of 16, and "
                        "2 of the 2 steps between measured sizes across a multiple of 16 have one; the step "
                        "after each multiple of 16 "
                        "rises more than the others (mean percentile 99 of 39 steps, p = 0.0013)."),
      std::string::npos)
      << report.str();
  // The rank test's rows: the steps after 8 and 24 are typical steps, equal but for rounding.
  EXPECT_NE(report.str().find("| 8 | 8→9 +0%, 16→17 +22%, 24→25 +0%, 32→33 +16% |"), std::string::npos)
      << report.str();
  EXPECT_NE(terminal.str().find("after multiples of 16: the step after each multiple of 16 rises more"),
            std::string::npos)
      << terminal.str();
}

TEST_F(AnalyzeTest, Tf32SetOffIsAGroupOfItsOwnBesideLibTorchsDefault) {
  FakeLog plain, ieee;
  plain.batches = ieee.batches = range(1, 10);
  ieee.tf32_setting = "off";
  ieee.experiment = "vgg16_fp32_ieee";
  const Analysis a = analyze_logs({write("plain.jsonl", plain.text()), write("ieee.jsonl", ieee.text())}, {});
  ASSERT_EQ(a.groups.size(), 2u);
  std::set<std::string> labels;
  for (const GroupAnalysis& g : a.groups) labels.insert(g.label);
  EXPECT_TRUE(labels.count("vgg16 train fp32 · GPU A · tf32 default")) << *labels.begin();
  EXPECT_TRUE(labels.count("vgg16 train fp32 · GPU A · tf32 off")) << *labels.rbegin();
}

// A report of one sweep names no setting in its heading (nothing tells its groups apart), and its run
// record holds LibTorch's defaults (convolutions in TF32): so the group says what its experiment changed,
// or an IEEE fp32 sweep would read as TF32.
TEST_F(AnalyzeTest, AGroupSaysTheSettingsItsExperimentChangedEvenAlone) {
  FakeLog log;
  log.batches = range(1, 8);
  log.tf32 = {{"cudnn_convolutions", true}, {"cublas_matmul", false}};
  log.tf32_setting = "off";
  log.cudnn_benchmark = true;
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream changed, plain;
  const Analysis a = analyze_logs({write("ieee.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].label, "vgg16 train fp32 · GPU A");
  write_report(changed, a, plots, "plots");
  EXPECT_NE(
      changed.str().find("**Settings:** TF32 off (convolutions and matrix products in IEEE fp32); cuDNN "
                         "benchmark mode (algorithms timed per shape).\n"),
      std::string::npos)
      << changed.str();
  log.tf32_setting.clear();
  log.cudnn_benchmark = false;
  write_report(plain, analyze_logs({write("default.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_EQ(plain.str().find("**Settings:**"), std::string::npos) << plain.str();
  // A training chunk is gradient accumulation, which the step time includes.
  std::ostringstream chunked;
  log.chunk = 4;
  write_report(chunked, analyze_logs({write("chunked.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_NE(
      chunked.str().find("**Settings:** gradient accumulation over micro-batches of 4 samples (chunk), one "
                         "optimizer step.\n"),
      std::string::npos)
      << chunked.str();
}

TEST_F(AnalyzeTest, ACudnnWorkspaceCapIsAGroupOfItsOwnAndTheReportSaysSo) {
  FakeLog capped;
  capped.batches = range(1, 8);
  capped.cuda_library = {{"CUDNN_CONV_WSCAP_DBG", "64"}};
  FakeLog uncapped = capped;
  uncapped.cuda_library = nullptr;
  uncapped.run_id = "run-uncapped";
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  const Analysis a =
      analyze_logs({write("capped.jsonl", capped.text()), write("uncapped.jsonl", uncapped.text())}, {});
  // Not merged as one sweep: the cap changes which kernels ran.
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_NE(a.groups[0].label.find("cudnn_workspace_cap 64 MiB"), std::string::npos) << a.groups[0].label;
  std::ostringstream report;
  write_report(report, a, plots, "plots");
  EXPECT_NE(report.str().find("cuDNN's workspace capped at 64 MiB (CUDNN_CONV_WSCAP_DBG)"), std::string::npos)
      << report.str();
  EXPECT_NE(report.str().find("  - cuDNN and cuBLAS set by the environment: `CUDNN_CONV_WSCAP_DBG=64`\n"),
            std::string::npos)
      << report.str();
}

TEST_F(AnalyzeTest, ReportNamesTheCudaAllocatorSettingsOfTheRun) {
  FakeLog log;
  log.batches = range(1, 8);
  log.cuda_allocator = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream set, unset;
  write_report(set, analyze_logs({write("expandable.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_NE(set.str().find("  - CUDA caching allocator set by the environment: "
                           "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`\n"),
            std::string::npos)
      << set.str();
  log.cuda_allocator = nullptr;
  write_report(unset, analyze_logs({write("default.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_EQ(unset.str().find("caching allocator"), std::string::npos) << unset.str();
}

// fp16 training with loss scaling is not the same steps as without: a group of its own. Where the scale
// was still falling, some timed steps skipped their optimizer step; the analysis names those sizes.
TEST_F(AnalyzeTest, LossScaledTrainingIsAGroupOfItsOwnAndItsSkippedStepsAreNamed) {
  FakeLog plain, scaled;
  plain.batches = scaled.batches = range(1, 10);
  plain.precision = scaled.precision = "fp16";
  plain.experiment = "vgg16_unscaled";
  scaled.experiment = "vgg16_scaled";
  scaled.loss_scale = "dynamic";
  scaled.point_fields = [](int64_t b) {
    return Json{{"skipped_steps", b <= 2 ? 3 : 0}, {"loss_scale", b <= 2 ? 16384.0 : 65536.0}};
  };
  const Analysis a =
      analyze_logs({write("plain.jsonl", plain.text()), write("scaled.jsonl", scaled.text())}, {});
  ASSERT_EQ(a.groups.size(), 2u);
  const GroupAnalysis* with = nullptr;
  const GroupAnalysis* without = nullptr;
  for (const GroupAnalysis& g : a.groups) (g.identity.contains("loss_scale") ? with : without) = &g;
  ASSERT_TRUE(with != nullptr && without != nullptr);
  EXPECT_EQ(with->label, "vgg16 train fp16 · GPU A · loss_scale dynamic");
  EXPECT_EQ(without->label, "vgg16 train fp16 · GPU A · loss_scale off");
  EXPECT_EQ(with->overflowed, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(without->overflowed.empty());
  EXPECT_EQ(with->points.at(0).skipped_steps, std::optional<int64_t>(3));
  EXPECT_EQ(with->points.at(5).skipped_steps, std::optional<int64_t>(0));
  EXPECT_FALSE(without->points.at(0).skipped_steps.has_value());

  bool warned = false;
  for (const std::string& w : a.warnings) {
    warned =
        warned || (w.find(with->label) == 0 && w.find("skipped the optimizer's step") != std::string::npos &&
                   w.find("read low: 1, 2;") != std::string::npos);
  }
  EXPECT_TRUE(warned) << ::testing::PrintToString(a.warnings);

  const Json j = analysis_to_json(a, {});
  for (const Json& g : j.at("groups")) {
    const bool scaled_group = g.at("identity").contains("loss_scale");
    EXPECT_EQ(g.at("best").at("overflowed"), scaled_group ? Json({1, 2}) : Json::array());
    EXPECT_EQ(g.at("points").at(0).contains("skipped_steps"), scaled_group);
  }
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream report;
  write_report(report, a, plots, "plots");
  EXPECT_NE(report.str().find("loss scaling skipped the optimizer's step of some timed steps (a gradient "
                              "overflowed): 1, 2"),
            std::string::npos)
      << report.str();
}

// Loss-scaled sweeps whose scalers start elsewhere are groups of their own, told apart by the settings
// that are not GradScaler's. A record with GradScaler's settings is the same group as one from before they
// were recorded (a sweep resumed across the change).
TEST_F(AnalyzeTest, LossScalerSettingsSetGroupsApartWhereTheyAreNotGradScalers) {
  const Json gradscaler = {
      {"init_scale", 65536.0}, {"growth_factor", 2.0}, {"backoff_factor", 0.5}, {"growth_interval", 2000}};
  FakeLog before, defaults, small;
  before.batches = range(1, 4);
  defaults.batches = range(5, 8);
  small.batches = range(1, 8);
  before.precision = defaults.precision = small.precision = "fp16";
  before.loss_scale = defaults.loss_scale = small.loss_scale = "dynamic";
  before.experiment = defaults.experiment = "vgg16_scaled";
  small.experiment = "vgg16_small_scale";
  defaults.loss_scaler = gradscaler;
  small.loss_scaler = gradscaler;
  small.loss_scaler["init_scale"] = 1024.0;
  small.loss_scaler["growth_interval"] = 100;
  const Analysis a =
      analyze_logs({write("before.jsonl", before.text()), write("defaults.jsonl", defaults.text()),
                    write("small.jsonl", small.text())},
                   {});
  ASSERT_EQ(a.groups.size(), 2u);
  const GroupAnalysis* given = nullptr;
  const GroupAnalysis* merged = nullptr;
  for (const GroupAnalysis& g : a.groups) (g.identity.contains("loss_scaler") ? given : merged) = &g;
  ASSERT_TRUE(given != nullptr && merged != nullptr);
  EXPECT_EQ(merged->points.size(), 8u) << "the record without settings and the one with GradScaler's";
  EXPECT_EQ(given->label, "vgg16 train fp16 · GPU A · loss scaler init_scale 1024, growth_interval 100");
  EXPECT_EQ(merged->label, "vgg16 train fp16 · GPU A · loss scaler GradScaler's defaults");

  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream report;
  write_report(report, analyze_logs({write("small_only.jsonl", small.text())}, {}), plots, "plots");
  EXPECT_NE(report.str().find("loss scaling dynamic (init_scale 1024, growth_interval 100)"),
            std::string::npos)
      << report.str();
}

// The same sweep with the multi-tensor optimizer step and with LibTorch's loop: two groups, told apart
// by the optimizer in words.
TEST_F(AnalyzeTest, TheOptimizersStepSetsGroupsApartAndIsNamedInWords) {
  FakeLog loop, multi;
  loop.batches = multi.batches = range(1, 8);
  multi.foreach = true;
  multi.experiment = "vgg16_foreach";
  const Analysis a = analyze_logs({write("loop.jsonl", loop.text()), write("multi.jsonl", multi.text())}, {});
  ASSERT_EQ(a.groups.size(), 2u);
  std::set<std::string> labels;
  for (const GroupAnalysis& g : a.groups) labels.insert(g.label);
  EXPECT_EQ(labels, (std::set<std::string>{"vgg16 train fp32 · GPU A · optimizer sgd lr 0.01",
                                           "vgg16 train fp32 · GPU A · optimizer sgd lr 0.01 foreach"}))
      << *labels.begin() << " | " << *labels.rbegin();
  // A log whose foreach is not a boolean (written by hand) is analysed; only a true makes the word.
  std::string text = multi.text();
  const std::string flag = "\"foreach\":true";
  ASSERT_NE(text.find(flag), std::string::npos) << text;
  text.replace(text.find(flag), flag.size(), "\"foreach\":\"yes\"");
  const Analysis odd = analyze_logs({write("odd.jsonl", text)}, {});
  ASSERT_EQ(odd.groups.size(), 1u);
  EXPECT_EQ(odd.groups[0].label.find("foreach"), std::string::npos) << odd.groups[0].label;
}

TEST_F(AnalyzeTest, ReportSaysWhetherFp32RanInTf32) {
  // On the GPU, LibTorch's default lets cuDNN's fp32 convolutions run in TF32: the report says so.
  FakeLog log;
  log.batches = range(1, 8);
  log.tf32 = {{"cudnn_convolutions", true}, {"cublas_matmul", false}};
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream with, without;
  write_report(with, analyze_logs({write("tf32.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_NE(with.str().find("fp32 convolutions in TF32 and matrix products in fp32"), std::string::npos)
      << with.str();
  log.tf32 = nullptr;
  write_report(without, analyze_logs({write("cpu_only.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_EQ(without.str().find("TF32"), std::string::npos) << without.str();
}

TEST_F(AnalyzeTest, ReportSaysWhereOneDnnWasDisabled) {
  // A run whose LibTorch links a oneDNN known to crash ran its CPU convolutions without it: slower, and
  // the report says so; an enabled oneDNN (or a record without the field) is not worth a word.
  FakeLog log;
  log.gpu = "cpu";
  log.batches = range(1, 8);
  log.onednn = {{"version", "3.7.2"}, {"enabled", false}};
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  std::ostringstream disabled, enabled, unknown;
  write_report(disabled, analyze_logs({write("off.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_NE(disabled.str().find("oneDNN 3.7.2 disabled"), std::string::npos) << disabled.str();
  log.onednn = {{"version", "2.6.3"}, {"enabled", true}};
  write_report(enabled, analyze_logs({write("on.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_EQ(enabled.str().find("oneDNN"), std::string::npos) << enabled.str();
  log.onednn = nullptr;
  write_report(unknown, analyze_logs({write("none.jsonl", log.text())}, {}), plots, "plots");
  EXPECT_EQ(unknown.str().find("oneDNN"), std::string::npos) << unknown.str();
}

TEST(Significant, KeepsDigitsWithoutExponents) {
  EXPECT_EQ(significant(12.3456), "12.35");
  EXPECT_EQ(significant(0.012345), "0.01235");
  EXPECT_EQ(significant(123456.7), "123457");
  EXPECT_EQ(significant(0), "0");
}

// Every number of analysis.json for a fixed log, against a reviewed copy: jump 16→17 of 3 ms in
// 1..24, made by tests/data/analysis/make_log.py (see its command in golden_command.txt).
void expect_same(const Json& got, const Json& want, const std::string& where) {
  if (want.is_number() && got.is_number()) {
    const double w = want.get<double>(), g = got.get<double>();
    EXPECT_NEAR(g, w, 1e-9 * std::max(1.0, std::fabs(w))) << where;
    return;
  }
  ASSERT_EQ(got.type(), want.type()) << where << ": " << got.dump() << " vs " << want.dump();
  if (want.is_object()) {
    ASSERT_EQ(got.size(), want.size()) << where << ": keys differ: " << got.dump().substr(0, 300);
    for (auto it = want.begin(); it != want.end(); ++it) {
      ASSERT_TRUE(got.contains(it.key())) << where << "." << it.key();
      expect_same(got[it.key()], it.value(), where + "." + it.key());
    }
  } else if (want.is_array()) {
    ASSERT_EQ(got.size(), want.size()) << where;
    for (size_t i = 0; i < want.size(); ++i)
      expect_same(got[i], want[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(got, want) << where;
  }
}

TEST(GoldenAnalysis, FixedLogGivesTheReviewedAnalysisJson) {
  const std::string data = std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/data/analysis/";
  const fs::path cwd = fs::current_path();
  fs::current_path(data);  // the log's path appears in analysis.json as given
  const Analysis a = analyze_logs({"golden_steps.jsonl"}, {});
  fs::current_path(cwd);
  const Json got = analysis_to_json(a, {});
  std::ifstream in(data + "golden_analysis.json");
  ASSERT_TRUE(in) << "missing " << data << "golden_analysis.json";
  const Json want = Json::parse(in);
  expect_same(got, want, "analysis");
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_EQ(a.groups[0].jumps.jumps.size(), 1u);
  EXPECT_EQ(a.groups[0].jumps.jumps[0].from_batch, 16);
}

// A GPU step whose issuing takes nearly all of it leaves the device waiting: flagged. The same host
// times on the CPU, where the issuing thread is the work, flag nothing.
TEST_F(AnalyzeTest, GpuSizesWhoseHostTimeNearsTheStepAreLaunchBound) {
  FakeLog log;
  log.batches = range(1, 12);
  log.level = [](int64_t b) { return 2.0 + 0.5 * static_cast<double>(b); };
  // Issuing costs 2.3 ms whatever the batch: above 90% of the step up to batch 1, below from batch 2.
  log.host = [](int64_t, double) { return 2.3; };
  const Analysis gpu = analyze_logs({write("gpu.jsonl", log.text())}, {});
  ASSERT_EQ(gpu.groups.size(), 1u);
  EXPECT_EQ(gpu.groups[0].launch_bound, (std::vector<int64_t>{1}));
  EXPECT_TRUE(gpu.groups[0].points[0].launch_bound);
  EXPECT_FALSE(gpu.groups[0].points[1].launch_bound);
  ASSERT_TRUE(gpu.groups[0].points[1].host_median_ms.has_value());
  EXPECT_DOUBLE_EQ(*gpu.groups[0].points[1].host_median_ms, 2.3);

  log.host = [](int64_t, double level) { return 0.95 * level; };
  const Analysis all = analyze_logs({write("gpu_all.jsonl", log.text())}, {});
  EXPECT_EQ(all.groups[0].launch_bound, range(1, 12));
  // A loss-scaled step waits for the GPU in its middle (the overflow check): its host time holds that
  // wait, so it says nothing of the issuing and flags nothing.
  log.loss_scale = "dynamic";
  log.precision = "fp16";
  const Analysis scaled = analyze_logs({write("gpu_scaled.jsonl", log.text())}, {});
  ASSERT_EQ(scaled.groups.size(), 1u);
  EXPECT_TRUE(scaled.groups[0].launch_bound.empty());
  EXPECT_FALSE(scaled.groups[0].points[0].launch_bound);
  log.loss_scale.clear();
  log.precision = "fp32";

  log.gpu = "cpu";
  const Analysis cpu = analyze_logs({write("cpu.jsonl", log.text())}, {});
  ASSERT_EQ(cpu.groups.size(), 1u);
  EXPECT_TRUE(cpu.groups[0].launch_bound.empty());
  // Logs from before host times were recorded: nothing flagged, nothing made up.
  log.gpu = "GPU A";
  log.host = nullptr;
  const Analysis old = analyze_logs({write("old.jsonl", log.text())}, {});
  EXPECT_TRUE(old.groups[0].launch_bound.empty());
  EXPECT_FALSE(old.groups[0].points[0].host_median_ms.has_value());
}

// A sawtooth's fast sizes reach the report and analysis.json with the step times around them.
TEST_F(AnalyzeTest, ReportNamesTheFastSizesOfASawtooth) {
  FakeLog log;
  log.batches = range(1, 40);
  log.level = [](int64_t b) {
    const double line = 10.0 + 1.5 * static_cast<double>(b);
    return b == 16 || b == 32 ? 0.6 * line : line;
  };
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  const Analysis a = analyze_logs({write("sawtooth.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  std::ostringstream report;
  write_report(report, a, plots, "plots");
  // The fake log's medians are 0.999 of its level.
  EXPECT_NE(
      report.str().find("sizes to prefer over their neighbours): 16 (20.38 ms against 32.47 and 35.46 ms, "
                        "37% less), 32 (34.77 ms against 56.44 and 59.44 ms, 38% less).\n"),
      std::string::npos)
      << report.str();
  const Json fast = analysis_to_json(a, {})["groups"][0]["jumps"]["fast_sizes"];
  ASSERT_EQ(fast.size(), 2u);
  EXPECT_EQ(fast[1]["first"], 32);
  EXPECT_EQ(fast[1]["last"], 32);
  EXPECT_NEAR(fast[1]["before_ms"].get<double>(), 0.999 * (10 + 1.5 * 31), 1e-9);
}

}  // namespace
}  // namespace batchscope
