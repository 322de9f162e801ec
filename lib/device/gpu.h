#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace batchscope {
class StepTimer;
}

// What batchscope needs of CUDA beyond LibTorch's device-neutral API. Implemented in cuda_device.cpp
// when LibTorch has CUDA, and in gpu_absent.cpp (where every CUDA device is missing) otherwise.
namespace batchscope::gpu {

bool built_with_cuda();
int device_count();
// name, total_memory_bytes, sm_count, compute_capability, pci_bus_id, pcie link (from sysfs where readable).
nlohmann::json device_info(int index);
// Versions of the CUDA runtime and cuDNN that LibTorch uses, "" where there are none.
std::string cuda_runtime_version();
std::string cudnn_version();

void synchronize(int index);
void empty_cache();
void reset_peak_memory(int index);
// The share of the GPU's memory LibTorch's caching allocator may use (1: all of it); more is out of memory.
void set_memory_fraction(int index, double fraction);
int64_t peak_memory_bytes(int index);

std::unique_ptr<StepTimer> make_event_timer(int index);

}  // namespace batchscope::gpu
