#pragma once

#include <memory>
#include <string>

#include "lib/power/power_source.h"

namespace batchscope::power {

// The package energy of every CPU package from the powercap tree under `root` (the top-level
// intel-rapl:N zones; AMD packages appear there too). Returns nullptr and a sentence in `reason` when
// there is no such zone or its energy_uj cannot be read (root-only on most current kernels).
std::unique_ptr<PowerSource> open_rapl_source(std::string& reason,
                                              const std::string& root = "/sys/class/powercap");

}  // namespace batchscope::power
