#include "lib/timing/peak_rate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "lib/common/statistics.h"
#include "lib/device/gpu.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"

namespace batchscope {
namespace {

torch::ScalarType element_type(const std::string& precision) {
  if (precision == "bf16") return torch::kBFloat16;
  if (precision == "fp16") return torch::kHalf;
  return torch::kFloat32;
}

void wait_for(const torch::Device& device) {
  if (device.is_cuda()) gpu::synchronize(device.index());
}

void check_request(const std::string& precision, const PeakOptions& options) {
  if (std::find(kPeakPrecisions.begin(), kPeakPrecisions.end(), precision) == kPeakPrecisions.end())
    throw std::invalid_argument("unknown precision '" + precision + "'");
  if (options.steps < 1 || options.warmup < 0)
    throw std::invalid_argument(
        "a peak measurement needs a step count of at least 1, and no negative warm-up");
}

// Runs `run` as time_peak_runs does, with nothing before each run.
template <class Run>
void time_runs(const torch::Device& device, const PeakOptions& options, PeakRate& rate, const Run& run) {
  time_peak_runs(
      device, options.warmup, options.steps, rate, [] {}, run);
}

}  // namespace

PeakSettings::PeakSettings(bool tf32, bool cudnn_benchmark)
    : tf32_cublas_(at::globalContext().allowTF32CuBLAS()),
      tf32_cudnn_(at::globalContext().allowTF32CuDNN()),
      benchmark_(at::globalContext().benchmarkCuDNN()),
      deterministic_(at::globalContext().deterministicCuDNN()) {
  auto& context = at::globalContext();
  context.setAllowTF32CuBLAS(tf32);
  context.setAllowTF32CuDNN(tf32);
  context.setBenchmarkCuDNN(cudnn_benchmark);
  // Deterministic algorithms only would keep the fastest ones from the measurement.
  context.setDeterministicCuDNN(false);
}

PeakSettings::~PeakSettings() {
  auto& context = at::globalContext();
  context.setAllowTF32CuBLAS(tf32_cublas_);
  context.setAllowTF32CuDNN(tf32_cudnn_);
  context.setBenchmarkCuDNN(benchmark_);
  context.setDeterministicCuDNN(deterministic_);
}

std::string peak_precision_unavailable(const torch::Device& device, const std::string& precision) {
  if (precision == "tf32" && !device.is_cuda())
    return "TF32 is a format of NVIDIA's tensor cores; a CPU has no such mode";
  if (precision == "fp16" && !device.is_cuda()) return "fp16 runs on CUDA devices only here, as in a sweep";
  return "";
}

void time_peak_runs(const torch::Device& device, int warmup, int steps, PeakRate& rate,
                    const std::function<void()>& before, const std::function<void()>& run) {
  const std::unique_ptr<StepTimer> timer = make_step_timer(device);
  rate.timer = timer->method();
  try {
    for (int i = 0; i < warmup; ++i) {
      before();
      run();
    }
    wait_for(device);
    timer->reserve(steps);
    for (int i = 0; i < steps; ++i) {
      before();
      timer->start(i);
      run();
      timer->stop(i);
    }
    wait_for(device);
  } catch (const std::exception& error) {
    const auto missing = unsupported_operation(error);
    if (!missing) throw;
    rate.skipped = "LibTorch cannot run it here: " + *missing;
    return;
  }
  rate.times_ms.resize(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) rate.times_ms[static_cast<std::size_t>(i)] = timer->elapsed_ms(i);
  const Summary s = summarize(rate.times_ms);
  const auto tflops = [&rate](double ms) { return ms > 0 ? rate.flops / (ms / 1e3) / 1e12 : 0.0; };
  rate.median_ms = s.median;
  rate.median_tflops = tflops(s.median);
  rate.low_tflops = tflops(s.p90);
  rate.high_tflops = tflops(s.p10);
}

std::string ConvShape::text() const {
  return std::to_string(batch) + "x" + std::to_string(channels) + "x" + std::to_string(height) + "x" +
         std::to_string(width);
}

double ConvShape::flops() const {
  // Padding 1 keeps H×W; every output element of C channels takes C·3·3 multiply-adds.
  return 2.0 * static_cast<double>(batch) * static_cast<double>(channels) * static_cast<double>(channels) *
         9.0 * static_cast<double>(height) * static_cast<double>(width);
}

int64_t default_peak_size(const torch::Device& device) { return device.is_cuda() ? 8192 : 2048; }

ConvShape default_conv_shape(const torch::Device& device) {
  return device.is_cuda() ? ConvShape{64, 256, 56, 56} : ConvShape{8, 128, 28, 28};
}

std::vector<std::string> default_peak_precisions(const torch::Device& device) {
  return device.is_cuda() ? kPeakPrecisions : std::vector<std::string>{"fp32"};
}

PeakRate measure_peak_rate(const torch::Device& device, const std::string& precision,
                           const PeakOptions& options) {
  check_request(precision, options);
  if (options.size < 1) throw std::invalid_argument("a matrix product needs a size of at least 1");
  PeakRate rate;
  rate.operation = "matmul";
  rate.precision = precision;
  rate.size = options.size;
  const auto n = static_cast<double>(options.size);
  rate.flops = 2 * n * n * n;
  rate.skipped = peak_precision_unavailable(device, precision);
  if (!rate.skipped.empty()) return rate;
  torch::NoGradGuard no_grad;
  const PeakSettings settings(/*tf32=*/precision == "tf32", at::globalContext().benchmarkCuDNN());
  const auto options_on_device = torch::TensorOptions().device(device).dtype(element_type(precision));
  // Normal values, made once: no zeros or denormals for a fast path to find.
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({options.size, options.size}, options_on_device);
  const torch::Tensor b = torch::randn({options.size, options.size}, options_on_device);
  torch::Tensor c = torch::empty({options.size, options.size}, options_on_device);
  time_runs(device, options, rate, [&] { torch::mm_out(c, a, b); });
  return rate;
}

std::pair<torch::Tensor, torch::Tensor> conv3x3_gradients(const torch::Tensor& grad_output,
                                                          const torch::Tensor& input,
                                                          const torch::Tensor& weight) {
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      grad_output, input, weight, /*bias_sizes=*/c10::nullopt, /*stride=*/{1, 1}, /*padding=*/{1, 1},
      /*dilation=*/{1, 1}, /*transposed=*/false, /*output_padding=*/{0, 0}, /*groups=*/1,
      /*output_mask=*/{true, true, false});
  return {grad_input, grad_weight};
}

PeakRate measure_conv_peak_rate(const torch::Device& device, const std::string& precision,
                                const std::string& memory_format, const std::string& phase,
                                const PeakOptions& options) {
  check_request(precision, options);
  if (std::find(kConvMemoryFormats.begin(), kConvMemoryFormats.end(), memory_format) ==
      kConvMemoryFormats.end())
    throw std::invalid_argument("unknown memory format '" + memory_format + "'");
  if (std::find(kConvPhases.begin(), kConvPhases.end(), phase) == kConvPhases.end())
    throw std::invalid_argument("unknown phase '" + phase + "'");
  const ConvShape& shape = options.conv;
  if (shape.batch < 1 || shape.channels < 1 || shape.height < 1 || shape.width < 1)
    throw std::invalid_argument("a convolution needs an input of at least 1x1x1x1");
  const bool training = phase == "train";
  PeakRate rate;
  rate.operation = "conv";
  rate.precision = precision;
  rate.conv = shape;
  rate.memory_format = memory_format;
  rate.phase = phase;
  rate.cudnn_benchmark = device.is_cuda();
  // The backward pass computes the input's gradient and the weights', each a convolution of the forward's
  // size: three in all, as a training step's FLOPs are counted.
  rate.flops = (training ? 3 : 1) * shape.flops();
  rate.skipped = peak_precision_unavailable(device, precision);
  if (!rate.skipped.empty()) return rate;
  torch::NoGradGuard no_grad;
  const PeakSettings settings(/*tf32=*/precision == "tf32", /*cudnn_benchmark=*/device.is_cuda());
  const auto options_on_device = torch::TensorOptions().device(device).dtype(element_type(precision));
  const auto layout =
      memory_format == "channels_last" ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  torch::manual_seed(0);
  const auto sizes = shape.sizes();
  const torch::Tensor input = torch::randn(sizes, options_on_device).contiguous(layout);
  // Scaled so that the outputs stay near 1, far from fp16's largest value.
  const torch::Tensor weight = (torch::randn({shape.channels, shape.channels, 3, 3}, options_on_device) /
                                std::sqrt(static_cast<double>(shape.channels) * 9))
                                   .contiguous(layout);
  // The outputs and gradients are made by the convolutions, as a model's layer makes them: on a GPU from
  // the caching allocator's blocks, which the warm-up leaves ready.
  if (!training) {
    time_runs(device, options, rate, [&] { torch::conv2d(input, weight, {}, 1, 1); });
    return rate;
  }
  const torch::Tensor grad_output = torch::randn(sizes, options_on_device).contiguous(layout);
  time_runs(device, options, rate, [&] {
    torch::conv2d(input, weight, {}, 1, 1);
    conv3x3_gradients(grad_output, input, weight);
  });
  return rate;
}

Json to_json(const PeakRate& rate) {
  Json j = {{"operation", rate.operation}, {"precision", rate.precision}};
  if (rate.operation == "conv") {
    const auto sizes = rate.conv.sizes();
    j["conv_input"] = Json(std::vector<int64_t>(sizes.begin(), sizes.end()));
    j["memory_format"] = rate.memory_format;
    j["phase"] = rate.phase;
    j["cudnn_benchmark"] = rate.cudnn_benchmark;
  } else if (rate.operation == "layer") {
    j["layer"] = rate.layer.name;
    j["kind"] = rate.layer.kind;
    j["pass"] = rate.layer.pass;
    j["batch"] = rate.layer.batch;
    j["layer_input"] = rate.layer.input;
    j["memory_format"] = rate.memory_format;
    j["phase"] = rate.phase;
    j["cudnn_benchmark"] = rate.cudnn_benchmark;
  } else {
    j["size"] = rate.size;
  }
  if (!rate.skipped.empty()) {
    j["skipped"] = rate.skipped;
    return j;
  }
  j["flops_per_run"] = rate.flops;
  j["median_tflops"] = rate.median_tflops;
  j["p10_tflops"] = rate.low_tflops;
  j["p90_tflops"] = rate.high_tflops;
  j["median_ms"] = rate.median_ms;
  j["timer"] = rate.timer;
  j["times_ms"] = rate.times_ms;
  if (!rate.profiled_ms.empty()) {
    j["profiled"] = {{"as", rate.profiled_as},
                     {"median_ms", rate.profiled_median_ms},
                     {"median_tflops", rate.profiled_tflops},
                     {"times_ms", rate.profiled_ms}};
    if (rate.profiled_kernels > 0) j["profiled"]["kernels_per_run"] = rate.profiled_kernels;
    if (rate.profiled_layout_ms) j["profiled"]["layout_ms"] = *rate.profiled_layout_ms;
  }
  if (!rate.profiled_dropped.empty()) j["profiled_dropped"] = rate.profiled_dropped;
  return j;
}

}  // namespace batchscope
