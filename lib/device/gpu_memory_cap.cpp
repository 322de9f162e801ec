#include "lib/device/gpu_memory_cap.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"

namespace batchscope::gpu {
namespace {

std::mutex caps_mutex;
std::map<int, int64_t>& caps() {
  static std::map<int, int64_t> by_device;
  return by_device;
}

int64_t total_memory(int index) { return device_info(index).at("total_memory_bytes").get<int64_t>(); }

}  // namespace

double cap_fraction(int64_t cap_bytes, int64_t total_bytes) {
  if (cap_bytes <= 0) throw std::invalid_argument("a GPU memory limit must be more than 0 bytes");
  if (cap_bytes > total_bytes) {
    throw std::invalid_argument(format_memory_size(cap_bytes) + " is more than the GPU's " +
                                format_memory_size(total_bytes));
  }
  return static_cast<double>(cap_bytes) / static_cast<double>(total_bytes);
}

void set_memory_cap(int index, std::optional<int64_t> bytes) {
  std::lock_guard<std::mutex> lock(caps_mutex);
  if (!bytes) {
    caps().erase(index);
    set_memory_fraction(index, 1.0);
    return;
  }
  set_memory_fraction(index, cap_fraction(*bytes, total_memory(index)));
  caps()[index] = *bytes;
}

std::optional<int64_t> memory_cap(int index) {
  std::lock_guard<std::mutex> lock(caps_mutex);
  const auto found = caps().find(index);
  return found == caps().end() ? std::nullopt : std::optional<int64_t>(found->second);
}

void set_share_of_cap(int index, double share) {
  const std::optional<int64_t> cap = memory_cap(index);
  const double whole = cap ? cap_fraction(*cap, total_memory(index)) : 1.0;
  set_memory_fraction(index, whole * share);
}

}  // namespace batchscope::gpu
