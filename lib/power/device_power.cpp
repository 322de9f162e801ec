#include "lib/power/device_power.h"

#include <cstdlib>

#include "lib/device/gpu.h"
#include "lib/power/nvml_source.h"
#include "lib/power/rapl_source.h"

namespace batchscope::power {

std::unique_ptr<PowerSource> open_power_source(const torch::Device& device, std::string& reason) {
  if (device.is_cuda()) {
    const int index = device.has_index() ? device.index() : 0;
    if (index >= gpu::device_count()) {
      reason = "there is no CUDA device " + std::to_string(index) + " to measure.";
      return nullptr;
    }
    // By PCI bus id, since NVML numbers GPUs its own way whatever CUDA_VISIBLE_DEVICES says.
    const std::string bus_id = gpu::device_info(index).value("pci_bus_id", "");
    return open_nvml_source(bus_id, reason);
  }
  const char* root = std::getenv("BATCHSCOPE_POWERCAP");
  return open_rapl_source(reason, root != nullptr && *root != '\0' ? root : "/sys/class/powercap");
}

nlohmann::json describe_power(PowerSource* source, const std::string& reason) {
  if (source == nullptr) return {{"available", false}, {"reason", reason}};
  return {{"available", true},
          {"method", source->method()},
          {"scope", source->scope()},
          {"resolution_ms", source->resolution_ms()},
          {"info", source->info()}};
}

nlohmann::json describe_idle(const std::optional<EnergyWindow>& idle) {
  if (!idle) return nullptr;
  return {{"power_w", idle->avg_power_w}, {"window_ms", idle->window_ms}, {"joules", idle->joules}};
}

}  // namespace batchscope::power
