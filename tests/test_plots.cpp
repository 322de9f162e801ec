#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lib/analysis/report/gnuplot_script.h"
#include "lib/analysis/report/plots.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/common/errors.h"
#include "tests/analysis_test_support.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;

using analysis_test::gnuplot_on_path;

#define REQUIRE_GNUPLOT()                                                                       \
  if (!gnuplot_on_path())                                                                       \
  GTEST_FAIL() << "gnuplot is not on PATH; install gnuplot-nox (scripts/setup.sh does) to run " \
                  "the plot tests"

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Twenty batch sizes, 8..27, whose step time climbs in two steps: 16→17 and 24→25.
GroupAnalysis make_group(const std::string& id, const std::string& label, double scale) {
  GroupAnalysis group;
  group.id = id;
  group.label = label;
  for (int64_t b = 8; b <= 27; ++b) {
    PointStats p;
    p.batch_size = b;
    p.samples = 20;
    p.median_ms = scale * (10 + 0.5 * static_cast<double>(b) + (b > 16 ? 3 : 0) + (b > 24 ? 4 : 0));
    p.p10_ms = p.median_ms * 0.97;
    p.p90_ms = p.median_ms * 1.05;
    p.mean_ms = p.median_ms;
    p.samples_per_s = static_cast<double>(b) / p.median_ms * 1000.0;
    group.points.push_back(p);
  }
  group.points[3].too_few_samples = true;
  group.points[3].samples = 2;
  group.flagged = {group.points[3].batch_size};
  group.trend = Trend{10 * scale, 0.6 * scale, 19};
  Jump first;
  first.from_batch = 16;
  first.to_batch = 17;
  first.delta_pct = 12.3;
  Jump second;
  second.from_batch = 24;
  second.to_batch = 25;
  second.delta_pct = 14.0;
  group.jumps.jumps = {first, second};
  const PointStats* best = &group.points.front();
  for (const auto& p : group.points) {
    if (p.samples_per_s > best->samples_per_s) best = &p;
  }
  group.fastest = BatchChoice{best->batch_size, best->median_ms, best->samples_per_s};
  return group;
}

Analysis make_analysis() {
  Analysis analysis;
  analysis.groups.push_back(make_group("vgg16_fp32", "vgg16 train fp32 · CPU", 1.0));
  analysis.groups.push_back(make_group("vgg16_bf16", "vgg16 train bf16 · CPU", 0.5));
  Comparison comparison;
  comparison.id = "vgg16_train";
  comparison.workload = "vgg16 train 3x224x224";
  comparison.baseline_id = "vgg16_fp32";
  comparison.baseline_label = "vgg16 train fp32 · CPU";
  SpeedupCurve curve;
  curve.group_id = "vgg16_bf16";
  curve.label = "vgg16 train bf16 · CPU";
  for (const auto& p : analysis.groups[0].points)
    curve.speedup.emplace_back(p.batch_size, 1.5 + 0.02 * static_cast<double>(p.batch_size));
  comparison.curves.push_back(curve);
  analysis.comparisons.push_back(comparison);
  return analysis;
}

std::set<std::string> images_in(const fs::path& dir) {
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string ext = entry.path().extension().string();
    if (ext == ".png" || ext == ".svg") found.insert(entry.path().filename().string());
  }
  return found;
}

class PlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A space in the directory name checks that paths reach gnuplot whole.
    std::string pattern = (fs::temp_directory_path() / "batchscope plots XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void write_program(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
    fs::permissions(path, fs::perms::owner_all);
  }
  fs::path dir_;
};

TEST_F(PlotsTest, DrawsEveryPlotAsPngAndSvg) {
  REQUIRE_GNUPLOT();
  fs::path out = dir_ / "plots";
  PlotOutcome outcome = write_plots(make_analysis(), out.string());
  ASSERT_TRUE(outcome.made) << outcome.skipped_reason;
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();

  std::set<std::string> expected;
  for (std::string stem : {"vgg16_fp32_time", "vgg16_fp32_throughput", "vgg16_bf16_time",
                           "vgg16_bf16_throughput", "vgg16_train_speedup", "throughput_all"}) {
    expected.insert(stem + ".png");
    expected.insert(stem + ".svg");
  }
  EXPECT_EQ(std::set<std::string>(outcome.files.begin(), outcome.files.end()), expected);
  EXPECT_EQ(images_in(out), expected);
  for (const auto& file : expected) {
    std::string content = read_all(out / file);
    if (fs::path(file).extension() == ".png") {
      EXPECT_EQ(content.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << file;
    } else {
      EXPECT_NE(content.find("<svg"), std::string::npos) << file;
    }
  }
  std::string script = read_all(out / "vgg16_fp32_time.gp");
  EXPECT_NE(script.find("16→17 +12.3%"), std::string::npos) << script;
  EXPECT_NE(script.find("24→25 +14.0%"), std::string::npos) << script;
  EXPECT_NE(script.find("too few samples"), std::string::npos);
  EXPECT_NE(script.find("trend"), std::string::npos);
  EXPECT_NE(
      read_all(out / "vgg16_train_speedup.gp").find("Speedup over vgg16 train fp32 · CPU — vgg16 train"),
      std::string::npos);
  EXPECT_NE(read_all(out / "vgg16_fp32_time.dat").find("\n11 15.5 15.035 16.275 1 2 0\n"), std::string::npos);
  // The whole sizes' points alone; no micro-batched series where no size ran in micro-batches.
  EXPECT_NE(script.find("$5 == 0 && $7 == 0"), std::string::npos);
  EXPECT_EQ(script.find("in micro-batches"), std::string::npos);
}

TEST_F(PlotsTest, AGroupReadAgainstPeaksGetsItsRateUnderThem) {
  REQUIRE_GNUPLOT();
  Analysis analysis = make_analysis();
  GroupAnalysis& read = analysis.groups[0];
  for (PointStats& p : read.points) p.tflops = 0.02 * static_cast<double>(p.batch_size);
  read.peak = GroupPeak{27,
                        0.54,
                        {{"matmul", "fp32", "", "", 0.8, "peak.jsonl:1", 0.675},
                         {"conv", "fp32", "channels_last", "train", 0.6, "peak.jsonl:2", 0.9}}};
  const fs::path out = dir_ / "plots";
  const PlotOutcome outcome = write_plots(analysis, out.string());
  ASSERT_TRUE(outcome.made) << outcome.skipped_reason;
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  const std::set<std::string> files(outcome.files.begin(), outcome.files.end());
  EXPECT_EQ(files.count("vgg16_fp32_rate.png"), 1u);
  EXPECT_EQ(files.count("vgg16_fp32_rate.svg"), 1u);
  EXPECT_EQ(files.count("vgg16_bf16_rate.png"), 0u);  // no peak: no rate plot
  const std::string script = read_all(out / "vgg16_fp32_rate.gp");
  EXPECT_NE(script.find("0.8 with lines dt 4"), std::string::npos) << script;
  EXPECT_NE(script.find("'fp32 matrix product peak, 0.8 TFLOP/s'"), std::string::npos) << script;
  EXPECT_NE(script.find("'fp32 convolution peak, 0.6 TFLOP/s'"), std::string::npos) << script;
  // The size with too few samples is marked apart, as in the other plots.
  EXPECT_NE(read_all(out / "vgg16_fp32_rate.dat").find("\n11 0.22 1\n"), std::string::npos);
  std::ostringstream report;
  write_report(report, analysis, outcome, "plots");
  EXPECT_NE(
      report.str().find("![TFLOP/s vs batch size against the measured peaks](plots/vgg16_fp32_rate.png)"),
      std::string::npos);
}

TEST_F(PlotsTest, AGroupGivenANoiseScaleGetsItsTimeToAnAccuracy) {
  REQUIRE_GNUPLOT();
  Analysis analysis = make_analysis();
  GroupAnalysis& given = analysis.groups[0];
  std::vector<std::pair<int64_t, double>> medians;
  for (const PointStats& p : given.points) medians.emplace_back(p.batch_size, p.median_ms);
  given.time_to_accuracy = time_to_accuracy(medians, GivenNoiseScale{4, "--noise-scale"});
  const fs::path out = dir_ / "plots";
  const PlotOutcome outcome = write_plots(analysis, out.string());
  ASSERT_TRUE(outcome.made) << outcome.skipped_reason;
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  const std::set<std::string> files(outcome.files.begin(), outcome.files.end());
  EXPECT_EQ(files.count("vgg16_fp32_time_to_accuracy.png"), 1u);
  EXPECT_EQ(files.count("vgg16_fp32_time_to_accuracy.svg"), 1u);
  EXPECT_EQ(files.count("vgg16_bf16_time_to_accuracy.png"), 0u);  // no noise scale: no plot
  // Each size's time against the least and its steps against the fewest, 1 + 4 / B.
  const std::string data = read_all(out / "vgg16_fp32_time_to_accuracy.dat");
  const PointTimeToAccuracy& first = given.time_to_accuracy->points.front();
  EXPECT_NE(data.find(std::to_string(first.batch_size) + " " + gp_number(first.relative_time) + " " +
                      gp_number(1 + 4.0 / static_cast<double>(first.batch_size)) + "\n"),
            std::string::npos)
      << data;
  const std::string script = read_all(out / "vgg16_fp32_time_to_accuracy.gp");
  EXPECT_NE(script.find("'least: " + std::to_string(given.time_to_accuracy->best->batch_size) + "'"),
            std::string::npos)
      << script;
  std::ostringstream report;
  write_report(report, analysis, outcome, "plots");
  EXPECT_NE(report.str().find("![time to an accuracy vs batch size](plots/vgg16_fp32_time_to_accuracy.png)"),
            std::string::npos);
}

// A label's side: the middle of a log axis (1..60000) is its geometric one, 245, not 30000, so a label
// at 1000 or 32768 is set to the left of its point and stays inside the plot.
TEST(PlotLabels, TheRightHalfOfALogAxisStartsAtItsGeometricMiddle) {
  EXPECT_TRUE(in_right_half(1, 60000, 32768));
  EXPECT_TRUE(in_right_half(1, 60000, 1000));
  EXPECT_FALSE(in_right_half(1, 60000, 64));
  EXPECT_TRUE(in_right_half(1, 70, 40));  // a linear axis: its arithmetic middle, 35.5
  EXPECT_FALSE(in_right_half(1, 70, 30));
}

// Without gnuplot, an earlier analysis's plots in the directory go all the same: none of them belongs
// to this report.
TEST_F(PlotsTest, AnAnalysisThatDrawsNothingLeavesNoEarlierPlot) {
  const fs::path out = dir_ / "plots";
  fs::create_directories(out);
  std::ofstream(out / "old_time.png") << "png";
  std::ofstream(out / "old_time.gp") << "plot";
  std::ofstream(out / "notes.txt") << "mine";
  const PlotOutcome outcome = write_plots(make_analysis(), out.string(), PlotOptions{"/nonexistent/gnuplot"});
  EXPECT_FALSE(outcome.made);
  EXPECT_EQ(outcome.removed, (std::vector<std::string>{"old_time.gp", "old_time.png"}));
  EXPECT_TRUE(fs::exists(out / "notes.txt"));  // not a plot: left alone
}

TEST_F(PlotsTest, MissingGnuplotSkipsWithAReason) {
  PlotOutcome outcome = write_plots(make_analysis(), dir_.string(), PlotOptions{"/nonexistent/gnuplot"});
  EXPECT_FALSE(outcome.made);
  EXPECT_FALSE(outcome.skipped_reason.empty());
  EXPECT_TRUE(outcome.files.empty());
  EXPECT_TRUE(images_in(dir_).empty());

  outcome = write_plots(make_analysis(), dir_.string(), PlotOptions{"batchscope-no-such-gnuplot"});
  EXPECT_FALSE(outcome.made);
  EXPECT_NE(outcome.skipped_reason.find("not found on PATH"), std::string::npos) << outcome.skipped_reason;
  EXPECT_TRUE(images_in(dir_).empty());
}

TEST_F(PlotsTest, ProgramThatCannotBeExecutedSkipsWithAReason) {
  fs::path fake = dir_ / "not a program";
  write_program(fake, "neither a binary nor a script with #!\n");
  PlotOutcome outcome = write_plots(make_analysis(), (dir_ / "out").string(), PlotOptions{fake.string()});
  EXPECT_FALSE(outcome.made);
  EXPECT_NE(outcome.skipped_reason.find("could not be run"), std::string::npos) << outcome.skipped_reason;
  EXPECT_TRUE(outcome.files.empty());
  EXPECT_TRUE(images_in(dir_ / "out").empty());
}

TEST_F(PlotsTest, FailingGnuplotRunIsAWarningWithItsErrors) {
  fs::path fake = dir_ / "failing gnuplot";
  write_program(fake, "#!/bin/sh\necho \"line 3: invalid command\" >&2\nexit 1\n");
  PlotOutcome outcome = write_plots(make_analysis(), (dir_ / "out").string(), PlotOptions{fake.string()});
  EXPECT_TRUE(outcome.made);
  EXPECT_TRUE(outcome.files.empty());
  ASSERT_FALSE(outcome.warnings.empty());
  EXPECT_NE(outcome.warnings.front().find("line 3: invalid command"), std::string::npos)
      << outcome.warnings.front();
}

TEST_F(PlotsTest, AwkwardLabelsStillPlot) {
  REQUIRE_GNUPLOT();
  Analysis analysis;
  analysis.groups.push_back(
      make_group("odd_group", "it's \"quoted\" a_b@c^d&e {x} back\\slash ~{tilde} 100%\nnext line", 1.0));
  analysis.groups.push_back(make_group("plain", "plain", 2.0));
  PlotOutcome outcome = write_plots(analysis, dir_.string());
  ASSERT_TRUE(outcome.made) << outcome.skipped_reason;
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  EXPECT_EQ(outcome.files.size(), 10u);
  for (std::string file :
       {"odd_group_time.png", "odd_group_time.svg", "odd_group_throughput.png", "throughput_all.svg"}) {
    EXPECT_GT(fs::file_size(dir_ / file), 0u) << file;
  }
  EXPECT_NE(read_all(dir_ / "odd_group_time.svg").find("a_b@c^d&amp;e"), std::string::npos);
}

TEST_F(PlotsTest, GroupWithoutPointsIsSkipped) {
  REQUIRE_GNUPLOT();
  Analysis analysis;
  analysis.groups.push_back(make_group("measured", "measured", 1.0));
  GroupAnalysis empty;
  empty.id = "empty";
  empty.label = "nothing fit in memory";
  analysis.groups.push_back(empty);
  PlotOutcome outcome = write_plots(analysis, dir_.string());
  ASSERT_TRUE(outcome.made) << outcome.skipped_reason;
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  EXPECT_EQ(images_in(dir_), (std::set<std::string>{"measured_time.png", "measured_time.svg",
                                                    "measured_throughput.png", "measured_throughput.svg"}));

  Analysis nothing;
  nothing.groups.push_back(empty);
  outcome = write_plots(nothing, (dir_ / "none").string());
  EXPECT_FALSE(outcome.made);
  EXPECT_FALSE(outcome.skipped_reason.empty());
}

TEST_F(PlotsTest, DirectoryThatCannotBeCreatedIsAUserError) {
  fs::path file = dir_ / "a file";
  std::ofstream(file) << "x";
  try {
    write_plots(make_analysis(), (file / "plots").string());
    FAIL() << "expected a UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot be created"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace batchscope
