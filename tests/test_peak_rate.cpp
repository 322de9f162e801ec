#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "lib/common/statistics.h"
#include "lib/timing/peak_rate.h"

namespace batchscope {
namespace {

const torch::Device kCpu(torch::kCPU);

TEST(PeakRate, EachProductIsTimedAndTheRateIsItsFlopsOverTheMedian) {
  PeakOptions o;
  o.size = 80;
  o.warmup = 1;
  o.steps = 5;
  const PeakRate r = measure_peak_rate(kCpu, "fp32", o);
  EXPECT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_EQ(r.precision, "fp32");
  EXPECT_EQ(r.size, 80);
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 80 * 80 * 80);
  ASSERT_EQ(r.times_ms.size(), 5u);
  for (double t : r.times_ms) EXPECT_GT(t, 0);
  EXPECT_DOUBLE_EQ(r.median_ms, median(r.times_ms));
  EXPECT_NEAR(r.median_tflops, r.flops / (r.median_ms / 1e3) / 1e12, 1e-12 * r.median_tflops);
  // The low end of the rate comes from the slow products, the high end from the fast ones.
  EXPECT_LE(r.low_tflops, r.median_tflops);
  EXPECT_GE(r.high_tflops, r.median_tflops);
  EXPECT_EQ(r.timer, "steady_clock");
  const Json j = to_json(r);
  EXPECT_EQ(j["times_ms"].size(), 5u);
  EXPECT_FALSE(j.contains("skipped"));
}

TEST(PeakRate, ABf16ProductRunsInBf16OnTheCpu) {
  PeakOptions o;
  o.size = 32;
  o.warmup = 0;
  o.steps = 2;
  const PeakRate r = measure_peak_rate(kCpu, "bf16", o);
  // LibTorch multiplies bf16 matrices on the CPU (1.13 and 2.x alike).
  EXPECT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_EQ(r.times_ms.size(), 2u);
}

TEST(PeakRate, ModesACpuLacksAreSaidNotMeasured) {
  PeakOptions o;
  o.size = 16;
  for (const char* precision : {"tf32", "fp16"}) {
    const PeakRate r = measure_peak_rate(kCpu, precision, o);
    EXPECT_FALSE(r.skipped.empty()) << precision;
    EXPECT_TRUE(r.times_ms.empty()) << precision;
    const Json j = to_json(r);
    EXPECT_EQ(j.size(), 3u) << j.dump();  // precision, size and why
    EXPECT_EQ(j["skipped"], r.skipped);
  }
}

TEST(PeakRate, TheTf32SettingComesBackAsItWas) {
  auto& context = at::globalContext();
  const bool before = context.allowTF32CuBLAS();
  PeakOptions o;
  o.size = 16;
  o.steps = 1;
  for (bool setting : {true, false}) {
    context.setAllowTF32CuBLAS(setting);
    measure_peak_rate(kCpu, "fp32", o);
    EXPECT_EQ(context.allowTF32CuBLAS(), setting);
  }
  context.setAllowTF32CuBLAS(before);
}

TEST(PeakRate, UnknownPrecisionsAndEmptyMeasurementsAreRefused) {
  PeakOptions o;
  o.size = 16;
  EXPECT_THROW(measure_peak_rate(kCpu, "fp8", o), std::invalid_argument);
  o.size = 0;
  EXPECT_THROW(measure_peak_rate(kCpu, "fp32", o), std::invalid_argument);
  o.size = 16;
  o.steps = 0;
  EXPECT_THROW(measure_peak_rate(kCpu, "fp32", o), std::invalid_argument);
}

TEST(PeakRate, DefaultsByDevice) {
  EXPECT_EQ(default_peak_size(kCpu), 2048);
  EXPECT_EQ(default_peak_size(torch::Device("cuda:0")), 8192);
  EXPECT_EQ(default_peak_precisions(kCpu), std::vector<std::string>{"fp32"});
  EXPECT_EQ(default_peak_precisions(torch::Device("cuda:0")), kPeakPrecisions);
}

}  // namespace
}  // namespace batchscope
