#include "lib/microbatch/layer_peak.h"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include "lib/analysis/layer_rates.h"
#include "lib/analysis/tile_model.h"
#include "lib/common/statistics.h"
#include "lib/microbatch/gradient_accumulation.h"
#include "lib/microbatch/microbatch.h"
#include "lib/records/profile_records.h"
#include "lib/timing/autocast.h"
#include "lib/timing/profiled_steps.h"
#include "lib/timing/step_runner.h"
#include "models/layer_scope.h"
#include "models/registry.h"
#include "models/splittable_conv.h"

namespace batchscope {
namespace {

Precision autocast_precision(const std::string& precision) {
  if (precision == "bf16") return Precision::BF16;
  if (precision == "fp16") return Precision::FP16;
  return Precision::FP32;  // fp32 and tf32: fp32 tensors, TF32 as PeakSettings allows it
}

std::vector<int64_t> layer_batch_shape(int64_t batch, const std::vector<int64_t>& sample) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), sample.begin(), sample.end());
  return shape;
}

// A GEMM layer's module, as the step calls it, and what it takes: one sample's input and its type.
struct LayerModule {
  std::string kind;
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  std::vector<int64_t> input;
  torch::ScalarType input_type = torch::kFloat;
};

// The network's convolutions (their inputs recorded in one forward pass, as microbatch records them)
// and linear layers (a flat input of its features, in the type the layer before hands on), by name.
std::map<std::string, LayerModule> layer_modules(models::Network& network, const LayerPeakOptions& o,
                                                 const torch::Device& device, Precision precision,
                                                 bool channels_last) {
  std::map<std::string, LayerModule> out;
  record_convolution_inputs(network, o.input, device, precision, 2, channels_last);
  for (auto& [name, conv] : models::convolutions(network)) {
    auto* raw = conv.get();
    out[name] = {"conv", conv, [raw](const torch::Tensor& x) { return raw->forward(x); }, conv->input_shape(),
                 conv->input_dtype()};
  }
  const torch::ScalarType lower = precision == Precision::BF16   ? torch::kBFloat16
                                  : precision == Precision::FP16 ? torch::kHalf
                                                                 : torch::kFloat;
  for (const auto& item : network.named_modules("", /*include_self=*/false)) {
    auto* linear = item.value()->as<torch::nn::Linear>();
    if (linear == nullptr) continue;
    out[item.key()] = {"linear",
                       item.value(),
                       [linear](const torch::Tensor& x) { return linear->forward(x); },
                       {linear->options.in_features()},
                       lower};
  }
  return out;
}

// The layer's passes (the rates, one per pass) run `runs` times more under the profiler in one session,
// their times as a profiled step's layers have them.
void profile_pass_runs(const std::vector<PeakRate*>& rates, const torch::Device& device, int runs,
                       const std::function<void()>& before, const std::function<void()>& run) {
  if (runs < 1 || rates.empty()) return;
  std::vector<std::string> passes;
  for (const PeakRate* r : rates) {
    if (!r->skipped.empty()) return;  // LibTorch cannot run it here
    passes.push_back(r->layer.pass);
  }
  ProfiledRuns profiled = profile_layer_runs(device, runs, rates.front()->layer.name, passes, before, run);
  for (PeakRate* rate : rates) {
    const auto dropped = profiled.dropped.find(rate->layer.pass);
    if (dropped != profiled.dropped.end()) rate->profiled_dropped = dropped->second;
    std::vector<double>& ms = profiled.ms[rate->layer.pass];
    const double median = ms.empty() ? 0.0 : summarize(ms).median;
    if (median <= 0) continue;  // no time of the layer's own in that pass
    rate->profiled_ms = std::move(ms);
    rate->profiled_as = profiled.kernels ? "kernels" : "operators";
    rate->profiled_median_ms = median;
    rate->profiled_tflops = rate->flops / (median / 1e3) / 1e12;
    const auto kernels = profiled.kernels_per_run.find(rate->layer.pass);
    if (kernels != profiled.kernels_per_run.end()) rate->profiled_kernels = kernels->second;
    const std::vector<double>& layout = profiled.layout_ms[rate->layer.pass];
    if (!layout.empty()) rate->profiled_layout_ms = summarize(layout).median;
  }
}

}  // namespace

std::vector<PeakRate> measure_layer_peak_rates(const torch::Device& device, const std::string& precision,
                                               const std::string& phase,
                                               const std::vector<std::string>& memory_formats,
                                               const LayerPeakOptions& options) {
  if (std::find(kPeakPrecisions.begin(), kPeakPrecisions.end(), precision) == kPeakPrecisions.end())
    throw std::invalid_argument("unknown precision '" + precision + "'");
  if (phase != "train" && phase != "infer") throw std::invalid_argument("unknown phase '" + phase + "'");
  if (options.steps < 1 || options.warmup < 0 || options.batches.empty() || memory_formats.empty())
    throw std::invalid_argument(
        "a layer's peak needs batch sizes, a layout, at least 1 step and no negative warm-up");
  const models::ModelSpec* spec = models::find_model(options.model);
  if (spec == nullptr) throw std::invalid_argument("unknown model " + options.model);
  const std::vector<GemmLayer> layers = gemm_layers(options.model, options.input, options.classes);
  if (layers.empty()) {
    throw std::invalid_argument(options.model +
                                " is not laid out as convolution and linear layers (a sequence model)");
  }
  PeakRate base;
  base.operation = "layer";
  base.precision = precision;
  base.phase = phase;
  base.cudnn_benchmark = device.is_cuda() && options.cudnn_benchmark;
  base.skipped = peak_precision_unavailable(device, precision);
  if (!base.skipped.empty()) return {base};

  const bool training = phase == "train";
  const Precision autocast = autocast_precision(precision);
  const PeakSettings settings(/*tf32=*/precision == "tf32", base.cudnn_benchmark);
  std::vector<PeakRate> rates;
  for (const std::string& layout : memory_formats) {
    const bool channels_last = layout == "channels_last";
    torch::manual_seed(0);
    const std::shared_ptr<models::Network> network = spec->build(options.input, options.classes);
    network->to(device);
    if (channels_last) {
      torch::NoGradGuard no_grad;
      for (auto& p : network->parameters()) {
        if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
      }
    }
    training ? network->train() : network->eval();
    const std::map<std::string, LayerModule> modules =
        layer_modules(*network, options, device, autocast, channels_last);
    for (const int64_t batch : options.batches) {
      for (const GemmLayer& layer : layers) {
        const auto found = modules.find(layer.name);
        TORCH_CHECK(found != modules.end(), "the layer ", layer.name, " of ", options.model,
                    " is not a convolution or linear module of the network");
        const LayerModule& m = found->second;
        if (m.kind == "linear" && layout != memory_formats.front()) continue;
        const auto tensor_options = torch::TensorOptions(device).dtype(m.input_type);
        // The model's input needs no gradient; every later layer's input does.
        const torch::Tensor x =
            in_memory_format(torch::randn(layer_batch_shape(batch, m.input), tensor_options), channels_last)
                .requires_grad_(training && !layer.first);
        torch::Tensor output, grad;
        if (training) {
          torch::NoGradGuard no_grad;
          const AutocastScope scope(autocast, device);
          grad = torch::randn_like(m.forward(x));
        }
        // In the layer's scope, as the network opens it around the layer (it costs nothing unprofiled).
        const auto forward = [&] {
          const models::LayerScope layer_scope(layer.name);
          const AutocastScope scope(autocast, device);
          output = m.forward(x);
        };
        const auto rate_of = [&](const char* pass) {
          PeakRate r = base;
          r.memory_format = layout;
          r.layer = {layer.name, m.kind, pass, batch, m.input};
          r.flops = gemm_flops_per_sample(layer, pass) * static_cast<double>(batch);
          return r;
        };
        const auto clear = [&] {
          output = torch::Tensor();
          if (x.requires_grad()) x.mutable_grad().reset();
          clear_gradients(*m.module);
        };
        const auto timed = [&](const char* pass, const std::function<void()>& before,
                               const std::function<void()>& run) {
          PeakRate r = rate_of(pass);
          time_peak_runs(device, options.warmup, options.steps, r, before, run);
          return r;
        };
        if (!training) {
          const auto no_grad_forward = [&] {
            const torch::NoGradGuard no_grad;
            forward();
          };
          PeakRate f = timed(profile_pass::kForward, clear, no_grad_forward);
          profile_pass_runs({&f}, device, options.profiled_runs, clear, no_grad_forward);
          rates.push_back(std::move(f));
          continue;
        }
        const auto forward_again = [&] {
          clear();
          forward();
        };
        const auto backward = [&] { output.backward(grad); };
        PeakRate f = timed(profile_pass::kForward, clear, forward);
        PeakRate b = timed(profile_pass::kBackward, forward_again, backward);
        // One session for both passes: each backward run's forward, made before it in the layer's scope,
        // is a run of the forward pass, as the forward's timed runs are (after a clear).
        profile_pass_runs({&f, &b}, device, options.profiled_runs, forward_again, backward);
        rates.push_back(std::move(f));
        rates.push_back(std::move(b));
        clear();
      }
    }
  }
  return rates;
}

}  // namespace batchscope
