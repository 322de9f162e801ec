#include "lib/sweep_runner.h"

#include <spdlog/spdlog.h>

#include <torch/version.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "data/datasets.h"
#include "lib/cpu_memory.h"
#include "lib/environment.h"
#include "lib/errors.h"
#include "lib/gpu.h"
#include "lib/power/device_power.h"
#include "lib/power/energy_meter.h"
#include "lib/progress.h"
#include "lib/run_store.h"
#include "lib/step_runner.h"
#include "lib/step_timer.h"
#include "models/flop_tally.h"
#include "models/registry.h"

namespace batchscope {
namespace {

// The key whose value decides the input shape: the input given, else the sequence length, else the model.
std::string input_key(const ExperimentConfig& e) {
  for (const char* key : {"input", "seq_len", "data"}) {
    if (e.origins.count(key)) return key;
  }
  return "model";
}

void check_experiment(const ExperimentConfig& e) {
  const models::ModelSpec* spec = models::find_model(e.model);
  if (spec == nullptr) {
    throw UserError(located_value(e, "model", "unknown model " + e.model, "use one of " + models::known_model_names()));
  }
  int64_t smallest = 1;
  try {
    spec->forward_flops(e.input_shape, e.classes);
    if (e.phase == Phase::Train) smallest = models::smallest_train_batch(*spec, e.input_shape, e.classes);
  } catch (const std::invalid_argument& bad) {
    std::string reason = bad.what();  // a sentence of the model's own that already says what it needs
    if (!reason.empty() && reason.back() == '.') reason.pop_back();
    throw UserError(located_value(e, input_key(e), reason, ""));
  }
  const int64_t first = e.batch_to_max ? e.batch_to_max->from
                        : e.batch_sizes.empty() ? smallest
                                                : *std::min_element(e.batch_sizes.begin(), e.batch_sizes.end());
  if (first < smallest) {
    throw UserError(located_value(
        e, "batch",
        e.model + " cannot train at batch size " + std::to_string(first) + " on a " +
            models::shape_text(e.input_shape) + " input: a batch norm layer sees a 1x1 activation there, "
            "and normalising one value per channel is undefined",
        "start the batch sizes at " + std::to_string(smallest) + ", or give a larger input"));
  }
  const torch::Device device(e.device);
  if (device.is_cuda()) {
    const int count = gpu::device_count();
    if (count == 0) {
      throw UserError(
          located_value(e, "device",
                        "device " + e.device + " is asked for but no CUDA device is usable here" +
                            (gpu::built_with_cuda() ? "" : " (this batchscope was built with a CPU-only LibTorch)"),
                        "use device: cpu, or run on a machine with a GPU and a CUDA build of batchscope"));
    }
    if (device.index() >= count) {
      throw UserError(located_value(e, "device",
                                    "device " + e.device + " does not exist, this machine has " +
                                        std::to_string(count) + " CUDA device(s)",
                                    "use cuda:0 to cuda:" + std::to_string(count - 1)));
    }
  } else if (e.precision == Precision::FP16) {
    throw UserError(located_value(e, "precision", "fp16 autocast is only available on CUDA devices",
                                  "use precision: bf16 or fp32 on the CPU"));
  }
  if (data::is_real_data(e.data)) data::locate_dataset(e.data);  // a UserError naming what is missing
  if (e.channels_last && e.input_shape.size() != 3) {
    throw UserError(located_value(e, "channels_last", "channels_last needs image inputs of shape [C, H, W]",
                                  "set channels_last: false for this model"));
  }
}

// A device's power source for the sweep, with its idle baseline; source is null (and reason says why)
// where energy cannot be measured or was not asked for.
struct DevicePower {
  std::unique_ptr<power::PowerSource> source;
  std::string reason;
  std::optional<power::EnergyWindow> idle;
  double update_ms = 0;  // how often the source's reading was seen to change
  double min_window_ms = 0;
};
using PowerByDevice = std::map<std::string, DevicePower>;

PowerByDevice open_power(const SweepConfig& config, const SweepOptions& options) {
  PowerByDevice out;
  for (const ExperimentConfig& e : config.experiments) {
    if (out.count(e.device)) continue;
    DevicePower& p = out[e.device];
    if (!options.measure_energy) {
      p.reason = "energy measurement was turned off (--no-energy).";
      continue;
    }
    p.source = options.open_power ? options.open_power(torch::Device(e.device), p.reason)
                                  : power::open_power_source(torch::Device(e.device), p.reason);
    if (!p.source) {
      spdlog::info("energy on {}: not measured: {}", e.device, p.reason);
      continue;
    }
    // 20 counter updates per window: the rounding at its two edges stays within 5% (about 2% typically).
    p.update_ms = power::observed_update_ms(*p.source);
    p.min_window_ms =
        options.min_energy_window_ms > 0 ? options.min_energy_window_ms : std::max(100.0, 20 * p.update_ms);
    if (options.idle_seconds > 0) {
      const torch::Device device(e.device);
      if (device.is_cuda()) gpu::synchronize(device.index());
      p.idle = power::measure_idle(*p.source, options.idle_seconds);
      spdlog::info("energy on {}: {} ({}), idle {:.1f} W", e.device, p.source->method(), p.source->scope(),
                   p.idle->avg_power_w);
    } else {
      spdlog::info("energy on {}: {} ({}), no idle baseline", e.device, p.source->method(),
                   p.source->scope());
    }
  }
  return out;
}

Json power_context(PowerByDevice& power) {
  Json out = Json::object();
  for (auto& [device, p] : power) {
    Json entry = Json(power::describe_power(p.source.get(), p.reason));
    if (p.source) {
      entry["update_period_ms"] = p.update_ms;
      entry["min_window_ms"] = p.min_window_ms;
      entry["idle"] = p.idle ? Json{{"power_w", p.idle->avg_power_w},
                                    {"window_ms", p.idle->window_ms},
                                    {"joules", p.idle->joules}}
                             : Json(nullptr);
    }
    out[device] = entry;
  }
  return out;
}

struct BatchResult {
  TimedSteps steps;
  std::optional<int64_t> peak_memory_bytes;
  std::optional<PointEnergy> energy;
};

BatchResult measure_batch(Workload& workload, StepTimer& timer, const ExperimentConfig& e, int64_t batch_size,
                          DevicePower& power) {
  const torch::Device& device = workload.device();
  workload.prepare_batch(batch_size);
  workload.warm_up(e.warmup_steps);
  if (device.is_cuda()) gpu::reset_peak_memory(device.index());
  if (!device.is_cuda() && cpu_memory::installed()) cpu_memory::reset_peak();
  BatchResult result;
  std::optional<power::EnergyMeter> meter;
  PointEnergy energy;
  if (power.source) {
    energy.start = power.source->telemetry();
    meter.emplace(*power.source);
    meter->begin();
  }
  result.steps = run_timed_steps(workload, timer, e.timed_steps);
  power::EnergyWindow window;
  if (meter) {
    // Counters tick every few milliseconds: short windows are lengthened with more of the same steps,
    // still one at a time, so the energy per step is read to within a few percent.
    energy.steps = e.timed_steps;
    while (meter->elapsed_ms() < power.min_window_ms) {
      workload.stage();
      workload.step();
      workload.synchronize();
      ++energy.steps;
    }
    try {
      window = meter->end();
    } catch (const std::runtime_error& lost) {
      // A reading that failed mid-sweep costs this point its energy, not the sweep its times.
      spdlog::warn("{}: batch size {}: {}", e.name, batch_size, lost.what());
      meter.reset();
    }
  }
  if (meter) {
    energy.end = power.source->telemetry();
    energy.method = window.method;
    energy.scope = power.source->scope();
    energy.resolution_ms = power.update_ms;  // as observed: boards update their counters at different rates
    energy.window_ms = window.window_ms;
    energy.joules = window.joules;
    if (power.idle) energy.idle_power_w = power.idle->avg_power_w;
    result.energy = energy;
  }
  if (device.is_cuda()) result.peak_memory_bytes = gpu::peak_memory_bytes(device.index());
  if (!device.is_cuda() && cpu_memory::installed()) result.peak_memory_bytes = cpu_memory::peak_bytes();
  return result;
}

Json run_header(const SweepConfig& config, const SweepOptions& options, const Json& experiments, bool resumed,
                PowerByDevice& power) {
  Json header = context_record(resumed ? record::kResume : record::kRun, options.command_line,
                               {{"source", config.source}, {"experiments", experiments}});
  Json timers = Json::object();
  for (const ExperimentConfig& e : config.experiments) {
    if (timers.contains(e.device)) continue;
    auto timer = make_step_timer(torch::Device(e.device));
    timers[e.device] = {{"method", timer->method()}, {"overhead_ms", measure_timer_overhead_ms(*timer)}};
  }
  header["timers"] = timers;
  header["power"] = power_context(power);
  header["energy_note"] =
      "Energy is read once over the timed steps of a batch size together (lengthened by more steps to "
      "min_window_ms where they are shorter), because power counters tick every few milliseconds; "
      "j_per_step is that energy divided by energy_steps. *_above_idle fields subtract the idle "
      "baseline measured before the sweep.";
  return header;
}

}  // namespace

std::vector<int64_t> batch_order(const ExperimentConfig& e) {
  std::vector<int64_t> order = e.batch_sizes;
  if (e.order == BatchOrder::Shuffled) {
    // Fisher-Yates with the standard engine: the same seed gives the same order on every platform.
    std::mt19937_64 rng(e.seed);
    for (std::size_t i = order.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(rng() % i);
      std::swap(order[i - 1], order[j]);
    }
  }
  return order;
}

SweepConfig resolve_for_machine(const SweepConfig& config) {
  SweepConfig resolved = config;
  for (ExperimentConfig& e : resolved.experiments) {
    if (e.device == "auto") e.device = gpu::device_count() > 0 ? "cuda:0" : "cpu";
    if (e.device == "cuda") e.device = "cuda:0";
    check_experiment(e);
  }
  return resolved;
}

namespace {

// The training split of every dataset the experiments use, read once before anything is written.
using LoadedData = std::map<std::string, std::shared_ptr<data::DatasetSplits>>;

LoadedData load_data(const SweepConfig& config) {
  LoadedData loaded;
  for (const ExperimentConfig& e : config.experiments) {
    if (!data::is_real_data(e.data)) continue;
    auto& splits = loaded[e.data];
    if (!splits) {
      splits = std::make_shared<data::DatasetSplits>(data::load_dataset(data::locate_dataset(e.data)));
      spdlog::info("{}: {} training images", e.data, splits->train.size());
    }
    const int64_t images = splits->train.size();
    for (int64_t b : e.batch_sizes) {
      if (b > images) {
        throw UserError(located_value(e, "batch",
                                      "batch size " + std::to_string(b) + " is larger than the " +
                                          std::to_string(images) + " training images of " + e.data,
                                      "use batch sizes up to " + std::to_string(images)));
      }
    }
  }
  return loaded;
}

}  // namespace

SweepOutcome run_sweep(const SweepConfig& config, const SweepOptions& options,
                       std::ostream& progress_stream) {
  const LoadedData loaded = load_data(config);
  Json experiments = Json::array();
  for (const ExperimentConfig& e : config.experiments) experiments.push_back(Json(to_json(e)));
  RunStore store(options.out_dir, experiments, options.force);
  if (store.resuming()) spdlog::info("resuming the interrupted sweep in {}", options.out_dir);
  PowerByDevice power = open_power(config, options);
  store.write({run_header(config, options, experiments, store.resuming(), power)});

  Progress progress(progress_stream, options.show_progress);
  double total_work = 0;
  for (const ExperimentConfig& e : config.experiments) {
    for (int64_t b : e.batch_sizes) {
      if (!store.done(e.name, b)) total_work += static_cast<double>(b) * (e.warmup_steps + e.timed_steps);
    }
  }
  progress.begin_sweep(total_work);

  const auto stop_requested = [&] {
    return options.stop_requested != nullptr && options.stop_requested->load();
  };
  bool stopped = false;  // only where batch sizes were left undone
  const int count = static_cast<int>(config.experiments.size());
  for (int index = 0; index < count && !stopped; ++index) {
    const ExperimentConfig& e = config.experiments[static_cast<std::size_t>(index)];
    const torch::Device device(e.device);
    at::globalContext().setBenchmarkCuDNN(e.cudnn_benchmark);
    std::optional<int64_t> oom_at = store.out_of_memory_at(e.name);
    std::optional<std::string> unsupported;  // LibTorch's reason, once a step met an operation it lacks
    std::unique_ptr<Workload> workload;
    std::unique_ptr<StepTimer> timer = make_step_timer(device);

    for (int64_t batch_size : batch_order(e)) {
      if (store.done(e.name, batch_size)) continue;
      if (stop_requested()) {
        stopped = true;
        break;
      }
      const double work = static_cast<double>(batch_size) * (e.warmup_steps + e.timed_steps);
      // A size that is not run is recorded as skipped, with why.
      const auto skip = [&](const std::string& reason) {
        Json skipped = batch_record(record::kSkipped, e, e.device, batch_size);
        skipped["reason"] = reason;
        store.write({skipped});
        progress.work_done(work);
      };
      if (oom_at && batch_size > *oom_at) {
        skip("batch size " + std::to_string(*oom_at) + " ran out of memory");
        continue;
      }
      if (unsupported) {
        skip(*unsupported);
        continue;
      }
      std::vector<Json> records;
      try {
        if (!workload) {
          const auto found = loaded.find(e.data);
          workload =
              std::make_unique<Workload>(e, device, found == loaded.end() ? nullptr : &found->second->train);
        }
        progress.show(e.name, index + 1, count, batch_size, 0, e.timed_steps);
        const BatchResult result = measure_batch(*workload, *timer, e, batch_size, power.at(e.device));
        workload->release_batch();
        const TimedSteps& steps = result.steps;
        for (std::size_t i = 0; i < steps.times_ms.size(); ++i) {
          StepSample sample{steps.times_ms[i], std::nullopt};
          if (!steps.losses.empty()) sample.loss = steps.losses[i];
          records.push_back(
              step_record(e, e.device, batch_size, static_cast<int>(i), sample, result.peak_memory_bytes));
        }
        Json point = point_record(e, e.device, batch_size, steps.times_ms,
                                  workload->flops_per_step(batch_size), result.peak_memory_bytes);
        if (result.energy) add_energy_fields(point, batch_size, *result.energy);
        records.push_back(std::move(point));
      } catch (const std::exception& error) {
        if (const auto missing = unsupported_operation(error)) {
          // Not this size's fault: LibTorch cannot run the experiment here at all. Its sizes are
          // recorded as skipped with the reason, and the sweep goes on with the next experiment.
          workload.reset();
          unsupported = "LibTorch " + std::string(TORCH_VERSION) + " cannot run " + e.model + " " +
                        to_string(e.phase) + " in " + to_string(e.precision) + " on " + e.device + ": " + *missing;
          progress.finish();
          spdlog::warn("{}", located_value(e, "precision",
                                           "experiment " + e.name + ": " + *unsupported + "; its batch sizes are skipped",
                                           "use another precision or device for it"));
          skip(*unsupported);
          continue;
        }
        if (!is_out_of_memory(error)) throw;
        // Drop everything the failed step held, model and optimizer state included; a later smaller
        // size (shuffled order) builds them afresh.
        workload.reset();
        if (device.is_cuda()) gpu::empty_cache();
        oom_at = batch_size;
        progress.finish();
        spdlog::warn("{}: batch size {} does not fit on {}; larger sizes are skipped", e.name, batch_size,
                     e.device);
        Json oom = batch_record(record::kOom, e, e.device, batch_size);
        const std::string message = error.what();
        oom["message"] = message.substr(0, message.find('\n'));
        records = {oom};
      }
      store.write(records);
      progress.work_done(work);
      progress.show(e.name, index + 1, count, batch_size, e.timed_steps, e.timed_steps);
    }
  }
  SweepOutcome outcome;
  outcome.interrupted = stopped;
  if (!outcome.interrupted) {
    store.write({Json{{"type", record::kEnd}, {"time", iso8601_utc_now()}, {"complete", true}}});
  }
  progress.finish();

  outcome.jsonl_path = store.jsonl_path();
  outcome.csv_path = store.csv_path();
  outcome.resumed = store.resuming();
  outcome.records = store.read_all();
  return outcome;
}

}  // namespace batchscope
