#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "lib/power/power_source.h"

namespace batchscope::power {

// The power source of the device a sweep runs on: NVML for cuda:N, RAPL for the CPU (read from the
// directory in BATCHSCOPE_POWERCAP when set, e.g. where a container mounts the host's powercap tree,
// else /sys/class/powercap). Returns nullptr and a sentence in `reason` where there is none.
std::unique_ptr<PowerSource> open_power_source(const torch::Device& device, std::string& reason);

// What the log's context says about a device's power measurement: its method, scope, resolution and
// static facts, or that it is unavailable and why.
nlohmann::json describe_power(PowerSource* source, const std::string& reason);

}  // namespace batchscope::power
