#include "lib/timing/measure_batch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "lib/common/limits.h"
#include "lib/common/statistics.h"
#include "lib/device/memory_peak.h"

namespace batchscope {
namespace {

// Counters tick every few milliseconds: a window shorter than power.min_window_ms is lengthened with
// more of the same steps, run as the timed ones are, so the energy per step is read to within a few
// percent. Returns the steps the window covered.
int64_t lengthen_window(Workload& workload, StepTimer& timer, const power::EnergyMeter& meter,
                        double min_window_ms, int timed_steps, double median_ms) {
  int64_t steps = timed_steps;
  while (meter.elapsed_ms() < min_window_ms) {
    const double remaining_ms = min_window_ms - meter.elapsed_ms();
    const int more = static_cast<int>(std::clamp(std::ceil(remaining_ms / std::max(median_ms, 1e-3)), 1.0, 1000.0));
    run_timed_steps(workload, timer, more, nullptr);
    steps += more;
  }
  return steps;
}

void append(TimedSteps& to, TimedSteps&& more) {
  to.times_ms.insert(to.times_ms.end(), more.times_ms.begin(), more.times_ms.end());
  to.host_ms.insert(to.host_ms.end(), more.host_ms.begin(), more.host_ms.end());
  to.losses.insert(to.losses.end(), more.losses.begin(), more.losses.end());
  if (more.skipped_steps) to.skipped_steps = to.skipped_steps.value_or(0) + *more.skipped_steps;
  if (more.loss_scale) to.loss_scale = more.loss_scale;
}

// steps: auto. Blocks of timed steps, each sized by next_auto_block, until it says stop. The first step
// runs alone, so that a slow model's first block already keeps to max_time. The observer sees one count
// across blocks, its total being the steps planned so far.
TimedSteps run_auto_steps(Workload& workload, StepTimer& timer, const ExperimentConfig& e,
                          const StepObserver* observer, std::string& stopped_by) {
  const auto first = static_cast<int64_t>(e.timed_steps);
  TimedSteps all;
  int64_t block = 1;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const auto done = static_cast<int>(all.times_ms.size());
    const int planned = done + static_cast<int>(std::max(block, first - done));
    const StepObserver counting = [observer, done, planned](StepPart part, int step, int) {
      if (observer != nullptr) (*observer)(part, done + step, planned);
    };
    append(all, run_timed_steps(workload, timer, static_cast<int>(block), &counting));
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const AutoStepsNext next = next_auto_block(*e.auto_steps, first, all.times_ms, elapsed_s);
    if (!next.stopped_by.empty()) {
      stopped_by = next.stopped_by;
      break;
    }
    block = next.block;
  }
  return all;
}

}  // namespace

AutoStepsNext next_auto_block(const AutoSteps& a, int64_t first_steps, const std::vector<double>& times_ms,
                              double elapsed_s) {
  const auto n = static_cast<int64_t>(times_ms.size());
  const double per_step_s = std::max(elapsed_s / static_cast<double>(std::max<int64_t>(n, 1)), 1e-9);
  double wanted = static_cast<double>(first_steps - n);
  if (n >= first_steps) {
    const double med = median(times_ms);
    const std::optional<Interval> ci = median_confidence_interval(times_ms);
    // Relative half-width of the interval; unknown (infinite) while it has too few steps.
    const double width = ci && med > 0 ? (ci->high - ci->low) / 2 / med : INFINITY;
    if (width <= a.ci_width && elapsed_s >= a.min_time_s) return {kStoppedByCiWidth, 0};
    // The interval narrows as 1/sqrt(n); min_time may want more; at most as many steps as have run.
    wanted = std::isfinite(width) ? static_cast<double>(n) * ((width / a.ci_width) * (width / a.ci_width) - 1)
                                  : static_cast<double>(n);
    wanted = std::min(std::max(wanted, (a.min_time_s - elapsed_s) / per_step_s), static_cast<double>(n));
  }
  if (elapsed_s >= a.max_time_s) return {kStoppedByMaxTime, 0};
  if (n >= limits::kMaxSteps) return {kStoppedByMaxSteps, 0};
  // At most half the time left, at the pace so far: a block planned to fill all of it overruns the
  // limit at any slowdown of the machine; with half, a steady pace ends within one step of the limit
  // and only a slowdown of more than twofold during a block overruns it.
  const double fit = std::max(std::floor(0.5 * (a.max_time_s - elapsed_s) / per_step_s), 1.0);
  const double block =
      std::clamp(std::ceil(std::min(wanted, fit)), 1.0, static_cast<double>(limits::kMaxSteps - n));
  return {"", static_cast<int64_t>(block)};
}

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
  result.steps = e.auto_steps ? run_auto_steps(workload, timer, e, observer, result.steps_stopped_by)
                              : run_timed_steps(workload, timer, e.timed_steps, observer);
  result.timed_s = lap();
  if (meter) {
    energy.steps = lengthen_window(workload, timer, *meter, power.min_window_ms,
                                   static_cast<int>(result.steps.times_ms.size()),
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
