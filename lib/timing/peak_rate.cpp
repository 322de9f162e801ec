#include "lib/timing/peak_rate.h"

#include <algorithm>
#include <stdexcept>

#include "lib/common/statistics.h"
#include "lib/device/gpu.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"

namespace batchscope {
namespace {

// TF32 in cuBLAS as the precision needs, and as it was again after.
class MatmulTf32Scope {
 public:
  explicit MatmulTf32Scope(bool allowed) : before_(at::globalContext().allowTF32CuBLAS()) {
    at::globalContext().setAllowTF32CuBLAS(allowed);
  }
  ~MatmulTf32Scope() { at::globalContext().setAllowTF32CuBLAS(before_); }
  MatmulTf32Scope(const MatmulTf32Scope&) = delete;
  MatmulTf32Scope& operator=(const MatmulTf32Scope&) = delete;

 private:
  bool before_;
};

torch::ScalarType element_type(const std::string& precision) {
  if (precision == "bf16") return torch::kBFloat16;
  if (precision == "fp16") return torch::kHalf;
  return torch::kFloat32;
}

void wait_for(const torch::Device& device) {
  if (device.is_cuda()) gpu::synchronize(device.index());
}

}  // namespace

int64_t default_peak_size(const torch::Device& device) { return device.is_cuda() ? 8192 : 2048; }

std::vector<std::string> default_peak_precisions(const torch::Device& device) {
  return device.is_cuda() ? kPeakPrecisions : std::vector<std::string>{"fp32"};
}

PeakRate measure_peak_rate(const torch::Device& device, const std::string& precision,
                           const PeakOptions& options) {
  if (std::find(kPeakPrecisions.begin(), kPeakPrecisions.end(), precision) == kPeakPrecisions.end())
    throw std::invalid_argument("unknown precision '" + precision + "'");
  if (options.size < 1 || options.steps < 1 || options.warmup < 0)
    throw std::invalid_argument(
        "a peak measurement needs a size and a step count of at least 1, and no negative warm-up");
  PeakRate rate;
  rate.precision = precision;
  rate.size = options.size;
  const auto n = static_cast<double>(options.size);
  rate.flops = 2 * n * n * n;
  if (precision == "tf32" && !device.is_cuda()) {
    rate.skipped = "TF32 is a format of NVIDIA's tensor cores; a CPU has no such mode";
    return rate;
  }
  if (precision == "fp16" && !device.is_cuda()) {
    rate.skipped = "fp16 runs on CUDA devices only here, as in a sweep";
    return rate;
  }
  torch::NoGradGuard no_grad;
  const MatmulTf32Scope tf32(precision == "tf32");
  const auto options_on_device = torch::TensorOptions().device(device).dtype(element_type(precision));
  // Normal values, made once: no zeros or denormals for a fast path to find.
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({options.size, options.size}, options_on_device);
  const torch::Tensor b = torch::randn({options.size, options.size}, options_on_device);
  torch::Tensor c = torch::empty({options.size, options.size}, options_on_device);
  const std::unique_ptr<StepTimer> timer = make_step_timer(device);
  rate.timer = timer->method();
  try {
    for (int i = 0; i < options.warmup; ++i) torch::mm_out(c, a, b);
    wait_for(device);
    timer->reserve(options.steps);
    for (int i = 0; i < options.steps; ++i) {
      timer->start(i);
      torch::mm_out(c, a, b);
      timer->stop(i);
    }
    wait_for(device);
  } catch (const std::exception& error) {
    const auto missing = unsupported_operation(error);
    if (!missing) throw;
    rate.skipped = "LibTorch cannot run it here: " + *missing;
    return rate;
  }
  rate.times_ms.resize(static_cast<std::size_t>(options.steps));
  for (int i = 0; i < options.steps; ++i) rate.times_ms[static_cast<std::size_t>(i)] = timer->elapsed_ms(i);
  const Summary s = summarize(rate.times_ms);
  const auto tflops = [&rate](double ms) { return ms > 0 ? rate.flops / (ms / 1e3) / 1e12 : 0.0; };
  rate.median_ms = s.median;
  rate.median_tflops = tflops(s.median);
  rate.low_tflops = tflops(s.p90);
  rate.high_tflops = tflops(s.p10);
  return rate;
}

Json to_json(const PeakRate& rate) {
  Json j = {{"precision", rate.precision}, {"size", rate.size}};
  if (!rate.skipped.empty()) {
    j["skipped"] = rate.skipped;
    return j;
  }
  j["flops_per_product"] = rate.flops;
  j["median_tflops"] = rate.median_tflops;
  j["p10_tflops"] = rate.low_tflops;
  j["p90_tflops"] = rate.high_tflops;
  j["median_ms"] = rate.median_ms;
  j["timer"] = rate.timer;
  j["times_ms"] = rate.times_ms;
  return j;
}

}  // namespace batchscope
