#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "lib/analysis/analyzer.h"
#include "lib/analysis/peak_share.h"
#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/common/words.h"
#include "tests/analysis_test_support.h"

namespace batchscope {
namespace {

using analysis_test::AnalyzeTest;
using analysis_test::FakeLog;
using analysis_test::user_error_of;

// A peak record as batchscope peak writes it: the device, its GPUs, and a rate per precision.
std::string peak_line(const std::string& device, const std::string& gpu_name, const std::vector<Json>& rates,
                      int threads = 4) {
  Json r = {{"type", "peak"},
            {"cpu", {{"model", "Test CPU"}, {"torch_threads", threads}}},
            {"gpus", gpu_name.empty() ? Json::array() : Json::array({{{"index", 0}, {"name", gpu_name}}})},
            {"config", {{"device", device}}},
            {"rates", Json(rates)}};
  return r.dump() + "\n";
}

Json rate(const std::string& precision, double tflops) {
  return {{"precision", precision}, {"median_tflops", tflops}};
}

Json conv_rate(const std::string& precision, const std::string& layout, double tflops,
               const std::string& phase = "train") {
  return {{"operation", "conv"},
          {"precision", precision},
          {"memory_format", layout},
          {"phase", phase},
          {"median_tflops", tflops}};
}

class PeakShareTest : public AnalyzeTest {};

// A CPU's peak is matched by its model and threads: a sweep at 4 threads is read against the peak at 4,
// not against a later record at 1 (which once replaced it), and one at 2 has none and is told so.
TEST_F(PeakShareTest, ACpuPeakIsReadOnlyAtItsOwnThreadCount) {
  FakeLog four;
  four.gpu = "cpu";
  four.batches = range(1, 8);
  AnalyzeOptions options;
  options.peaks = read_peak_table(write("peak.jsonl", peak_line("cpu", "", {rate("fp32", 1)}, 4) +
                                                          peak_line("cpu", "", {rate("fp32", 0.25)}, 1)));
  ASSERT_EQ(options.peaks.entries.size(), 2u);
  const Analysis a = analyze_logs({write("four.jsonl", four.text())}, options);
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_TRUE(a.groups[0].peak);
  ASSERT_EQ(a.groups[0].peak->shares.size(), 1u);
  EXPECT_EQ(a.groups[0].peak->shares[0].peak_tflops, 1.0);
  options.peaks = read_peak_table(write("peak2.jsonl", peak_line("cpu", "", {rate("fp32", 1)}, 2)));
  const Analysis none = analyze_logs({write("four.jsonl", four.text())}, options);
  EXPECT_FALSE(none.groups[0].peak);
  const bool told = std::any_of(none.warnings.begin(), none.warnings.end(), [](const std::string& w) {
    return w.find("no fp32 peak of this CPU (Test CPU \u00b7 4 threads)") != std::string::npos;
  });
  EXPECT_TRUE(told) << listed(none.warnings);
}

TEST_F(PeakShareTest, ALaterMeasurementReplacesAnEarlierOneOfTheSameDeviceAndPrecision) {
  const std::string path =
      write("peak.jsonl",
            peak_line("cuda:0", "GPU A",
                      {rate("fp32", 50), rate("tf32", 400), Json{{"precision", "fp16"}, {"skipped", "no"}}}) +
                peak_line("cuda:0", "GPU A", {rate("fp32", 60)}) + peak_line("cpu", "", {rate("fp32", 2)}));
  const PeakTable t = read_peak_table(path);
  ASSERT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.entries[0].device, "GPU A");
  EXPECT_EQ(t.entries[0].precision, "fp32");
  EXPECT_DOUBLE_EQ(t.entries[0].median_tflops, 60);
  EXPECT_EQ(t.entries[0].line, 2);
  EXPECT_EQ(t.entries[1].precision, "tf32");
  EXPECT_EQ(t.entries[1].line, 1);
  EXPECT_EQ(t.entries[2].device, "cpu");
  EXPECT_EQ(t.entries[2].cpu, "Test CPU \u00b7 4 threads");  // matched by model and threads
}

TEST_F(PeakShareTest, AFileThatIsNotAPeakFileIsRefusedWithItsLine) {
  const auto refused = [this](const std::string& text) {
    return user_error_of([&] { read_peak_table(write("p.jsonl", text)); });
  };
  EXPECT_NE(
      refused(peak_line("cpu", "", {rate("fp32", 2)}) + R"({"type":"run"})" + "\n")
          .find("p.jsonl:2: holds a \"run\" record, not a peak record; give --peak the JSON-lines file that "
                "batchscope peak --out wrote"),
      std::string::npos);
  EXPECT_NE(refused(peak_line("cpu", "", {Json{{"precision", "fp32"}, {"median_tflops", -1}}}))
                .find("p.jsonl:1: the fp32 rate of the peak record has no median_tflops above 0"),
            std::string::npos);
  EXPECT_NE(refused(peak_line("cuda:1", "GPU A", {rate("fp32", 2)})).find("does not name the GPU cuda:1"),
            std::string::npos);
  // An index that is not a number names no GPU (it once ended in a JSON type error).
  for (const Json& index : {Json("x"), Json(), Json::array(), Json::object()}) {
    Json record = Json::parse(peak_line("cuda:0", "GPU A", {rate("fp32", 2)}));
    record["gpus"][0]["index"] = index;
    EXPECT_NE(refused(record.dump() + "\n").find("p.jsonl:1: the peak record does not name the GPU cuda:0"),
              std::string::npos)
        << index;
  }
  EXPECT_NE(refused(peak_line("cpu", "", {Json{{"precision", "tf32"}, {"skipped", "no TF32"}}}))
                .find("p.jsonl:1: holds no measured rate"),
            std::string::npos);
  EXPECT_NE(refused(peak_line("cpu", "", {rate("fp32", 2)}) + peak_line("cpu", "", {}))
                .find("p.jsonl:2: the peak record's rates list is empty"),
            std::string::npos);
  EXPECT_NE(refused("").find("holds no peak record"), std::string::npos);
}

TEST_F(PeakShareTest, TheConvolutionsRoofIsItsFasterLayoutInTheGroupsPhaseAndLaterFilesReplaceEarlierOnes) {
  // A record from before the convolution (no operation) is the matrix product's.
  const std::string first = write(
      "peak.jsonl",
      peak_line(
          "cuda:0", "GPU A",
          {rate("fp32", 50), conv_rate("fp32", "contiguous", 60), conv_rate("fp32", "channels_last", 55),
           conv_rate("fp32", "channels_last", 90, "infer"), conv_rate("tf32", "contiguous", 300)}));
  const std::string second =
      write("conv.jsonl", peak_line("cuda:0", "GPU A", {conv_rate("fp32", "channels_last", 70)}));
  const PeakTable t = read_peak_tables({first, second});
  EXPECT_EQ(t.files, (std::vector<std::string>{first, second}));
  EXPECT_EQ(listed(t.files), first + " and " + second);
  ASSERT_EQ(t.entries.size(), 5u);
  EXPECT_EQ(t.entries[0].operation, "matmul");
  EXPECT_EQ(t.entries[0].memory_format, "");
  EXPECT_EQ(t.entries[2].memory_format, "channels_last");
  EXPECT_EQ(t.entries[2].phase, "train");
  EXPECT_DOUBLE_EQ(t.entries[2].median_tflops, 70);
  EXPECT_EQ(t.entries[2].file, second);
  EXPECT_EQ(t.entries[3].phase, "infer");
  EXPECT_DOUBLE_EQ(t.entries[3].median_tflops, 90);

  FakeLog training;  // its phase is train
  training.batches = {1, 2, 4, 8};
  AnalyzeOptions options;
  options.peaks = t;
  const Analysis a = analyze_logs({write("gpu.jsonl", training.text())}, options);
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_TRUE(a.groups[0].peak);
  const GroupPeak& peak = *a.groups[0].peak;
  // fp32 with TF32 allowed: fp32's two roofs, then TF32's convolution (the file has no TF32 product).
  // The training convolution's faster layout is the roof (70, not the forward pass's 90).
  ASSERT_EQ(peak.shares.size(), 3u);
  EXPECT_EQ(peak.shares[0].operation, "matmul");
  EXPECT_DOUBLE_EQ(peak.shares[0].peak_tflops, 50);
  EXPECT_EQ(peak.shares[1].operation, "conv");
  EXPECT_EQ(peak.shares[1].memory_format, "channels_last");
  EXPECT_EQ(peak.shares[1].phase, "train");
  EXPECT_DOUBLE_EQ(peak.shares[1].peak_tflops, 70);
  EXPECT_EQ(peak.shares[1].from, second + ":1");
  EXPECT_NEAR(peak.shares[1].share, peak.tflops / 70, 1e-12);
  EXPECT_EQ(peak.shares[2].precision, "tf32");
  EXPECT_EQ(peak.shares[2].memory_format, "contiguous");
  std::ostringstream report;
  write_report(report, a, {}, "plots");
  EXPECT_NE(report.str().find("% of the measured fp32 matrix-product peak (50.00 TFLOP/s, "),
            std::string::npos)
      << report.str();
  EXPECT_NE(report.str().find(
                "% of the fp32 convolution peak (70.00 TFLOP/s, forward and backward, channels-last, " +
                second + ":1)"),
            std::string::npos)
      << report.str();
  const Json j = analysis_to_json(a, options);
  const Json& conv = j["groups"][0]["peak"]["of_peaks"][1];
  EXPECT_EQ(conv["operation"], "conv");
  EXPECT_EQ(conv["memory_format"], "channels_last");
  EXPECT_EQ(conv["phase"], "train");
  EXPECT_FALSE(j["groups"][0]["peak"]["of_peaks"][0].contains("memory_format"));

  // An inference sweep is read against the forward pass alone.
  const std::vector<PointStats> points = a.groups[0].points;
  const auto forward = peak_for_group(t, points, "GPU A", "", {"fp32"}, "infer");
  ASSERT_TRUE(forward);
  ASSERT_EQ(forward->shares.size(), 2u);
  EXPECT_EQ(forward->shares[1].phase, "infer");
  EXPECT_DOUBLE_EQ(forward->shares[1].peak_tflops, 90);
}

TEST_F(PeakShareTest, ARateOfAnUnknownOperationIsRefusedWithItsLine) {
  Json odd = rate("fp32", 2);
  odd["operation"] = "fft";
  EXPECT_NE(user_error_of([&] { read_peak_table(write("p.jsonl", peak_line("cpu", "", {odd}))); })
                .find("p.jsonl:1: the fp32 rate of the peak record is of the operation 'fft', not matmul, "
                      "conv or layer"),
            std::string::npos);
  Json backward = conv_rate("fp32", "contiguous", 2, "backward");
  EXPECT_NE(
      user_error_of([&] { read_peak_table(write("p.jsonl", peak_line("cpu", "", {backward}))); })
          .find("p.jsonl:1: the fp32 convolution of the peak record is of the phase 'backward', neither "
                "train nor infer"),
      std::string::npos);
  odd["operation"] = 3;
  EXPECT_NE(user_error_of([&] {
              read_peak_table(write("p.jsonl", peak_line("cpu", "", {odd})));
            }).find("p.jsonl:1: a rate of the peak record gives its operation as something other than text"),
            std::string::npos);
}

TEST_F(PeakShareTest, ALayerTimedAloneIsReadWithItsModelAndAMalformedOneRefusedWithItsLine) {
  const auto layers_line = [](const Json& config_extra, const std::vector<Json>& rates) {
    Json r = Json::parse(peak_line("cpu", "", rates));
    for (const auto& [key, value] : config_extra.items()) r["config"][key] = value;
    return r.dump() + "\n";
  };
  const Json model = {{"model", "mnist_cnn"}, {"input", {1, 28, 28}}, {"classes", 10}};
  Json conv2 = conv_rate("fp32", "channels_last", 0.2);
  conv2["operation"] = "layer";
  conv2["layer"] = "conv2";
  conv2["kind"] = "conv";
  conv2["pass"] = "backward";
  conv2["batch"] = 32;
  Json at_64 = conv2;
  at_64["batch"] = 64;
  at_64["median_tflops"] = 0.3;
  Json again = conv2;
  again["median_tflops"] = 0.25;
  Json searched = conv2;  // with cuDNN's search: a rate of its own
  searched["cudnn_benchmark"] = true;
  const PeakTable t = read_peak_table(
      write("layers.jsonl", layers_line(model, {conv2, at_64}) + layers_line(model, {again, searched})));
  ASSERT_EQ(t.entries.size(), 3u);  // the later record of conv2 at 32 replaces the first
  EXPECT_FALSE(t.entries[0].cudnn_benchmark);
  EXPECT_TRUE(t.entries[2].cudnn_benchmark);
  const PeakEntry& e = t.entries[0];
  EXPECT_EQ(e.operation, "layer");
  EXPECT_EQ(e.model, "mnist_cnn");
  EXPECT_EQ(e.input, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(e.classes, 10);
  EXPECT_EQ(e.layer, "conv2");
  EXPECT_EQ(e.kind, "conv");
  EXPECT_EQ(e.pass, "backward");
  EXPECT_EQ(e.batch, 32);
  EXPECT_EQ(e.memory_format, "channels_last");
  EXPECT_DOUBLE_EQ(e.median_tflops, 0.25);
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(t.entries[1].batch, 64);
  // Nor is a layer a convolution peak: the group's roof stays the convolution's.
  EXPECT_EQ(fastest_peak(t, "cpu", "Test CPU", "fp32", "conv", "train"), nullptr);
  const auto refused = [this, &layers_line](const Json& config, const Json& rate) {
    return user_error_of([&] { read_peak_table(write("p.jsonl", layers_line(config, {rate}))); });
  };
  EXPECT_NE(refused(Json::object(), conv2)
                .find("p.jsonl:1: the peak record of a model's layers names no config.model"),
            std::string::npos);
  Json flat = model;
  flat["input"] = {1, 0, 28};
  EXPECT_NE(
      refused(flat, conv2)
          .find("p.jsonl:1: the peak record of a model's layers has no config.input of sizes of 1 or more"),
      std::string::npos);
  Json odd = conv2;
  odd["kind"] = "pool";
  EXPECT_NE(refused(model, odd)
                .find("p.jsonl:1: the fp32 rate of a layer is of the kind 'pool', neither conv nor linear"),
            std::string::npos);
  odd = conv2;
  odd["pass"] = "step";
  EXPECT_NE(refused(model, odd).find("is of the pass 'step', neither forward nor backward"),
            std::string::npos);
  odd = conv2;
  odd["batch"] = 0;
  EXPECT_NE(refused(model, odd).find("p.jsonl:1: the fp32 rate of a layer has no batch of 1 or more"),
            std::string::npos);
  odd = conv2;
  odd.erase("layer");
  EXPECT_NE(refused(model, odd).find("p.jsonl:1: the fp32 rate of a layer names no layer"),
            std::string::npos);
  // Its runs under the profiler: their rate, and on a GPU the time its kernels spent converting layouts.
  Json profiled = conv2;
  profiled["profiled"] = {{"as", "kernels"},   {"median_ms", 0.1},     {"median_tflops", 0.3},
                          {"times_ms", {0.1}}, {"kernels_per_run", 3}, {"layout_ms", 0.02}};
  const PeakEntry p = read_peak_table(write("prof.jsonl", layers_line(model, {profiled}))).entries.at(0);
  EXPECT_DOUBLE_EQ(p.profiled_tflops, 0.3);
  EXPECT_EQ(p.profiled_as, "kernels");
  ASSERT_TRUE(p.profiled_layout_ms.has_value());
  EXPECT_DOUBLE_EQ(*p.profiled_layout_ms, 0.02);
  EXPECT_FALSE(e.profiled_layout_ms.has_value());
  for (const Json& layout : {Json(-1), Json("x"), Json()}) {
    odd = profiled;
    odd["profiled"]["layout_ms"] = layout;
    EXPECT_NE(refused(model, odd)
                  .find("p.jsonl:1: the fp32 rate of a layer has a profiled layout_ms that is not a time of "
                        "0 or more"),
              std::string::npos)
        << layout;
  }
  odd = profiled;
  odd["profiled"]["as"] = "events";
  EXPECT_NE(refused(model, odd).find("profiled times are of 'events', neither kernels nor operators"),
            std::string::npos);
  odd = profiled;
  odd["profiled"].erase("median_tflops");
  EXPECT_NE(refused(model, odd)
                .find("p.jsonl:1: the fp32 rate of a layer has profiled times without a "
                      "median_tflops above 0"),
            std::string::npos);
}

TEST(PeakPrecisions, Fp32OnAGpuIsReadAgainstTf32WhereItsRunAllowedIt) {
  using V = std::vector<std::string>;
  EXPECT_EQ(peak_precisions_for("fp32", "default", true), (V{"fp32", "tf32"}));
  EXPECT_EQ(peak_precisions_for("fp32", "on", true), (V{"tf32"}));
  EXPECT_EQ(peak_precisions_for("fp32", "off", true), (V{"fp32"}));
  EXPECT_EQ(peak_precisions_for("fp32", "", false), (V{"fp32"}));
  EXPECT_EQ(peak_precisions_for("bf16", "default", true), (V{"bf16"}));
}

TEST_F(PeakShareTest, EachGroupsHighestRateIsReadAgainstItsOwnDevicesPeaks) {
  // Step time 10 + 0.5 b ms at 1e9 b FLOPs: b / (10 + 0.5 b) TFLOP/s, highest at the largest b.
  FakeLog gpu;
  gpu.batches = {1, 2, 4, 8};
  FakeLog other = gpu;
  other.gpu = "GPU B";
  other.run_id = "run-b";
  FakeLog cpu = gpu;
  cpu.gpu = "cpu";
  cpu.run_id = "run-c";
  AnalyzeOptions options;
  options.peaks =
      read_peak_table(write("peak.jsonl", peak_line("cuda:0", "GPU A", {rate("fp32", 2), rate("tf32", 8)}) +
                                              peak_line("cpu", "", {rate("fp32", 1)})));
  const Analysis a = analyze_logs(
      {write("gpu.jsonl", gpu.text()), write("other.jsonl", other.text()), write("cpu.jsonl", cpu.text())},
      options);
  ASSERT_EQ(a.groups.size(), 3u);
  const double highest = 8.0 / (10 + 0.5 * 8);
  for (const GroupAnalysis& g : a.groups) {
    if (g.label.find("GPU B") != std::string::npos) {
      EXPECT_FALSE(g.peak) << g.label;
      continue;
    }
    ASSERT_TRUE(g.peak) << g.label;
    EXPECT_EQ(g.peak->batch_size, 8);
    EXPECT_NEAR(g.peak->tflops, highest, 0.01 * highest);
    if (g.label.find("GPU A") != std::string::npos) {
      // LibTorch's default lets cuDNN's fp32 convolutions use TF32: both peaks are given.
      ASSERT_EQ(g.peak->shares.size(), 2u);
      EXPECT_EQ(g.peak->shares[0].precision, "fp32");
      EXPECT_NEAR(g.peak->shares[0].share, g.peak->tflops / 2, 1e-12);
      EXPECT_EQ(g.peak->shares[1].precision, "tf32");
      EXPECT_NEAR(g.peak->shares[1].share, g.peak->tflops / 8, 1e-12);
      EXPECT_NE(g.peak->shares[1].from.find("peak.jsonl:1"), std::string::npos);
    } else {
      ASSERT_EQ(g.peak->shares.size(), 1u);
      EXPECT_NEAR(g.peak->shares[0].share, g.peak->tflops / 1, 1e-12);
      EXPECT_NE(g.peak->shares[0].from.find("peak.jsonl:2"), std::string::npos);
    }
  }
  // The group without a peak of its device is named in a warning with the command that measures one.
  EXPECT_TRUE(
      analysis_test::contains(a.warnings, "has no fp32 or tf32 peak of GPU B; run batchscope peak --out"));
  std::ostringstream report, terminal;
  write_report(report, a, {}, "plots");
  write_terminal_summary(terminal, a);
  EXPECT_NE(report.str().find("- highest rate: batch 8, "), std::string::npos);
  EXPECT_NE(report.str().find("% of the measured fp32 matrix-product peak (2.000 TFLOP/s, "),
            std::string::npos)
      << report.str();
  EXPECT_NE(terminal.str().find("% of the tf32 matrix-product peak (8.000 TFLOP/s)"), std::string::npos)
      << terminal.str();
  const Json j = analysis_to_json(a, options);
  int with_peak = 0;
  for (const auto& g : j["groups"]) {
    if (!g.contains("peak")) continue;
    ++with_peak;
    EXPECT_EQ(g["peak"]["batch_size"], 8);
    EXPECT_GT(g["peak"]["of_peaks"][0]["share"].get<double>(), 0);
  }
  EXPECT_EQ(with_peak, 2);
}

}  // namespace
}  // namespace batchscope
