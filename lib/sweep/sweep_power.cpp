#include "lib/sweep/sweep_power.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "lib/device/gpu.h"

namespace batchscope {

PowerByDevice open_power(const SweepConfig& config, const SweepOptions& options) {
  PowerByDevice out;
  for (const ExperimentConfig& e : config.experiments) {
    if (out.count(e.device)) continue;
    power::DevicePower& p = out[e.device];
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
      entry["idle"] = power::describe_idle(p.idle);
    }
    out[device] = entry;
  }
  return out;
}

}  // namespace batchscope
