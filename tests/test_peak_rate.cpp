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
    EXPECT_EQ(j.size(), 4u) << j.dump();  // operation, precision, size and why
    EXPECT_EQ(j["skipped"], r.skipped);
  }
}

TEST(PeakRate, EachConvolutionIsTimedInItsLayoutAndPhaseAndItsFlopsCountTwoPerMultiplyAdd) {
  PeakOptions o;
  o.conv = {2, 8, 6, 5};
  o.warmup = 1;
  o.steps = 4;
  EXPECT_EQ(o.conv.text(), "2x8x6x5");
  // Every output element of 8 channels at 6x5 (padding 1 keeps it) takes 8·3·3 multiply-adds.
  EXPECT_DOUBLE_EQ(o.conv.flops(), 2.0 * (2 * 8 * 6 * 5) * (8 * 3 * 3));
  for (const std::string& phase : kConvPhases) {
    for (const std::string& layout : kConvMemoryFormats) {
      const PeakRate r = measure_conv_peak_rate(kCpu, "fp32", layout, phase, o);
      EXPECT_TRUE(r.skipped.empty()) << r.skipped;
      EXPECT_EQ(r.operation, "conv");
      EXPECT_EQ(r.memory_format, layout);
      EXPECT_EQ(r.phase, phase);
      EXPECT_FALSE(r.cudnn_benchmark);
      // Training adds the backward's two convolutions of the forward's size, as a step's FLOPs count.
      EXPECT_DOUBLE_EQ(r.flops, (phase == "train" ? 3 : 1) * o.conv.flops());
      ASSERT_EQ(r.times_ms.size(), 4u);
      for (double t : r.times_ms) EXPECT_GT(t, 0);
      EXPECT_DOUBLE_EQ(r.median_ms, median(r.times_ms));
      EXPECT_NEAR(r.median_tflops, r.flops / (r.median_ms / 1e3) / 1e12, 1e-12 * r.median_tflops);
      const Json j = to_json(r);
      EXPECT_EQ(j["operation"], "conv");
      EXPECT_EQ(j["memory_format"], layout);
      EXPECT_EQ(j["phase"], phase);
      EXPECT_EQ(j["conv_input"], Json({2, 8, 6, 5}));
      EXPECT_FALSE(j.contains("size"));
    }
  }
  // The modes a CPU lacks are said for the convolution too.
  EXPECT_FALSE(measure_conv_peak_rate(kCpu, "tf32", "contiguous", "infer", o).skipped.empty());
  EXPECT_FALSE(measure_conv_peak_rate(kCpu, "fp16", "channels_last", "train", o).skipped.empty());
  EXPECT_THROW(measure_conv_peak_rate(kCpu, "fp32", "nhwc", "infer", o), std::invalid_argument);
  EXPECT_THROW(measure_conv_peak_rate(kCpu, "fp32", "contiguous", "backward", o), std::invalid_argument);
  o.conv.height = 0;
  EXPECT_THROW(measure_conv_peak_rate(kCpu, "fp32", "contiguous", "infer", o), std::invalid_argument);
}

TEST(PeakRate, TheTimedBackwardGivesTheGradientsAutogradGives) {
  // What the training phase times is a convolution's real backward pass, checked against autograd.
  torch::manual_seed(1);
  const torch::Tensor input = torch::randn({2, 3, 5, 4}, torch::requires_grad());
  const torch::Tensor weight = torch::randn({3, 3, 3, 3}, torch::requires_grad());
  const torch::Tensor grad_output = torch::randn({2, 3, 5, 4});
  torch::conv2d(input, weight, {}, 1, 1).backward(grad_output);
  torch::NoGradGuard no_grad;
  const auto [grad_input, grad_weight] = conv3x3_gradients(grad_output, input, weight);
  EXPECT_TRUE(torch::allclose(grad_input, input.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(grad_weight, weight.grad(), 1e-5, 1e-5));
}

TEST(PeakRate, TheTf32AndCudnnSettingsComeBackAsTheyWere) {
  auto& context = at::globalContext();
  const bool cublas = context.allowTF32CuBLAS(), cudnn = context.allowTF32CuDNN();
  const bool benchmark = context.benchmarkCuDNN(), deterministic = context.deterministicCuDNN();
  PeakOptions o;
  o.size = 16;
  o.conv = {1, 4, 4, 4};
  o.steps = 1;
  for (bool setting : {true, false}) {
    context.setAllowTF32CuBLAS(setting);
    context.setAllowTF32CuDNN(!setting);
    context.setBenchmarkCuDNN(setting);
    context.setDeterministicCuDNN(setting);
    measure_peak_rate(kCpu, "fp32", o);
    measure_conv_peak_rate(kCpu, "fp32", "contiguous", "train", o);
    EXPECT_EQ(context.allowTF32CuBLAS(), setting);
    EXPECT_EQ(context.allowTF32CuDNN(), !setting);
    EXPECT_EQ(context.benchmarkCuDNN(), setting);
    EXPECT_EQ(context.deterministicCuDNN(), setting);
  }
  context.setAllowTF32CuBLAS(cublas);
  context.setAllowTF32CuDNN(cudnn);
  context.setBenchmarkCuDNN(benchmark);
  context.setDeterministicCuDNN(deterministic);
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
  EXPECT_EQ(default_conv_shape(kCpu).text(), "8x128x28x28");
  EXPECT_EQ(default_conv_shape(torch::Device("cuda:0")).text(), "64x256x56x56");
  EXPECT_EQ(default_peak_precisions(kCpu), std::vector<std::string>{"fp32"});
  EXPECT_EQ(default_peak_precisions(torch::Device("cuda:0")), kPeakPrecisions);
}

}  // namespace
}  // namespace batchscope
