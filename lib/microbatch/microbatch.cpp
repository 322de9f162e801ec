#include "lib/microbatch/microbatch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>

#include "lib/common/errors.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/microbatch/gradient_accumulation.h"
#include "lib/timing/autocast.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"
#include "models/splittable_conv.h"

namespace batchscope {
namespace {

int device_index(const torch::Device& device) { return device.has_index() ? device.index() : 0; }

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) gpu::synchronize(device_index(device));
}

void reset_peak(const torch::Device& device) {
  if (device.is_cuda()) {
    gpu::reset_peak_memory(device_index(device));
  } else if (cpu_memory::installed()) {
    cpu_memory::reset_peak();
  }
}

std::optional<int64_t> peak(const torch::Device& device) {
  if (device.is_cuda()) return gpu::peak_memory_bytes(device_index(device));
  if (cpu_memory::installed()) return cpu_memory::peak_bytes();
  return std::nullopt;
}

// A synthetic batch of the model's kind (images, tokens, spectrograms), made on the host and copied.
models::Batch device_batch(const models::ModelSpec& spec, int64_t batch,
                           const std::vector<int64_t>& sample_shape, int64_t classes,
                           const torch::Device& device, bool channels_last) {
  const models::Batch host = spec.synthetic_batch(batch, sample_shape, classes);
  return {in_memory_format(host.inputs.to(device), channels_last), host.targets.to(device)};
}

std::vector<int64_t> with_batch(int64_t batch, const std::vector<int64_t>& sample_shape) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return shape;
}

// Runs `work` warmup times untimed, then `repeats` times each between its own timestamps, with
// `before` (untimed) ahead of every run and the device synchronised after each.
std::vector<double> time_runs(const torch::Device& device, int warmup, int repeats,
                              const std::function<void()>& before, const std::function<void()>& work) {
  for (int i = 0; i < warmup; ++i) {
    before();
    work();
  }
  synchronize(device);
  auto timer = make_step_timer(device);
  timer->reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    before();
    timer->start(i);
    work();
    timer->stop(i);
    synchronize(device);
  }
  std::vector<double> times(static_cast<size_t>(repeats));
  for (int i = 0; i < repeats; ++i) times[static_cast<size_t>(i)] = timer->elapsed_ms(i);
  return times;
}

LayerCost cost_entry(const std::string& name, const std::vector<int64_t>& shape, int64_t size,
                     const std::vector<double>& times) {
  const Summary s = summarize(times);
  return {name, shape, size, s.median, s.p10, s.p90};
}

// The cost an earlier run measured for this layer, input shape and size, or none.
const LayerCost* known_cost(const CostKeeping& keeping, const std::string& name,
                            const std::vector<int64_t>& shape, int64_t size) {
  for (const LayerCost& c : keeping.known) {
    if (c.layer == name && c.input_shape == shape && c.micro_batch == size) return &c;
  }
  return nullptr;
}

// Before a cost is measured: the study stops here where asked, with `measured` of `total` costs kept.
void stop_if_asked(const CostKeeping& keeping, int64_t measured, int64_t total) {
  if (keeping.stop_requested && keeping.stop_requested()) throw MicroBatchStopped(measured, total);
}

void keep(const CostKeeping& keeping, const LayerCost& cost) {
  if (keeping.on_cost) keeping.on_cost(cost);
}

}  // namespace

MicroBatchStopped::MicroBatchStopped(int64_t measured, int64_t total)
    : std::runtime_error("stopped with " + std::to_string(measured) + " of " + std::to_string(total) +
                         " costs measured"),
      measured(measured),
      total(total) {}

const char* const kWorkspaceLimitNote =
    "LibTorch sets no cuDNN workspace limit of its own: cuDNN chooses within what it asks for "
    "(cudnn_benchmark decides whether it searches). PyTorch's cuDNN v8 path caps the workspace at "
    "CUDNN_CONV_WSCAP_DBG MiB where that variable is set, the limit mu-cuDNN's micro-batches trade against; "
    "its value is recorded when set.";

std::optional<std::string> cudnn_workspace_cap_env() {
  const char* value = std::getenv("CUDNN_CONV_WSCAP_DBG");
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string to_string(MicroBatchMode mode) { return mode == MicroBatchMode::Layer ? "layer" : "model"; }

std::vector<int64_t> candidate_sizes(const std::vector<MicroBatchPolicy>& policies, int64_t batch) {
  std::set<int64_t> sizes;
  for (MicroBatchPolicy p : policies) {
    for (int64_t s : candidate_sizes(p, batch)) sizes.insert(s);
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<std::pair<std::string, std::vector<int64_t>>> record_convolution_inputs(
    models::Network& network, const std::vector<int64_t>& sample_shape, const torch::Device& device,
    Precision precision, int64_t sample_batch, bool channels_last) {
  auto convs = models::convolutions(network);
  for (auto& [name, conv] : convs) conv->record_input_shape(true);
  {
    torch::NoGradGuard no_grad;
    AutocastScope autocast(precision, device);
    network.forward(in_memory_format(
        torch::randn(with_batch(sample_batch, sample_shape), torch::TensorOptions(device)), channels_last));
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for (auto& [name, conv] : convs) {
    conv->record_input_shape(false);
    out.emplace_back(name, conv->input_shape());
  }
  return out;
}

CostMeasurement measure_layer_costs(models::Network& network, const std::vector<int64_t>& sample_shape,
                                    const torch::Device& device, const std::vector<int64_t>& sizes,
                                    int warmup, int repeats, Precision precision, bool channels_last,
                                    const CostKeeping& keeping) {
  record_convolution_inputs(network, sample_shape, device, precision, 2, channels_last);
  CostMeasurement out;
  auto convolutions = models::convolutions(network);
  const auto total = static_cast<int64_t>(convolutions.size() * sizes.size());
  int64_t measured = 0;
  for (auto& named : convolutions) {
    const std::string& name = named.first;
    auto& conv = named.second;  // a plain reference, so the timed lambdas can capture it
    const std::vector<int64_t>& shape = conv->input_shape();
    const std::vector<int64_t> saved = conv->micro_batches();
    conv->set_micro_batches({});
    CostTable table{name, {}};
    for (int64_t m : sizes) {
      if (const LayerCost* known = known_cost(keeping, name, shape, m)) {
        out.entries.push_back(*known);
        table.ms[m] = known->median_ms;
        ++measured;
        continue;
      }
      stop_if_asked(keeping, measured, total);
      try {
        // The input in the type the layer sees in a step; its forward under autocast as in the step.
        const auto options = torch::TensorOptions(device).dtype(conv->input_dtype());
        torch::Tensor x =
            in_memory_format(torch::randn(with_batch(m, shape), options), channels_last).requires_grad_(true);
        torch::Tensor grad;
        {
          torch::NoGradGuard no_grad;
          AutocastScope autocast(precision, device);
          grad = torch::randn_like(conv->forward(x));
        }
        const auto times = time_runs(
            device, warmup, repeats,
            [&] {
              x.mutable_grad().reset();
              clear_gradients(*conv);
            },
            [&] {
              torch::Tensor output;
              {
                AutocastScope autocast(precision, device);
                output = conv->forward(x);
              }
              output.backward(grad);
            });
        out.entries.push_back(cost_entry(name, shape, m, times));
        table.ms[m] = out.entries.back().median_ms;
        keep(keeping, out.entries.back());
        ++measured;
      } catch (const c10::Error& error) {
        // Out of memory at a large size (or an operation LibTorch lacks in this precision), as model
        // mode: the size is skipped for this layer, with the reason, and the study goes on. Any other
        // error is a fault, not a size to skip.
        if (!is_out_of_memory(error) && !unsupported_operation(error)) throw;
        clear_gradients(*conv);
        if (device.is_cuda()) gpu::empty_cache();
        out.skipped.push_back(name + " micro-batch " + std::to_string(m) + ": " +
                              error.what_without_backtrace());
      }
    }
    clear_gradients(*conv);
    conv->set_micro_batches(saved);
    out.tables.push_back(table);
  }
  return out;
}

CostMeasurement measure_model_costs(models::Network& network, const models::ModelSpec& spec,
                                    const std::vector<int64_t>& sample_shape, int64_t classes,
                                    const torch::Device& device, const std::vector<int64_t>& sizes,
                                    int warmup, int repeats, Precision precision,
                                    std::optional<double> loss_scale, bool channels_last,
                                    const CostKeeping& keeping) {
  CostMeasurement out;
  CostTable table{"model", {}};
  // A step's loss scaler multiplies the loss by its scale before backward; its first scale stands in.
  const torch::Tensor scale =
      torch::full({}, loss_scale.value_or(1.0), torch::TensorOptions(device).dtype(torch::kFloat));
  // Batch norm cannot train on one value per channel: micro-batches below that size are never run.
  const int64_t smallest = models::smallest_train_batch(spec, sample_shape, classes);
  const auto total = static_cast<int64_t>(sizes.size());
  int64_t measured = 0;
  for (int64_t m : sizes) {
    if (m < smallest) {
      out.skipped.push_back("micro-batch " + std::to_string(m) + ": below " + std::to_string(smallest) +
                            ", the smallest batch " + spec.name + " can train at on this input (batch norm)");
      continue;
    }
    if (const LayerCost* known = known_cost(keeping, "model", sample_shape, m)) {
      out.entries.push_back(*known);
      table.ms[m] = known->median_ms;
      ++measured;
      continue;
    }
    stop_if_asked(keeping, measured, total);
    const models::Batch batch = device_batch(spec, m, sample_shape, classes, device, channels_last);
    const torch::Tensor& x = batch.inputs;
    const torch::Tensor& y = batch.targets;
    try {
      const auto times = time_runs(
          device, warmup, repeats, [&] { clear_gradients(network); },
          [&] {
            torch::Tensor loss;
            {
              AutocastScope autocast(precision, device);
              loss = network.loss(network.forward(x), y);
            }
            (loss_scale ? loss * scale : loss).backward();
          });
      out.entries.push_back(cost_entry("model", sample_shape, m, times));
      table.ms[m] = out.entries.back().median_ms;
      keep(keeping, out.entries.back());
      ++measured;
    } catch (const c10::Error& error) {
      if (!is_out_of_memory(error) && !unsupported_operation(error)) throw;
      out.skipped.push_back("micro-batch " + std::to_string(m) + ": " + error.what_without_backtrace());
    }
  }
  clear_gradients(network);
  out.tables.push_back(table);
  return out;
}

std::vector<SplitPlan> plan_layers(const CostMeasurement& costs, int64_t batch, MicroBatchPolicy policy) {
  std::vector<SplitPlan> plans;
  for (const CostTable& table : costs.tables) plans.push_back(plan_split(table, batch, policy));
  return plans;
}

void apply_plans(models::Network& network, const std::vector<SplitPlan>& plans) {
  for (auto& [name, conv] : models::convolutions(network)) {
    const std::string& wanted = name;
    const auto plan =
        std::find_if(plans.begin(), plans.end(), [&](const SplitPlan& p) { return p.name == wanted; });
    TORCH_CHECK(plan != plans.end(), "no micro-batch plan for convolution ", name);
    conv->set_micro_batches(plan->split);
  }
}

void clear_micro_batches(models::Network& network) {
  for (auto& [name, conv] : models::convolutions(network)) conv->set_micro_batches({});
}

}  // namespace batchscope

namespace batchscope {
namespace {

struct PairedSteps {
  MeasuredSteps undivided, planned;
};

// Alternates single undivided and planned train steps of the workload, so that drift (clocks,
// allocator, caches) falls on both alike; `configure(planned)` switches between them outside the
// timed region. Steps whose optimizer step the loss scaler skipped are counted per side.
PairedSteps paired_steps(Workload& workload, StepTimer& timer, const MicroBatchOptions& o,
                         const std::function<void(bool)>& configure) {
  const torch::Device& device = workload.device();
  for (bool planned : {false, true}) {
    configure(planned);
    workload.warm_up(o.warmup);
  }
  std::vector<double> times[2];
  std::optional<int64_t> peaks[2], skipped[2];
  for (int i = 0; i < o.steps; ++i) {
    for (int planned = 0; planned < 2; ++planned) {
      configure(planned == 1);
      synchronize(device);
      reset_peak(device);
      const TimedSteps step = run_timed_steps(workload, timer, 1);
      times[planned].push_back(step.times_ms.front());
      if (step.skipped_steps) skipped[planned] = skipped[planned].value_or(0) + *step.skipped_steps;
      const auto p = peak(device);
      if (p) peaks[planned] = std::max(peaks[planned].value_or(0), *p);
    }
  }
  return {{summarize(times[0]), peaks[0], skipped[0]}, {summarize(times[1]), peaks[1], skipped[1]}};
}

void check_options(const ExperimentConfig& e, const MicroBatchOptions& o) {
  auto refuse = [](const std::string& text) { throw std::invalid_argument(text); };
  if (o.batch < 1) refuse("the mini-batch to split must hold 1 sample or more");
  if (o.policies.empty()) refuse("no micro-batch policy given");
  if (o.steps < 1) refuse("at least one timed step is needed");
  if (o.repeats < 1) refuse("at least one timed run per cost is needed");
  if (o.warmup < 0) refuse("warm-up runs cannot be negative");
  if (e.phase != Phase::Train) refuse("micro-batching is planned for training steps (phase train)");
}

// Layer mode: steps with every convolution split as planned against steps with none split, in pairs,
// then the gradients of the two on one batch.
void measure_layer_split(PolicyOutcome& outcome, Workload& workload, StepTimer& timer, const MicroBatchOptions& o,
                         const torch::Tensor& x, const torch::Tensor& y) {
  models::Network& network = workload.network();
  const PairedSteps measured = paired_steps(workload, timer, o, [&](bool planned) {
    if (planned) {
      apply_plans(network, outcome.plans);
    } else {
      clear_micro_batches(network);
    }
  });
  clear_micro_batches(network);
  DropoutOff dropout_off(network);
  const auto whole = gradients_of(network, x, y, {o.batch});
  apply_plans(network, outcome.plans);
  const auto planned = gradients_of(network, x, y, {o.batch});
  clear_micro_batches(network);
  outcome.gradient_difference = relative_l2(planned, whole);
  outcome.undivided = measured.undivided;
  outcome.planned = measured.planned;
}

// Model mode: train steps over accumulated micro-batches against undivided ones, in pairs; both are
// the workload's own steps (precision, loss scaling, optimizer), so only the split differs.
void measure_model_split(PolicyOutcome& outcome, Workload& workload, StepTimer& timer,
                         const MicroBatchOptions& o, const torch::Tensor& x, const torch::Tensor& y) {
  const std::vector<int64_t>& split = outcome.plans.front().split;
  const PairedSteps measured = paired_steps(workload, timer, o, [&](bool planned) {
    workload.set_micro_batches(planned ? split : std::vector<int64_t>{});
  });
  workload.set_micro_batches({});
  outcome.gradient_difference = gradient_relative_difference(workload.network(), x, y, split);
  outcome.undivided = measured.undivided;
  outcome.planned = measured.planned;
}

}  // namespace

MicroBatchStudy run_microbatch_study(const ExperimentConfig& experiment, const MicroBatchOptions& o) {
  check_options(experiment, o);
  MicroBatchStudy study;
  study.experiment = experiment;
  study.experiment.batch_sizes = {o.batch};
  study.experiment.warmup_steps = o.warmup;
  study.experiment.timed_steps = o.steps;
  study.options = o;
  const torch::Device device(experiment.device);
  study.timer_method = make_step_timer(device)->method();
  Workload workload(study.experiment, device);
  models::Network& network = workload.network();
  study.batch_norm = has_batch_norm(network);
  const bool layer = o.mode == MicroBatchMode::Layer;

  if (layer && models::convolutions(network).empty()) {
    // A TorchScript file's convolutions are its own code's, which no split can reach from here.
    throw UserError(located(
        "command line", 0,
        "layer mode splits the convolution layers of the zoo's models and " + experiment.model +
            (experiment.model_file ? " is a TorchScript file, whose layers are its own code" : " has none"),
        "use --mode model (gradient accumulation)"));
  }
  const models::ModelSpec* spec = experiment_model(experiment);
  TORCH_CHECK(spec != nullptr, "unknown model ", experiment.model, " reached micro-batching");

  const std::vector<int64_t> sizes = candidate_sizes(o.policies, o.batch);
  const Precision precision = experiment.precision;
  study.costs = layer ? measure_layer_costs(network, experiment.input_shape, device, sizes, o.warmup,
                                            o.repeats, precision, experiment.channels_last, o.keeping)
                      : measure_model_costs(network, *spec, experiment.input_shape, experiment.classes,
                                            device, sizes, o.warmup, o.repeats, precision,
                                            workload.loss_scaler() != nullptr
                                                ? std::optional<double>(experiment.loss_scaler.init_scale)
                                                : std::nullopt,
                                            experiment.channels_last, o.keeping);

  // One fixed batch for model-mode steps and for every gradient comparison.
  torch::manual_seed(experiment.seed);
  const models::Batch fixed = device_batch(*spec, o.batch, experiment.input_shape, experiment.classes, device,
                                           experiment.channels_last);
  const torch::Tensor& x = fixed.inputs;
  const torch::Tensor& y = fixed.targets;

  workload.prepare_batch(o.batch);
  if (!layer && study.batch_norm && o.batch >= 4) {
    study.halves_gradient_difference =
        gradient_relative_difference(network, x, y, {o.batch - o.batch / 2, o.batch / 2});
  }
  auto timer = make_step_timer(device);

  for (MicroBatchPolicy policy : o.policies) {
    PolicyOutcome outcome;
    outcome.policy = policy;
    outcome.plans = plan_layers(study.costs, o.batch, policy);
    for (const SplitPlan& p : outcome.plans) {
      outcome.predicted_undivided_ms += p.undivided_ms;
      outcome.predicted_planned_ms += p.predicted_ms;
    }
    outcome.predicted_speedup =
        outcome.predicted_planned_ms > 0 ? outcome.predicted_undivided_ms / outcome.predicted_planned_ms : 0;
    if (layer) {
      measure_layer_split(outcome, workload, *timer, o, x, y);
    } else {
      measure_model_split(outcome, workload, *timer, o, x, y);
    }
    outcome.measured_speedup = outcome.planned.time_ms.median > 0
                                   ? outcome.undivided.time_ms.median / outcome.planned.time_ms.median
                                   : 0;
    study.outcomes.push_back(outcome);
  }
  return study;
}

}  // namespace batchscope
