#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/analyzer.h"
#include "lib/analysis/report/plots.h"
#include "lib/analysis/report/report_markdown.h"
#include "tests/analysis_test_support.h"

namespace batchscope {
namespace {
namespace fs = std::filesystem;

using analysis_test::report_of;
using analysis_test::terminal_of;

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// GPU B draws half GPU A's power (30 + 10 W per sample against 60 + 20) at the same step times, so it
// does exactly twice the samples per joule, with and without the idle draw. It measures batch sizes
// 10–30 against A's 1–24: their own most efficient sizes differ (10 for B, 8 for A).
analysis_test::FakeLog half_power_log(analysis_test::PowerModel model = {}) {
  model.idle_w = 30;
  model.w_per_sample = 10;
  analysis_test::FakeLog log = analysis_test::energy_log(model, 10, 30);
  log.gpu = "GPU B";
  log.run_id = "run-b";
  return log;
}

class EnergyComparisonTest : public analysis_test::AnalyzeTest {
 protected:
  Analysis two_gpus(const analysis_test::FakeLog& a, const analysis_test::FakeLog& b) {
    return analyze_logs({write("a.jsonl", a.text()), write("b.jsonl", b.text())}, {});
  }
};

TEST_F(EnergyComparisonTest, TwiceTheSamplesPerJouleGivesRatioTwoAtEverySize) {
  const Analysis a = two_gpus(analysis_test::energy_log({}), half_power_log());
  ASSERT_EQ(a.comparisons.size(), 1u);
  ASSERT_EQ(a.comparisons[0].curves.size(), 1u);
  const SpeedupCurve& s = a.comparisons[0].curves[0];
  EXPECT_EQ(s.speedup.size(), 15u);  // the speedup is as it was: common sizes 10–24
  ASSERT_TRUE(s.energy.has_value());
  const EnergyRatioCurve& e = *s.energy;
  ASSERT_EQ(e.points.size(), 15u);
  for (size_t i = 0; i < e.points.size(); ++i) {
    EXPECT_EQ(e.points[i].batch_size, static_cast<int64_t>(10 + i));
    EXPECT_NEAR(e.points[i].ratio, 2.0, 1e-9);
    ASSERT_TRUE(e.points[i].ratio_above_idle.has_value());
    EXPECT_NEAR(*e.points[i].ratio_above_idle, 2.0, 1e-9);
  }
  EXPECT_NEAR(e.median_ratio, 2.0, 1e-9);
  EXPECT_NEAR(e.min_ratio, 2.0, 1e-9);
  EXPECT_NEAR(e.max_ratio, 2.0, 1e-9);
  ASSERT_TRUE(e.best.has_value());
  ASSERT_TRUE(e.baseline_best.has_value());
  EXPECT_EQ(e.best->batch_size, 10);  // 130 W over 15 ms steps: 10 / 1.95 samples/J
  EXPECT_NEAR(e.best->samples_per_j, 10 / 1.95, 1e-9);
  EXPECT_EQ(e.baseline_best->batch_size, 8);
  EXPECT_NEAR(e.baseline_best->samples_per_j, 1 / 0.385, 1e-9);
}

TEST_F(EnergyComparisonTest, RatioThatGrowsWithTheBatchHasItsLowestAndHighestAtTheEnds) {
  analysis_test::PowerModel lean;
  lean.w_per_sample = 10;  // the same idle draw: ratio (60 + 20 b) / (60 + 10 b), rising with b
  analysis_test::FakeLog b = analysis_test::energy_log(lean, 4, 30);
  b.gpu = "GPU B";
  const Analysis a = two_gpus(analysis_test::energy_log({}), b);
  const EnergyRatioCurve& e = *a.comparisons[0].curves[0].energy;
  ASSERT_EQ(e.points.size(), 21u);  // 4–24
  auto ratio = [](double n) { return (60 + 20 * n) / (60 + 10 * n); };
  EXPECT_NEAR(e.min_ratio, ratio(4), 1e-9);
  EXPECT_EQ(e.min_at, 4);
  EXPECT_NEAR(e.max_ratio, ratio(24), 1e-9);
  EXPECT_EQ(e.max_at, 24);
  EXPECT_NEAR(e.median_ratio, ratio(14), 1e-9);
  EXPECT_NEAR(*e.points[0].ratio_above_idle, 2.0, 1e-9);  // above idle: 10 W against 20 W per sample
}

// A ratio across scopes of energy (a GPU board against CPU packages) says so; two GPU boards on other
// buses are the same scope.
TEST_F(EnergyComparisonTest, ARatioAcrossScopesOfEnergySaysSo) {
  EXPECT_TRUE(two_gpus(analysis_test::energy_log({}), half_power_log())
                  .comparisons[0]
                  .curves[0]
                  .energy->scopes_differ.empty());
  analysis_test::PowerModel other_bus;
  other_bus.scope = "GPU 0000:5E:00.0 board";
  EXPECT_TRUE(two_gpus(analysis_test::energy_log({}), half_power_log(other_bus))
                  .comparisons[0]
                  .curves[0]
                  .energy->scopes_differ.empty());
  analysis_test::PowerModel packages;
  packages.scope = "CPU packages package-0, package-1";
  const Analysis a = two_gpus(analysis_test::energy_log({}), half_power_log(packages));
  const EnergyRatioCurve& e = *a.comparisons[0].curves[0].energy;
  EXPECT_EQ(e.scopes_differ, "CPU packages vs GPU board");
  EXPECT_TRUE(mentions(report_of(a), "Not the same scope of energy (CPU packages vs GPU board)"))
      << report_of(a);
  EXPECT_EQ(analysis_to_json(a, {})["comparisons"][0]["curves"][0]["energy"]["scopes_differ"],
            "CPU packages vs GPU board");
}

TEST_F(EnergyComparisonTest, AnalysisJsonCarriesTheRatioBesideTheSpeedup) {
  const Analysis a = two_gpus(analysis_test::energy_log({}), half_power_log());
  const Json j = analysis_to_json(a, {});
  const Json& curve = j["comparisons"][0]["curves"][0];
  for (const char* key : {"group_id", "label", "median_speedup", "min", "max", "points"})
    EXPECT_TRUE(curve.contains(key)) << key;
  EXPECT_TRUE(curve["points"][0].contains("speedup"));
  ASSERT_TRUE(curve.contains("energy"));
  const Json& e = curve["energy"];
  for (const char* key : {"median_ratio", "min", "max", "points", "best", "baseline_best"})
    EXPECT_TRUE(e.contains(key)) << key;
  EXPECT_NEAR(e["median_ratio"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(e["min"]["ratio"].get<double>(), 2.0, 1e-9);
  EXPECT_TRUE(e["min"]["batch_size"].is_number_integer());
  EXPECT_NEAR(e["max"]["ratio"].get<double>(), 2.0, 1e-9);
  ASSERT_EQ(e["points"].size(), 15u);
  EXPECT_EQ(e["points"][0]["batch_size"], 10);
  EXPECT_NEAR(e["points"][0]["ratio"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(e["points"][0]["ratio_above_idle"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(e["best"]["batch_size"], 10);
  EXPECT_NEAR(e["best"]["samples_per_j"].get<double>(), 10 / 1.95, 1e-9);
  EXPECT_EQ(e["baseline_best"]["batch_size"], 8);
  EXPECT_NEAR(e["baseline_best"]["samples_per_j"].get<double>(), 1 / 0.385, 1e-9);

  analysis_test::PowerModel no_idle;
  no_idle.idle_baseline = false;
  const Json without_idle =
      analysis_to_json(two_gpus(analysis_test::energy_log(no_idle), half_power_log()), {});
  const Json& point = without_idle["comparisons"][0]["curves"][0]["energy"]["points"][0];
  EXPECT_NEAR(point["ratio"].get<double>(), 2.0, 1e-9);
  EXPECT_FALSE(point.contains("ratio_above_idle"));
}

TEST_F(EnergyComparisonTest, ReportAndTerminalShowTheRatio) {
  const Analysis a = two_gpus(analysis_test::energy_log({}), half_power_log());
  const std::string report = report_of(a);
  const std::string& base = a.comparisons[0].baseline_label;
  const std::string& label = a.comparisons[0].curves[0].label;
  EXPECT_TRUE(mentions(report, "**Energy efficiency:** samples/J ratio = samples per joule / the baseline's"))
      << report;
  EXPECT_TRUE(mentions(report, "- " + label + " does 2.00× the samples per joule of " + base +
                                   " (median of 15 batch size(s); 2.00× at "))
      << report;
  EXPECT_TRUE(mentions(report, "its most efficient is batch 10 at 5.128 samples/J, " + base +
                                   "'s batch 8 at 2.597 samples/J.\n"))
      << report;
  EXPECT_TRUE(mentions(report, "<details><summary>Samples/J ratio per batch size</summary>"));
  EXPECT_TRUE(mentions(report, "| batch | " + label + " | " + label + " above idle |\n|---:|---:|---:|\n"))
      << report;
  EXPECT_TRUE(mentions(report, "| 10 | 2.00 | 2.00 |\n"));
  EXPECT_TRUE(mentions(report, "| 24 | 2.00 | 2.00 |\n"));
  EXPECT_FALSE(mentions(report, "| 9 | 2.00"));
  // The energy part follows the speedup table of the same comparison.
  EXPECT_LT(report.find("Speedup per batch size"), report.find("**Energy efficiency:**"));

  const std::string terminal = terminal_of(a);
  EXPECT_TRUE(mentions(terminal, ": " + label + " vs " + base + ": median speedup ")) << terminal;
  EXPECT_TRUE(mentions(terminal, ": " + label + " vs " + base + ": median samples/J ratio 2.00x (2.00x at "))
      << terminal;
  EXPECT_TRUE(
      mentions(terminal, "; most efficient batch 10 at 5.128 samples/J vs batch 8 at 2.597 samples/J\n"))
      << terminal;
}

TEST_F(EnergyComparisonTest, OneSideWithoutEnergyGivesNoRatio) {
  analysis_test::FakeLog plain;
  plain.batches = analysis_test::range(1, 24);
  plain.gpu = "GPU B";
  for (const Analysis& a : {two_gpus(analysis_test::energy_log({}), plain), two_gpus(plain, [] {
                              analysis_test::FakeLog b = analysis_test::energy_log({});
                              b.gpu = "GPU C";
                              return b;
                            }())}) {
    ASSERT_EQ(a.comparisons.size(), 1u);
    ASSERT_EQ(a.comparisons[0].curves.size(), 1u);
    EXPECT_FALSE(a.comparisons[0].curves[0].energy.has_value());
    const Json j = analysis_to_json(a, {});
    EXPECT_FALSE(j["comparisons"][0]["curves"][0].contains("energy"));
    EXPECT_TRUE(j["comparisons"][0]["curves"][0].contains("median_speedup"));
    EXPECT_FALSE(mentions(report_of(a), "Energy efficiency"));
    EXPECT_FALSE(mentions(report_of(a), "Samples/J ratio"));
    EXPECT_FALSE(mentions(terminal_of(a), "samples/J ratio"));
  }

  // With a third group that has energy, the one without is named without a ratio.
  const Analysis three = analyze_logs(
      {write("a.jsonl", analysis_test::energy_log({}).text()), write("b.jsonl", half_power_log().text()),
       write("c.jsonl",
             [] {
               analysis_test::FakeLog c;
               c.batches = analysis_test::range(1, 24);
               c.gpu = "GPU C";
               return c.text();
             }())},
      {});
  ASSERT_EQ(three.comparisons[0].curves.size(), 2u);
  EXPECT_TRUE(three.comparisons[0].curves[0].energy.has_value());
  EXPECT_FALSE(three.comparisons[0].curves[1].energy.has_value());
  const std::string report = report_of(three);
  EXPECT_TRUE(mentions(report, "- " + three.comparisons[0].curves[1].label + ": no samples/J ratio"))
      << report;
}

TEST_F(EnergyComparisonTest, LowConfidenceWindowsOnEitherSideAreSkipped) {
  analysis_test::PowerModel coarse;
  coarse.resolution_ms = 12;  // A's windows of 80 + 4 b ms are under 120 ms up to b = 9
  analysis_test::PowerModel short_window;
  short_window.window_ms = {{20, 5.0}};  // B's batch 20 read over 5 updates of 1 ms
  analysis_test::FakeLog a_log = analysis_test::energy_log(coarse, 1, 24);
  analysis_test::FakeLog b_log = half_power_log(short_window);
  b_log.batches = analysis_test::range(1, 24);
  const Analysis a = two_gpus(a_log, b_log);
  const SpeedupCurve& s = a.comparisons[0].curves[0];
  EXPECT_EQ(s.speedup.size(), 24u);  // the speedup keeps every common size
  ASSERT_TRUE(s.energy.has_value());
  std::vector<int64_t> sizes;
  for (const EnergyRatioPoint& p : s.energy->points) sizes.push_back(p.batch_size);
  std::vector<int64_t> expected = analysis_test::range(10, 24);
  expected.erase(std::find(expected.begin(), expected.end(), 20));
  EXPECT_EQ(sizes, expected);
  // A's best is chosen among its trusted sizes only: 10 (600/b + 10 b rises beyond b = 8).
  EXPECT_EQ(s.energy->baseline_best->batch_size, 10);

  analysis_test::PowerModel untrusted;
  untrusted.resolution_ms = 100;  // no window of A is long enough: nothing to compare
  const Analysis none = two_gpus(analysis_test::energy_log(untrusted), half_power_log());
  EXPECT_FALSE(none.comparisons[0].curves[0].energy.has_value());
}

TEST_F(EnergyComparisonTest, RatioPlotIsDrawnAndEmbeddedNextToTheSpeedup) {
  if (!analysis_test::gnuplot_on_path())
    GTEST_FAIL() << "gnuplot is not on PATH; install gnuplot-nox to run the plot tests";
  const Analysis a = two_gpus(analysis_test::energy_log({}), half_power_log());
  const fs::path dir = dir_ / "plots";
  const PlotOutcome plots = write_plots(a, dir.string());
  ASSERT_TRUE(plots.made) << plots.skipped_reason;
  EXPECT_TRUE(plots.warnings.empty()) << plots.warnings.front();
  const std::string stem = a.comparisons[0].id + "_energy";
  const std::set<std::string> files(plots.files.begin(), plots.files.end());
  for (const char* ext : {".png", ".svg"}) {
    EXPECT_TRUE(files.count(stem + ext)) << stem << ext;
    EXPECT_GT(fs::file_size(dir / (stem + ext)), 0u);
  }
  EXPECT_TRUE(fs::exists(dir / (stem + ".dat")));
  std::ifstream script(dir / (stem + ".gp"));
  const std::string gp((std::istreambuf_iterator<char>(script)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(mentions(gp, "samples/J over the baseline")) << gp;
  EXPECT_TRUE(mentions(gp, " above idle'")) << gp;
  EXPECT_TRUE(mentions(gp, "baseline (1×)")) << gp;
  std::ifstream data(dir / (stem + ".dat"));
  const std::string dat((std::istreambuf_iterator<char>(data)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(mentions(dat, "# batch_size ratio ratio_above_idle\n10 2")) << dat;

  const std::string report = report_of(a, plots);
  const size_t speedup = report.find("(plots/" + a.comparisons[0].id + "_speedup.png)");
  const size_t energy =
      report.find("![samples/J ratio vs batch size](plots/" + stem + ".png) ([SVG](plots/" + stem + ".svg))");
  ASSERT_NE(speedup, std::string::npos) << report;
  ASSERT_NE(energy, std::string::npos) << report;
  EXPECT_LT(speedup, energy);
  EXPECT_LT(energy, report.find("Speedup = baseline median step time"));
}

}  // namespace
}  // namespace batchscope
