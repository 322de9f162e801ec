#pragma once

#include <memory>
#include <string>

#include "lib/power/power_source.h"

namespace batchscope::power {

// The GPU with this PCI bus id (as CUDA reports it, e.g. "0000:3B:00.0") through NVML, which is
// loaded at run time from `library`, so batchscope needs no driver to build or start. Energy comes
// from the total-energy counter where the GPU has one (Volta and newer), else from sampled power.
// Returns nullptr and a sentence in `reason` when the library, the driver or the device is missing.
std::unique_ptr<PowerSource> open_nvml_source(const std::string& pci_bus_id, std::string& reason,
                                              const std::string& library = "libnvidia-ml.so.1");

}  // namespace batchscope::power
