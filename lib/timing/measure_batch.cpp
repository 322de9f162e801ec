#include "lib/timing/measure_batch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "lib/common/statistics.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"

namespace batchscope {
namespace {

void reset_peak_memory(const torch::Device& device) {
  if (device.is_cuda()) gpu::reset_peak_memory(device.index());
  if (!device.is_cuda() && cpu_memory::installed()) cpu_memory::reset_peak();
}

std::optional<int64_t> peak_memory(const torch::Device& device) {
  if (device.is_cuda()) return gpu::peak_memory_bytes(device.index());
  if (cpu_memory::installed()) return cpu_memory::peak_bytes();
  return std::nullopt;
}

// Counters tick every few milliseconds: a window shorter than power.min_window_ms is lengthened with
// more of the same steps, run as the timed ones are, so the energy per step is read to within a few
// percent. Returns the steps the window covered.
int64_t lengthen_window(Workload& workload, StepTimer& timer, const power::EnergyMeter& meter, double min_window_ms,
                        int timed_steps, double median_ms) {
  int64_t steps = timed_steps;
  while (meter.elapsed_ms() < min_window_ms) {
    const double remaining_ms = min_window_ms - meter.elapsed_ms();
    const int more = static_cast<int>(std::clamp(std::ceil(remaining_ms / std::max(median_ms, 1e-3)), 1.0, 1000.0));
    run_timed_steps(workload, timer, more);
    steps += more;
  }
  return steps;
}

}  // namespace

BatchMeasurement measure_batch(Workload& workload, StepTimer& timer, const ExperimentConfig& e, int64_t batch_size,
                               power::DevicePower& power, const StepObserver* observer) {
  const torch::Device& device = workload.device();
  BatchMeasurement result;
  auto mark = std::chrono::steady_clock::now();
  // Seconds since the last mark, and a new mark.
  const auto lap = [&mark] {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return seconds;
  };
  workload.prepare_batch(batch_size);
  result.prepare_s = lap();
  workload.warm_up(e.warmup_steps, observer);
  result.warm_up_s = lap();
  reset_peak_memory(device);
  std::optional<power::EnergyMeter> meter;
  PointEnergy energy;
  if (power.source) {
    energy.start = power.source->telemetry();
    meter.emplace(*power.source);
    meter->begin();
  }
  result.energy_s = lap();  // the meter's start reading
  result.steps = run_timed_steps(workload, timer, e.timed_steps, observer);
  result.timed_s = lap();
  if (meter) {
    energy.steps = lengthen_window(workload, timer, *meter, power.min_window_ms, e.timed_steps,
                                   summarize(result.steps.times_ms).median);
    try {
      const power::EnergyWindow window = meter->end();
      energy.end = power.source->telemetry();
      energy.method = window.method;
      energy.scope = power.source->scope();
      energy.resolution_ms = power.update_ms;  // as observed: boards update their counters at different rates
      energy.window_ms = window.window_ms;
      energy.joules = window.joules;
      if (power.idle) energy.idle_power_w = power.idle->avg_power_w;
      derive_energy_figures(energy, batch_size);
      result.energy = energy;
    } catch (const std::runtime_error& lost) {
      // A reading that failed mid-sweep costs this point its energy, not the sweep its times.
      spdlog::warn("{}: batch size {}: {}", e.name, batch_size, lost.what());
    }
  }
  result.peak_memory_bytes = peak_memory(device);
  result.energy_s += lap();  // the window's lengthening steps and its end reading
  return result;
}

}  // namespace batchscope
