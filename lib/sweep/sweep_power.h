#pragma once

#include <map>
#include <string>

#include "lib/power/device_power.h"
#include "lib/records/records.h"
#include "lib/sweep/sweep_runner.h"

namespace batchscope {

using PowerByDevice = std::map<std::string, power::DevicePower>;

// Opens the power source of every device the experiments run on (where options ask for energy),
// observes how often each updates, and measures each one's idle power before anything runs on it.
PowerByDevice open_power(const SweepConfig& config, const SweepOptions& options);

// What the run record says of each device's power: method, scope, update period, window, idle baseline.
Json power_context(PowerByDevice& power);

}  // namespace batchscope
