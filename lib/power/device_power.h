#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include <optional>

#include "lib/power/energy_meter.h"
#include "lib/power/power_source.h"

namespace batchscope::power {

// A device's power source as a sweep uses it, with its idle baseline; source is null (and reason
// says why) where energy cannot be measured or was not asked for.
struct DevicePower {
  std::unique_ptr<PowerSource> source;
  std::string reason;
  std::optional<EnergyWindow> idle;
  double update_ms = 0;      // how often the source's reading was seen to change
  double min_window_ms = 0;  // the shortest energy window: 20 updates, at least 100 ms
};

// The power source of the device a sweep runs on: NVML for cuda:N, RAPL for the CPU (read from the
// directory in BATCHSCOPE_POWERCAP when set, e.g. where a container mounts the host's powercap tree,
// else /sys/class/powercap). Returns nullptr and a sentence in `reason` where there is none.
std::unique_ptr<PowerSource> open_power_source(const torch::Device& device, std::string& reason);

// What the log's context says about a device's power measurement: its method, scope, resolution and
// static facts, or that it is unavailable and why.
nlohmann::json describe_power(PowerSource* source, const std::string& reason);

// An idle baseline as a run record holds it (power_w, window_ms, joules); null where none was measured.
nlohmann::json describe_idle(const std::optional<EnergyWindow>& idle);

}  // namespace batchscope::power
