#include "lib/device/memory_peak.h"

#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"

namespace batchscope {

void reset_peak_memory(const torch::Device& device) {
  if (device.is_cuda()) gpu::reset_peak_memory(device.index());
  if (!device.is_cuda() && cpu_memory::installed()) cpu_memory::reset_peak();
}

std::optional<int64_t> peak_memory(const torch::Device& device) {
  if (device.is_cuda()) return gpu::peak_memory_bytes(device.index());
  if (cpu_memory::installed()) return cpu_memory::peak_bytes();
  return std::nullopt;
}

}  // namespace batchscope
