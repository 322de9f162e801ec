#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace batchscope {

// The most memory LibTorch held at once on a device since the last reset: its caching allocator's
// allocated bytes on a GPU, the counted CPU allocator's (cpu_memory.h) on the CPU, where that counter is
// installed; none where it is not.
void reset_peak_memory(const torch::Device& device);
std::optional<int64_t> peak_memory(const torch::Device& device);

}  // namespace batchscope
