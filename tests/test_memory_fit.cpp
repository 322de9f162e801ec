#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

#include "lib/analysis/analyzer.h"
#include "lib/analysis/memory_fit.h"
#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/report/memory_report.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/device/cpu_memory.h"
#include "tests/analysis_test_support.h"

namespace batchscope {
namespace {

using analysis_test::AnalyzeTest;
using analysis_test::FakeLog;
using analysis_test::range;
using analysis_test::report_of;
using analysis_test::terminal_of;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// 500 MiB that no batch changes and 20 MiB per sample, with one size (12) whose workspace took 400 MiB
// more, as a cuDNN algorithm of its own can.
int64_t peak_at(int64_t b) { return 500 * kMiB + 20 * kMiB * b + (b == 12 ? 400 * kMiB : 0); }

std::vector<std::pair<int64_t, int64_t>> peaks(int64_t first, int64_t last) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t b = first; b <= last; ++b) out.emplace_back(b, peak_at(b));
  return out;
}

TEST(MemoryFit, TheLineIsRecoveredPastAnOddSizeAndReadAtEachMemory) {
  const std::optional<MemoryFit> fit =
      fit_memory(peaks(1, 32), MemoryCapacity{12 * kGiB, "GPU A's memory"}, true);
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->bytes_per_sample, 20.0 * kMiB);
  EXPECT_DOUBLE_EQ(fit->fixed_bytes, 500.0 * kMiB);
  EXPECT_EQ(fit->points, 32);
  EXPECT_EQ(fit->first_batch, 1);
  EXPECT_EQ(fit->last_batch, 32);
  // The odd size steps up and straight back: the line runs through the other 31, exactly.
  ASSERT_EQ(fit->steps.size(), 2u);
  EXPECT_EQ(fit->steps[0].to_batch, 12);
  EXPECT_EQ(fit->steps[1].from_batch, 12);
  ASSERT_EQ(fit->line_batches.size(), 31u);
  EXPECT_FALSE(std::binary_search(fit->line_batches.begin(), fit->line_batches.end(), 12));
  EXPECT_EQ(fit->worst_deviation, 0.0);
  // The device's own memory first, (12288 - 500) / 20 = 589.4, then 16, 24, 40, 48 and 80 GiB.
  ASSERT_EQ(fit->reach.size(), 6u);
  EXPECT_TRUE(fit->reach[0].own);
  EXPECT_EQ(fit->reach[0].what, "GPU A's memory");
  EXPECT_EQ(fit->reach[0].largest_batch, 589);
  EXPECT_FALSE(fit->reach[1].own);
  EXPECT_EQ(fit->reach[1].what, "16 GiB");
  EXPECT_EQ(fit->reach[1].largest_batch, 794);
  EXPECT_EQ(fit->reach[5].memory_bytes, 80 * kGiB);
  EXPECT_EQ(fit->reach[5].largest_batch, (81920 - 500) / 20);
  // On a straight line the largest sizes' line is the same line: no reach is read along it.
  EXPECT_FALSE(fit->top_steeper);
  EXPECT_NEAR(fit->top_bytes_per_sample, 20.0 * kMiB, 1e-6 * kMiB);
  for (const MemoryReach& r : fit->reach) EXPECT_FALSE(r.from_top) << r.what;
}

// An LSTM's peaks on a doubling ladder: 600 MiB + 4.5 MiB per sample up to batch 128, and 7 MiB per sample
// above (cuDNN's RNN algorithm took more from there on).
int64_t superlinear_peak_at(int64_t b) {
  return 600 * kMiB + 9 * kMiB * std::min<int64_t>(b, 128) / 2 + 7 * kMiB * std::max<int64_t>(b - 128, 0);
}

TEST(MemoryFit, APeakThatGrowsFasterAtTheLargestSizesIsReadAlongThatGrowth) {
  std::vector<std::pair<int64_t, int64_t>> doubling;
  for (int64_t b = 1; b <= 1024; b *= 2) doubling.emplace_back(b, superlinear_peak_at(b));
  const std::optional<MemoryFit> fit =
      fit_memory(doubling, MemoryCapacity{140 * kGiB, "GPU B's memory"}, true);
  ASSERT_TRUE(fit.has_value());
  // The line through all eleven sizes keeps the growth of the smaller ones.
  EXPECT_NEAR(fit->bytes_per_sample, 4.5 * kMiB, 0.01 * kMiB);
  // Its top half, 32–1024, grows by more than 5% faster.
  EXPECT_TRUE(fit->top_steeper);
  EXPECT_EQ(fit->top_first_batch, 32);
  EXPECT_GT(fit->top_bytes_per_sample, 6.0 * kMiB);
  EXPECT_LE(fit->top_bytes_per_sample, 7.0 * kMiB);
  // Where the growth above 128 runs out of 140 GiB: 1024 + (140 GiB - peak(1024)) / 7 MiB, about 19,500.
  const double runs_out =
      1024.0 + static_cast<double>(140 * kGiB - superlinear_peak_at(1024)) / static_cast<double>(7 * kMiB);
  ASSERT_FALSE(fit->reach.empty());
  const MemoryReach& own = fit->reach[0];
  ASSERT_TRUE(own.largest_batch.has_value());
  EXPECT_TRUE(own.from_top);
  EXPECT_GE(static_cast<double>(*own.largest_batch), runs_out);
  EXPECT_LE(static_cast<double>(*own.largest_batch), 1.05 * runs_out);
  // The line alone would have promised half as many again.
  const double line_alone = (140.0 * kGiB - fit->fixed_bytes) / fit->bytes_per_sample;
  EXPECT_GT(line_alone, 1.4 * runs_out);
  EXPECT_EQ(largest_batch_within(*fit, 140 * kGiB), own.largest_batch);
  // Every common size is read along the top line too, each within 5% above where the growth runs out.
  for (const MemoryReach& r : fit->reach) {
    ASSERT_TRUE(r.largest_batch.has_value()) << r.what;
    EXPECT_TRUE(r.from_top) << r.what;
    const double out = 1024.0 + static_cast<double>(r.memory_bytes - superlinear_peak_at(1024)) /
                                    static_cast<double>(7 * kMiB);
    EXPECT_LE(static_cast<double>(*r.largest_batch), 1.05 * out) << r.what;
  }
}

TEST(MemoryFit, FewSizesAFlatLineOrTooLittleMemoryReachNothing) {
  EXPECT_FALSE(fit_memory(peaks(1, 2), std::nullopt, true).has_value());
  // Sizes without a peak (0) do not count towards the three.
  EXPECT_FALSE(fit_memory({{1, peak_at(1)}, {2, peak_at(2)}, {3, 0}}, std::nullopt, true).has_value());

  const std::optional<MemoryFit> flat =
      fit_memory({{1, kGiB}, {2, kGiB}, {4, kGiB}}, MemoryCapacity{8 * kGiB, "x"}, true);
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(flat->bytes_per_sample, 0.0);
  EXPECT_TRUE(flat->reach.empty());
  EXPECT_FALSE(largest_batch_within(*flat, 8 * kGiB).has_value());

  // The CPU without a limit: the line, but no memory to read it at.
  const std::optional<MemoryFit> cpu = fit_memory(peaks(1, 8), std::nullopt, false);
  ASSERT_TRUE(cpu.has_value());
  EXPECT_TRUE(cpu->reach.empty());
  // Less than batch 1 needs, and exactly what batch 3 needs.
  EXPECT_FALSE(largest_batch_within(*cpu, 510 * kMiB).has_value());
  EXPECT_EQ(largest_batch_within(*cpu, 560 * kMiB), 3);
}

// 500 MiB + 20 MiB per sample with an allocator's rounding (up to ±0.5 MiB), a workspace of 600 MiB
// more from batch 10 on, and one at batch 23 that took 300 MiB less.
int64_t stepped_peak_at(int64_t b) {
  const int64_t rounding = ((b * 7) % 5 - 2) * kMiB / 4;
  return 500 * kMiB + 20 * kMiB * b + rounding + (b >= 10 ? 600 * kMiB : 0) - (b == 23 ? 300 * kMiB : 0);
}

TEST(MemoryFit, StepsOffTheLineAreThoseBeyondThePeaksOwnScatter) {
  std::vector<std::pair<int64_t, int64_t>> stepped, smooth;
  for (int64_t b = 1; b <= 40; ++b) {
    stepped.emplace_back(b, stepped_peak_at(b));
    smooth.emplace_back(b, peak_at(b) + ((b * 7) % 5 - 2) * kMiB / 4 - (b == 12 ? 400 * kMiB : 0));
  }
  const std::optional<MemoryFit> fit = fit_memory(stepped, std::nullopt, true);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->bytes_per_sample, 20.0 * kMiB, 1.0 * kMiB);
  // 1% of the median peak (about 1.5 GiB) is above 8 times the rounding's scatter.
  EXPECT_GT(fit->step_threshold_bytes, 14.0 * kMiB);
  EXPECT_LT(fit->step_threshold_bytes, 17.0 * kMiB);
  ASSERT_EQ(fit->steps.size(), 3u);
  EXPECT_EQ(fit->steps[0].from_batch, 9);
  EXPECT_EQ(fit->steps[0].to_batch, 10);
  EXPECT_EQ(fit->steps[0].to_bytes, stepped_peak_at(10));
  EXPECT_NEAR(fit->steps[0].beyond_line_bytes, 600.0 * kMiB, 2.0 * kMiB);
  EXPECT_EQ(fit->steps[1].to_batch, 23);
  EXPECT_NEAR(fit->steps[1].beyond_line_bytes, -300.0 * kMiB, 2.0 * kMiB);
  EXPECT_EQ(fit->steps[2].from_batch, 23);
  EXPECT_NEAR(fit->steps[2].beyond_line_bytes, 300.0 * kMiB, 2.0 * kMiB);

  // Where only the rounding moves the peaks, nothing steps.
  const std::optional<MemoryFit> line = fit_memory(smooth, std::nullopt, true);
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(line->steps.empty());

  // Across a jump that kept the line (16→17), a drop into the size of less workspace (22→23) and a
  // pair without a peak on one side (40→41).
  Jump jump, drop, unmeasured;
  jump.from_batch = 16, jump.to_batch = 17;
  drop.from_batch = 22, drop.to_batch = 23;
  unmeasured.from_batch = 40, unmeasured.to_batch = 41;
  MemoryFit across = *fit;
  memory_at_changes(across, stepped, {jump, unmeasured}, {drop});
  ASSERT_EQ(across.at_changes.size(), 2u);
  EXPECT_EQ(across.at_changes[0].from_batch, 16);
  EXPECT_FALSE(across.at_changes[0].drop);
  EXPECT_FALSE(across.at_changes[0].stepped);
  EXPECT_NEAR(across.at_changes[0].beyond_line_bytes, 0.0, 2.0 * kMiB);
  EXPECT_EQ(across.at_changes[1].to_batch, 23);
  EXPECT_TRUE(across.at_changes[1].drop);
  EXPECT_TRUE(across.at_changes[1].stepped);
  EXPECT_NEAR(across.at_changes[1].beyond_line_bytes, -300.0 * kMiB, 2.0 * kMiB);
}

// A GPU sweep's peaks become a line read at its GPU's memory, in report.md, analysis.json and the
// terminal; the sizes that ran in micro-batches (a micro-batch's memory) stay out of it.
TEST_F(AnalyzeTest, PeakMemoryIsALineReadAtTheGpusMemory) {
  FakeLog log;
  log.gpu_memory_bytes = 16 * kGiB;
  log.batches = range(1, 40);
  log.point_fields = [](int64_t b) {
    Json f = {{"peak_memory_bytes", b <= 32 ? peak_at(b) : peak_at(8)}};
    if (b > 32) {
      f["chunk"] = 16;
      f["chunk_largest_fitting"] = 32;
    }
    return f;
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_TRUE(g.memory.has_value());
  EXPECT_EQ(g.memory->points, 32);
  EXPECT_EQ(g.memory->last_batch, 32);
  EXPECT_DOUBLE_EQ(g.memory->bytes_per_sample, 20.0 * kMiB);
  ASSERT_FALSE(g.memory->reach.empty());
  EXPECT_EQ(g.memory->reach[0].what, "GPU A's memory");
  EXPECT_EQ(g.memory->reach[0].largest_batch, 794);

  const std::string report = report_of(a);
  EXPECT_NE(report.find("Peak memory ≈ 500 MiB + 20.0 MiB × batch size"), std::string::npos) << report;
  EXPECT_NE(
      report.find("at 32 sizes, 1–32; the line by Theil–Sen through the 31 whose peaks sit at the largest "
                  "size's level, 1–11 and 13–32):"),
      std::string::npos)
      << report;
  EXPECT_NE(
      report.find("every peak it runs through lies within 0% of the line (the farthest at batch 1); the "
                  "other sizes ran with other workspaces (the steps below)."),
      std::string::npos)
      << report;
  EXPECT_NE(
      report.find("Extended, it reaches batch 794 within GPU A's memory (16.0 GiB), and on a GPU of 24 GiB "
                  "batch 1203, 40 GiB 2023, 48 GiB 2432 and 80 GiB 4071."),
      std::string::npos)
      << report;
  EXPECT_NE(report.find("These are upper bounds"), std::string::npos) << report;
  EXPECT_NE(terminal_of(a).find("  memory: 500 MiB + 20.0 MiB per sample; the line reaches batch 794 in "
                                "GPU A's memory (16.0 GiB)"),
            std::string::npos)
      << terminal_of(a);

  const Json json = analysis_to_json(a, {});
  const Json& memory = json["groups"][0]["memory"];
  EXPECT_EQ(memory["bytes_per_sample"], 20.0 * kMiB);
  EXPECT_EQ(memory["reach"][0]["largest_batch"], 794);
  EXPECT_EQ(memory["reach"][0]["own"], true);
  // 16 GiB is the GPU's own.
  EXPECT_EQ(memory["reach"].size(), 5u);
}

// Where the largest sizes' line is steeper, the report, the terminal, the plot and analysis.json say so and
// read the reach along it.
TEST_F(AnalyzeTest, TheLargestSizesSteeperLineIsShownWhereTheReachIsReadAlongIt) {
  FakeLog log;
  log.gpu_memory_bytes = 16 * kGiB;
  for (int64_t b = 1; b <= 1024; b *= 2) log.batches.push_back(b);
  log.point_fields = [](int64_t b) { return Json{{"peak_memory_bytes", superlinear_peak_at(b)}}; };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_TRUE(g.memory.has_value());
  ASSERT_TRUE(g.memory->top_steeper);
  const std::string top_slope = format_memory_size(std::llround(g.memory->top_bytes_per_sample));
  const std::string report = report_of(a);
  EXPECT_NE(report.find("At the largest sizes it grows faster than the line: " + top_slope +
                        " per extra sample from batch 32 on"),
            std::string::npos)
      << report;
  EXPECT_NE(
      report.find("so each reach below is the smaller of the two lines'. Extended, the lines reach batch " +
                  std::to_string(*g.memory->reach[0].largest_batch) + " within GPU A's memory"),
      std::string::npos)
      << report;
  EXPECT_NE(terminal_of(a).find("4.50 MiB per sample (" + top_slope +
                                " from batch 32 on); the steeper line reaches"),
            std::string::npos)
      << terminal_of(a);
  const Json memory = analysis_to_json(a, {})["groups"][0]["memory"];
  EXPECT_EQ(memory["top_line"]["steeper"], true);
  EXPECT_EQ(memory["top_line"]["first_batch"], 32);
  EXPECT_EQ(memory["reach"][0]["from_top"], true);
  const std::optional<PlotScript> plot = memory_plot(g);
  ASSERT_TRUE(plot.has_value());
  EXPECT_NE(plot->body.find("title 'line of the largest sizes'"), std::string::npos) << plot->body;
}

// Under a --memory-limit the line is read at the limit, and a sweep that ran out of memory says where
// beside it; a CPU group gets no GPU sizes.
TEST_F(AnalyzeTest, AMemoryLimitIsWhereTheLineIsReadAndTheFirstOutOfMemorySizeStandsBesideIt) {
  FakeLog log;
  log.gpu = "cpu";
  log.memory_limit_bytes = 1 * kGiB;
  log.batches = range(1, 30);
  log.oom_from = 27;
  log.point_fields = [](int64_t b) { return Json{{"peak_memory_bytes", peak_at(b)}}; };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_TRUE(g.memory.has_value());
  ASSERT_EQ(g.memory->reach.size(), 1u);
  // (1024 - 500) / 20 = 26.2
  EXPECT_EQ(g.memory->reach[0].largest_batch, 26);
  const std::string report = report_of(a);
  EXPECT_NE(report.find("Extended, it reaches batch 26 within the sweep's --memory-limit (1.00 GiB)."),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("The sweep ran out of memory from batch 27, where the line put batch 26 within the "
                        "sweep's --memory-limit."),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Only LibTorch's CPU tensors are counted"), std::string::npos) << report;
}

// A jump of the step time that came with a workspace of its own (the peak steps up with it) is named so
// beside the jump and in the Memory paragraph; one whose peaks follow the line is said to leave the
// memory as it was.
TEST_F(AnalyzeTest, AJumpSaysWhetherThePeakMemoryStepsWithIt) {
  FakeLog log;
  log.gpu_memory_bytes = 16 * kGiB;
  log.batches = range(1, 32);
  log.level = [](int64_t b) { return 10.0 + 0.5 * static_cast<double>(b) + (b >= 17 ? 8.0 : 0.0); };
  log.point_fields = [](int64_t b) {
    return Json{{"peak_memory_bytes", peak_at(b) + (b >= 17 ? 400 * kMiB : 0)}};
  };
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_EQ(g.jumps.jumps.size(), 1u);
  ASSERT_EQ(g.jumps.jumps[0].from_batch, 16);
  ASSERT_TRUE(g.memory.has_value());
  ASSERT_EQ(g.memory->at_changes.size(), 1u);
  EXPECT_TRUE(g.memory->at_changes[0].stepped);
  EXPECT_DOUBLE_EQ(g.memory->at_changes[0].beyond_line_bytes, 400.0 * kMiB);
  // Batch 12's odd workspace: a step up onto it and one down after it. The line runs through the sizes
  // of the larger workspace (17 on, and 12, which sits at its level), which a line through all of them
  // would tilt towards.
  ASSERT_EQ(g.memory->steps.size(), 3u);
  std::vector<int64_t> line_batches = {12};
  for (int64_t b = 17; b <= 32; ++b) line_batches.push_back(b);
  EXPECT_EQ(g.memory->line_batches, line_batches);
  EXPECT_DOUBLE_EQ(g.memory->bytes_per_sample, 20.0 * kMiB);
  EXPECT_DOUBLE_EQ(g.memory->fixed_bytes, 900.0 * kMiB);

  const std::string report = report_of(a);
  EXPECT_NE(
      report.find("steps at 32 sizes, 1–32; the line by Theil–Sen through the 17 whose peaks sit at the "
                  "largest size's level, 12 and 17–32):"),
      std::string::npos)
      << report;
  EXPECT_NE(report.find("Peak memory ≈ 900 MiB + 20.0 MiB × batch size"), std::string::npos) << report;
  EXPECT_NE(report.find("| confidence | peak memory beyond its line |"), std::string::npos) << report;
  EXPECT_NE(report.find(" | +400 MiB, a step |"), std::string::npos) << report;
  EXPECT_NE(report.find("The peak steps off the line 3 times, by more than"), std::string::npos) << report;
  EXPECT_NE(report.find("11→12 (+400 MiB), 12→13 (−400 MiB) and 16→17 (+400 MiB). There a library's "
                        "workspace changed with its algorithm"),
            std::string::npos)
      << report;
  EXPECT_NE(
      report.find("Every change of the step time came with a step of the peak: the jump 16→17 (+400 MiB)."),
      std::string::npos)
      << report;
  EXPECT_NE(terminal_of(a).find("; the peak steps off it at 11→12, 12→13 and 16→17\n"), std::string::npos)
      << terminal_of(a);
  // The plot marks each step at the first size after it.
  const std::optional<PlotScript> plot = memory_plot(g);
  ASSERT_TRUE(plot.has_value());
  EXPECT_NE(plot->body.find("set arrow from first 17, graph 0 to first 17, graph 1 nohead"),
            std::string::npos)
      << plot->body;
  EXPECT_NE(plot->body.find("set label '16→17 +400 MiB' at first 17"), std::string::npos) << plot->body;
  // The sizes the line runs through filled, the others open: a third column says which.
  EXPECT_NE(plot->data.find("\n11 720 0\n12 1140 1\n13 760 0\n"), std::string::npos) << plot->data;
  EXPECT_NE(plot->data.find("\n17 1240 1\n"), std::string::npos) << plot->data;
  EXPECT_NE(plot->body.find("using 1:($3 > 0 ? 1/0 : $2) with points pt 6"), std::string::npos) << plot->body;

  const Json json = analysis_to_json(a, {});
  const Json& memory = json["groups"][0]["memory"];
  ASSERT_EQ(memory["steps"].size(), 3u);
  EXPECT_EQ(memory["steps"][2]["from"], 16);
  EXPECT_EQ(memory["at_changes"][0]["change"], "rise");
  EXPECT_EQ(memory["at_changes"][0]["stepped"], true);
  EXPECT_EQ(memory["line_points"], 17);
  EXPECT_EQ(memory["line_batches"], Json(line_batches));

  // The same jump with peaks on the line: no step anywhere, and the jump left the memory alone.
  log.point_fields = [](int64_t b) { return Json{{"peak_memory_bytes", 500 * kMiB + 20 * kMiB * b}}; };
  const Analysis plain = analyze_logs({write("plain.jsonl", log.text())}, {});
  ASSERT_TRUE(plain.groups[0].memory.has_value());
  EXPECT_TRUE(plain.groups[0].memory->steps.empty());
  const std::string plain_report = report_of(plain);
  EXPECT_NE(plain_report.find(" | +0 B |"), std::string::npos) << plain_report;
  EXPECT_NE(plain_report.find("No two neighbouring sizes move the peak more than"), std::string::npos)
      << plain_report;
  EXPECT_NE(plain_report.find("The jump 16→17 came with no step of the peak (within"), std::string::npos)
      << plain_report;
  EXPECT_EQ(terminal_of(plain).find("steps off it"), std::string::npos) << terminal_of(plain);
  EXPECT_EQ(memory_plot(plain.groups[0])->body.find("set arrow"), std::string::npos);
  EXPECT_EQ(memory_plot(plain.groups[0])->body.find("off the line"), std::string::npos);
}

// Logs without peaks (a CPU sweep before they were counted) get no memory line anywhere.
TEST_F(AnalyzeTest, LogsWithoutPeaksHaveNoMemoryLine) {
  FakeLog log;
  log.gpu = "cpu";
  log.batches = range(1, 8);
  const Analysis a = analyze_logs({write("steps.jsonl", log.text())}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_FALSE(a.groups[0].memory.has_value());
  EXPECT_EQ(report_of(a).find("**Memory**"), std::string::npos);
  EXPECT_FALSE(analysis_to_json(a, {})["groups"][0].contains("memory"));
  EXPECT_FALSE(memory_plot(a.groups[0]).has_value());
}

}  // namespace
}  // namespace batchscope
