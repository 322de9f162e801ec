#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/analyzer.h"
#include "lib/analysis/energy.h"
#include "lib/analysis/report/plots.h"
#include "lib/analysis/report/report_markdown.h"
#include "tests/analysis_test_support.h"

namespace batchscope {
namespace {
namespace fs = std::filesystem;
using analysis_test::AnalyzeTest;
using analysis_test::contains;
using analysis_test::energy_log;
using analysis_test::FakeLog;
using analysis_test::gnuplot_on_path;
using analysis_test::PowerModel;
using analysis_test::range;
using analysis_test::report_of;
using analysis_test::terminal_of;

// The point record's energy fields, then what the analysis adds to them.
// clang-format off
const char* const kPointEnergyKeys[] = {
    "energy_method", "energy_scope", "energy_resolution_ms", "energy_window_ms", "energy_steps", "energy_j",
    "avg_power_w", "j_per_step", "j_per_sample", "samples_per_j", "idle_power_w", "avg_power_above_idle_w",
    "j_per_step_above_idle", "j_per_sample_above_idle", "samples_per_j_above_idle",
    "start_sm_clock_mhz", "end_sm_clock_mhz", "start_memory_clock_mhz", "end_memory_clock_mhz",
    "start_temperature_c", "end_temperature_c", "start_utilization_pct", "end_utilization_pct",
    "start_power_w", "end_power_w",
    "energy_low_confidence", "throttled"};
// clang-format on

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class EnergyAnalysisTest : public AnalyzeTest {};

TEST_F(EnergyAnalysisTest, MostEfficientIsTheBatchSizeWithMostSamplesPerJoule) {
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(PowerModel{}).text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_TRUE(g.energy.has_value());
  EXPECT_EQ(g.energy->points, 24);
  EXPECT_EQ(g.energy->methods, std::vector<std::string>{"nvml energy counter"});
  EXPECT_EQ(g.energy->scopes, std::vector<std::string>{"GPU 0000:3B:00.0 board"});
  EXPECT_EQ(g.energy->resolution_ms, 1.0);
  EXPECT_TRUE(g.energy->low_confidence.empty());
  EXPECT_TRUE(g.energy->throttled.empty());
  ASSERT_TRUE(g.energy->most_efficient.has_value());
  const EnergyChoice& best = *g.energy->most_efficient;
  EXPECT_EQ(best.batch_size, 8);
  EXPECT_NEAR(best.samples_per_j, 1 / 0.385, 1e-9);
  EXPECT_NEAR(*best.j_per_sample, 0.385, 1e-12);
  EXPECT_NEAR(*best.avg_power_w, 220, 1e-12);
  EXPECT_EQ(best.samples_per_s, g.points[7].samples_per_s);
  // The fastest size is another one: throughput keeps rising with the batch size.
  ASSERT_TRUE(g.fastest.has_value());
  EXPECT_EQ(g.fastest->batch_size, 24);

  const PointEnergyStats& e = *g.points[7].energy;
  EXPECT_EQ(e.steps, 8);
  EXPECT_NEAR(*e.window_ms, 8 * 14.0, 1e-9);
  EXPECT_NEAR(*e.joules, 220 * 0.112, 1e-9);
  EXPECT_EQ(e.start.sm_clock_mhz, 1980.0);
  EXPECT_EQ(e.end.temperature_c, 45.0);
  EXPECT_FALSE(e.start.utilization_pct.has_value());
  EXPECT_EQ(e.end.utilization_pct, 100.0);
  EXPECT_TRUE(a.warnings.empty()) << a.warnings.front();
}

TEST_F(EnergyAnalysisTest, IdleCorrectedNumbersHaveTheirOwnBest) {
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(PowerModel{}).text())}, {});
  const GroupAnalysis& g = a.groups[0];
  EXPECT_TRUE(g.energy->idle_baseline);
  const PointEnergyStats& e = *g.points[9].energy;  // batch 10: 260 W, 15 ms steps
  EXPECT_EQ(e.idle_power_w, 60.0);
  EXPECT_NEAR(*e.avg_power_above_idle_w, 200, 1e-12);
  EXPECT_NEAR(*e.j_per_step_above_idle, 200 * 0.015, 1e-12);
  EXPECT_NEAR(*e.j_per_sample_above_idle, 0.3, 1e-12);
  EXPECT_NEAR(*e.samples_per_j_above_idle, 1 / 0.3, 1e-9);
  ASSERT_TRUE(g.energy->most_efficient_above_idle.has_value());
  EXPECT_EQ(g.energy->most_efficient_above_idle->batch_size, 1);
  EXPECT_NEAR(g.energy->most_efficient_above_idle->samples_per_j, 1 / 0.21, 1e-9);
  EXPECT_NEAR(*g.energy->most_efficient_above_idle->avg_power_w, 20, 1e-12);
}

// A draw above idle within what the idle baseline drifts (below 2% of it) makes samples/J above idle a
// quotient of noise: such a size is not chosen the most efficient above idle.
TEST_F(EnergyAnalysisTest, ADrawAboveIdleWithinItsNoiseIsNotChosenTheMostEfficient) {
  PowerModel model;
  model.w_per_sample = 0.5;  // 60.5 W at batch 1 (0.8% above idle), 61 W at 2, 61.5 W (2.5%) at 3
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(model).text())}, {});
  const GroupAnalysis& g = a.groups[0];
  ASSERT_TRUE(g.energy->most_efficient_above_idle.has_value());
  EXPECT_EQ(g.energy->most_efficient_above_idle->batch_size, 3);
  EXPECT_GT(*g.points[0].energy->samples_per_j_above_idle, g.energy->most_efficient_above_idle->samples_per_j)
      << "batch 1 reads higher, and is not chosen";
}

TEST_F(EnergyAnalysisTest, WindowsTooShortToTrustAreShownButNotChosen) {
  PowerModel model;
  model.resolution_ms = 12;         // 10 updates need 120 ms
  model.window_ms = {{10, 100.0}};  // and the best of the rest read over too short a window
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(model).text())}, {});
  const GroupAnalysis& g = a.groups[0];
  // Batch b's window is 8 (10 + 0.5 b) ms = 80 + 4 b ms: under 120 ms up to b = 9.
  EXPECT_EQ(g.energy->low_confidence, range(1, 10));
  EXPECT_TRUE(g.points[7].energy->low_confidence);
  EXPECT_FALSE(g.points[10].energy->low_confidence);
  ASSERT_TRUE(g.energy->most_efficient.has_value());
  EXPECT_EQ(g.energy->most_efficient->batch_size, 11);  // 600/b + 10 b rises beyond b = 8
  EXPECT_EQ(g.energy->most_efficient_above_idle->batch_size, 11);
  EXPECT_TRUE(contains(a.warnings, "was read over less than 10 updates")) << a.warnings.front();

  const std::string report = report_of(a);
  EXPECT_TRUE(has(report,
                  "**Low-confidence windows:** batch size(s) 1–10 were read over less than 10 updates of the "
                  "source (120 ms)"))
      << report;
  EXPECT_TRUE(has(report, "low confidence: 100 ms window, not used")) << report;

  model.window_ms.clear();
  model.resolution_ms = 100;  // no window is long enough: nothing to choose
  const Analysis none = analyze_logs({write("short.jsonl", energy_log(model).text())}, {});
  EXPECT_FALSE(none.groups[0].energy->most_efficient.has_value());
  const Json j = analysis_to_json(none, {});
  EXPECT_TRUE(j["groups"][0]["best"]["most_efficient"].is_null());
  EXPECT_TRUE(has(report_of(none), "- most energy-efficient: none"));
  EXPECT_TRUE(has(terminal_of(none), "most efficient: unknown"));
}

// The golden log (tests/data/analysis/golden_command.txt) models power = 60 + 240 b / (b + 8) W over
// step times with a 3 ms jump after 16, 10 ms counter updates and the SM clock falling from 23 on.
TEST(GoldenEnergy, FixedLogGivesTheModelsBestSizeAndNotes) {
  const Analysis a =
      analyze_logs({std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/data/analysis/golden_steps.jsonl"}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_TRUE(a.groups[0].energy.has_value());
  const GroupEnergy& e = *a.groups[0].energy;
  EXPECT_EQ(e.most_efficient->batch_size, 16);  // the largest size before the jump
  EXPECT_EQ(e.most_efficient_above_idle->batch_size, 16);
  EXPECT_EQ(e.low_confidence, range(1, 4));  // 8 steps of 10 + 0.5 b ms < 100 ms
  ASSERT_EQ(e.throttled.size(), 2u);
  EXPECT_EQ(e.throttled[0].batch_size, 23);
  EXPECT_EQ(e.throttled[1].batch_size, 24);
}

TEST(DescribeSizes, RunsOfNeighbouringMeasuredSizesAreShortened) {
  GroupAnalysis g;
  for (int64_t b : {1, 2, 3, 4, 8, 12, 16, 20, 21}) {
    g.points.emplace_back();
    g.points.back().batch_size = b;
  }
  EXPECT_EQ(describe_sizes({1, 2, 3, 4, 12, 16, 20, 21}, g), "1–4, 12–21");
  EXPECT_EQ(describe_sizes({1, 2, 8, 16}, g), "1, 2, 8, 16");
  EXPECT_EQ(describe_sizes({4, 8}, g), "4, 8");
  EXPECT_EQ(describe_sizes({}, g), "");
}

TEST_F(EnergyAnalysisTest, TooFewStepsAreNotChosen) {
  AnalyzeOptions strict;
  strict.min_samples = 9;  // the fake log times 8 steps per size
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(PowerModel{}).text())}, strict);
  ASSERT_TRUE(a.groups[0].energy.has_value());
  EXPECT_FALSE(a.groups[0].energy->most_efficient.has_value());
  EXPECT_EQ(a.groups[0].energy->points, 24);
}

TEST_F(EnergyAnalysisTest, ThrottlingIsDetected) {
  PowerModel model;
  model.sm_clock = {{20, {1980, 1700}},   // falls 14% in its window
                    {22, {1600, 1600}},   // steady, but 81% of the group's highest start clock
                    {23, {1980, 1800}},   // falls 9%: not throttling
                    {24, {1800, 1790}}};  // 90.4% of 1980: not throttling
  model.temperature = {{20, {62, 84}}};
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(model).text())}, {});
  const GroupEnergy& e = *a.groups[0].energy;
  EXPECT_EQ(e.highest_start_sm_clock_mhz, 1980.0);
  ASSERT_EQ(e.throttled.size(), 2u);
  EXPECT_EQ(e.throttled[0].batch_size, 20);
  EXPECT_TRUE(e.throttled[0].fell_in_window);
  EXPECT_TRUE(e.throttled[0].below_group);  // 1700 < 0.9 x 1980 as well
  EXPECT_EQ(e.throttled[0].end_temperature_c, 84.0);
  EXPECT_EQ(e.throttled[1].batch_size, 22);
  EXPECT_FALSE(e.throttled[1].fell_in_window);
  EXPECT_TRUE(e.throttled[1].below_group);
  EXPECT_TRUE(a.groups[0].points[19].energy->throttled);
  EXPECT_FALSE(a.groups[0].points[22].energy->throttled);
  EXPECT_TRUE(contains(a.warnings, "(throttling) at batch size(s) 20, 22")) << a.warnings.front();

  const std::string report = report_of(a);
  EXPECT_TRUE(has(report, "> **Warning: throttling.** At 2 batch size(s)")) << report;
  EXPECT_TRUE(
      has(report, "> - batch 20: SM clock 1980→1700 MHz, temperature 62.0→84.0 °C (fell 14% in the window)"))
      << report;
  EXPECT_TRUE(has(report, "> - batch 22: SM clock 1600→1600 MHz")) << report;
  const Json j = analysis_to_json(a, {});
  EXPECT_EQ(j["groups"][0]["energy"]["throttled"].size(), 2u);
  EXPECT_EQ(j["groups"][0]["points"][19]["throttled"], true);
}

TEST_F(EnergyAnalysisTest, AnalysisJsonCarriesThePointFieldsAndTheBest) {
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(PowerModel{}).text())}, {});
  const Json j = analysis_to_json(a, {});
  const Json& group = j["groups"][0];
  for (const Json& point : group["points"]) {
    for (const char* key : kPointEnergyKeys) EXPECT_TRUE(point.contains(key)) << key;
  }
  const Json& p8 = group["points"][7];
  EXPECT_EQ(p8["energy_method"], "nvml energy counter");
  EXPECT_EQ(p8["energy_steps"], 8);
  EXPECT_NEAR(p8["j_per_sample"].get<double>(), 0.385, 1e-12);
  EXPECT_TRUE(p8["start_utilization_pct"].is_null());
  EXPECT_EQ(p8["energy_low_confidence"], false);
  const Json& best = group["best"];
  EXPECT_EQ(best["most_efficient"]["batch_size"], 8);
  EXPECT_NEAR(best["most_efficient"]["samples_per_j"].get<double>(), 1 / 0.385, 1e-9);
  EXPECT_EQ(best["most_efficient_above_idle"]["batch_size"], 1);
  EXPECT_TRUE(best["most_efficient_above_idle"].contains("samples_per_j_above_idle"));
  EXPECT_EQ(best["fastest"]["batch_size"], 24);  // the existing keys stay as they were
  EXPECT_EQ(group["energy"]["methods"], Json::array({"nvml energy counter"}));
  EXPECT_EQ(group["energy"]["resolution_ms"], 1.0);
  EXPECT_EQ(group["energy"]["idle_baseline"], true);
  EXPECT_EQ(group["energy"]["points"], 24);
}

TEST_F(EnergyAnalysisTest, ReportAndTerminalShowTheEnergy) {
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(PowerModel{}).text())}, {});
  const std::string report = report_of(a);
  EXPECT_TRUE(has(report, "| fastest batch | samples/s | most efficient batch | samples/J |")) << report;
  EXPECT_TRUE(has(report, "| 24 | " + significant(a.groups[0].fastest->samples_per_s) + " | 8 | 2.597 |"))
      << report;
  EXPECT_TRUE(has(report, "- most energy-efficient: batch 8, 2.597 samples/J (0.3850 J/sample at 220.0 W"))
      << report;
  EXPECT_TRUE(has(report, "- most energy-efficient above idle: batch 1, 4.762 samples/J")) << report;
  EXPECT_TRUE(has(report, "### Energy\n")) << report;
  EXPECT_TRUE(has(report, "with nvml energy counter (GPU 0000:3B:00.0 board), which updates every 1.00 ms"));
  EXPECT_TRUE(has(report, "read over the timed steps of a batch size together, not per step"));
  EXPECT_TRUE(has(report, "An idle baseline was measured (60.0 W)"));
  EXPECT_TRUE(has(report, "| J/sample above idle | samples/J above idle |"));
  EXPECT_TRUE(has(report,
                  "| 8 | 8 | 112.0 | 3.080 | 0.3850 | 220.0 | 2.597 | 0.2800 | 3.571 | 1980→1980 | "
                  "40.0→45.0 | most efficient |"))
      << report;
  EXPECT_FALSE(has(report, "Warning: throttling"));
  const std::string terminal = terminal_of(a);
  EXPECT_TRUE(
      has(terminal, "  most efficient: batch 8 at 2.597 samples/J; above idle: batch 1 at 4.762 samples/J"))
      << terminal;
}

TEST_F(EnergyAnalysisTest, WithoutIdleBaselineThereIsNoAboveIdlePart) {
  PowerModel model;
  model.idle_baseline = false;
  const Analysis a = analyze_logs({write("steps.jsonl", energy_log(model).text())}, {});
  const GroupEnergy& e = *a.groups[0].energy;
  EXPECT_FALSE(e.idle_baseline);
  EXPECT_EQ(e.most_efficient->batch_size, 8);
  EXPECT_FALSE(e.most_efficient_above_idle.has_value());
  const Json j = analysis_to_json(a, {});
  EXPECT_TRUE(j["groups"][0]["best"].contains("most_efficient"));
  EXPECT_FALSE(j["groups"][0]["best"].contains("most_efficient_above_idle"));
  EXPECT_TRUE(j["groups"][0]["points"][0]["idle_power_w"].is_null());
  const std::string report = report_of(a);
  EXPECT_TRUE(has(report, "No idle baseline was measured")) << report;
  EXPECT_FALSE(has(report, "above idle")) << report;
  EXPECT_FALSE(has(terminal_of(a), "above idle"));
}

TEST_F(EnergyAnalysisTest, RecordWithNullNumbersIsKeptWithoutABest) {
  FakeLog log;
  log.batches = range(1, 6);
  log.energy = [](int64_t, double, int) {
    return Json{{"energy_method", "rapl"},  {"energy_scope", "CPU packages package-0"},
                {"energy_j", nullptr},      {"j_per_sample", nullptr},
                {"samples_per_j", nullptr}, {"idle_power_w", nullptr}};
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_TRUE(a.groups[0].energy.has_value());
  EXPECT_FALSE(a.groups[0].energy->most_efficient.has_value());
  EXPECT_FALSE(a.groups[0].energy->resolution_ms.has_value());
  EXPECT_TRUE(a.groups[0].energy->low_confidence.empty());  // no resolution: nothing to judge by
  const Json j = analysis_to_json(a, {});
  EXPECT_TRUE(j["groups"][0]["points"][0]["j_per_step"].is_null());
  EXPECT_TRUE(has(report_of(a), "| 1 | – | – | – | – | – | – | – | – |  |"));
}

TEST_F(EnergyAnalysisTest, MergedLogsKeepTheEnergyOfEachBatchSize) {
  FakeLog first = energy_log(PowerModel{}, 1, 12), second = energy_log(PowerModel{}, 13, 24);
  second.run_id = "run-b";
  const Analysis a = analyze_logs({write("a.jsonl", first.text()), write("b.jsonl", second.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].energy->points, 24);
  EXPECT_EQ(a.groups[0].energy->most_efficient->batch_size, 8);
  EXPECT_NEAR(*a.groups[0].points[20].energy->avg_power_w, 60 + 20 * 21, 1e-9);
}

TEST_F(EnergyAnalysisTest, LogsWithoutEnergyShowNoEnergy) {
  FakeLog plain;
  plain.batches = range(1, 24);
  const Analysis a = analyze_logs({write("steps.jsonl", plain.text())}, {});
  EXPECT_FALSE(a.groups[0].energy.has_value());
  for (const PointStats& p : a.groups[0].points) EXPECT_FALSE(p.energy.has_value());
  const Json j = analysis_to_json(a, {});
  EXPECT_FALSE(j["groups"][0].contains("energy"));
  EXPECT_FALSE(j["groups"][0]["best"].contains("most_efficient"));
  for (const char* key : kPointEnergyKeys) EXPECT_FALSE(j["groups"][0]["points"][0].contains(key)) << key;
  const std::string report = report_of(a);
  EXPECT_FALSE(has(report, "### Energy")) << report;
  EXPECT_FALSE(has(report, "J/sample"));
  EXPECT_FALSE(has(report, "samples/J"));
  EXPECT_FALSE(has(report, "most efficient"));
  EXPECT_FALSE(has(terminal_of(a), "efficient"));
}

TEST_F(EnergyAnalysisTest, OnlyTheGroupWithEnergyShowsIt) {
  FakeLog with = energy_log(PowerModel{}), without;
  without.batches = range(1, 24);
  without.gpu = "GPU B";
  const Analysis a = analyze_logs({write("a.jsonl", with.text()), write("b.jsonl", without.text())}, {});
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_TRUE(a.groups[0].energy.has_value());
  EXPECT_FALSE(a.groups[1].energy.has_value());
  const std::string report = report_of(a);
  EXPECT_TRUE(has(report, " | 8 | 2.597 |\n")) << report;
  EXPECT_TRUE(has(report, " | – | – |\n")) << report;
  const size_t second = report.find("## vgg16 train fp32 · GPU B");
  ASSERT_NE(second, std::string::npos);
  EXPECT_EQ(report.find("### Energy", second), std::string::npos);
}

TEST_F(EnergyAnalysisTest, EnergyPlotsAreDrawnAndEmbedded) {
  if (!gnuplot_on_path()) GTEST_FAIL() << "gnuplot is not on PATH; install gnuplot-nox to run the plot tests";
  PowerModel slow_model, fast_model;
  slow_model.resolution_ms = 15;  // some windows too short: marked on the plot
  fast_model.w_per_sample = 5;
  FakeLog slow = energy_log(slow_model), fast = energy_log(fast_model), plain;
  fast.gpu = "GPU B";
  plain.gpu = "GPU C";
  plain.batches = range(1, 24);
  const Analysis a = analyze_logs(
      {write("a.jsonl", slow.text()), write("b.jsonl", fast.text()), write("c.jsonl", plain.text())}, {});
  ASSERT_EQ(a.groups.size(), 3u);
  const fs::path dir = dir_ / "plots";
  const PlotOutcome plots = write_plots(a, dir.string());
  ASSERT_TRUE(plots.made) << plots.skipped_reason;
  EXPECT_TRUE(plots.warnings.empty()) << plots.warnings.front();
  const std::set<std::string> files(plots.files.begin(), plots.files.end());
  for (const std::string& id : {a.groups[0].id, a.groups[1].id}) {
    for (const std::string& stem : {"energy_" + id, "power_" + id}) {
      for (const char* ext : {".png", ".svg"}) {
        EXPECT_TRUE(files.count(stem + ext)) << stem << ext;
        EXPECT_GT(fs::file_size(dir / (stem + ext)), 0u) << stem << ext;
      }
      EXPECT_TRUE(fs::exists(dir / (stem + ".dat")));
      EXPECT_TRUE(fs::exists(dir / (stem + ".gp")));
    }
  }
  EXPECT_TRUE(files.count("energy_all.png"));
  EXPECT_TRUE(files.count("energy_all.svg"));
  EXPECT_FALSE(files.count("energy_" + a.groups[2].id + ".png"));
  EXPECT_FALSE(files.count("power_" + a.groups[2].id + ".png"));

  std::ifstream script(dir / ("energy_" + a.groups[0].id + ".gp"));
  const std::string gp((std::istreambuf_iterator<char>(script)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(gp, "most efficient: 18")) << gp;
  EXPECT_TRUE(has(gp, "J/sample above idle"));
  EXPECT_TRUE(has(gp, "not used: window too short"));
  std::ifstream power(dir / ("power_" + a.groups[0].id + ".gp"));
  const std::string power_gp((std::istreambuf_iterator<char>(power)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(power_gp, "title 'idle'")) << power_gp;

  const std::string report = report_of(a, plots);
  EXPECT_TRUE(has(report, "(plots/energy_" + a.groups[0].id + ".png)")) << report;
  EXPECT_TRUE(has(report, "(plots/power_" + a.groups[1].id + ".svg)"));
  EXPECT_TRUE(has(report, "(plots/energy_all.png)"));
}

TEST_F(EnergyAnalysisTest, NoEnergyPlotsWithoutEnergy) {
  if (!gnuplot_on_path()) GTEST_FAIL() << "gnuplot is not on PATH; install gnuplot-nox to run the plot tests";
  FakeLog a_log, b_log;
  a_log.batches = b_log.batches = range(1, 12);
  b_log.gpu = "GPU B";
  const Analysis a = analyze_logs({write("a.jsonl", a_log.text()), write("b.jsonl", b_log.text())}, {});
  const PlotOutcome plots = write_plots(a, (dir_ / "plots").string());
  ASSERT_TRUE(plots.made) << plots.skipped_reason;
  for (const std::string& file : plots.files) {
    EXPECT_NE(file.rfind("energy_", 0), 0u) << file;
    EXPECT_NE(file.rfind("power_", 0), 0u) << file;
  }
  EXPECT_EQ(plots.files.size(), 2u * 6);  // time and throughput per group, speedup, throughput_all
}

}  // namespace
}  // namespace batchscope
