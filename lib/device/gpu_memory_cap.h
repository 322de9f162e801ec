#pragma once

#include <cstdint>
#include <optional>

// A cap on the memory LibTorch's caching allocator may take on a GPU (--memory-limit on a CUDA device):
// the allocator's memory fraction, the cap over the device's total, so that an allocation past it is
// out of memory. What fits under a cap of 16 GiB is what fits on a GPU of 16 GiB, less the memory its
// CUDA context and libraries take outside the allocator (on the capped GPU they are outside the cap).
namespace batchscope::gpu {

// The allocator's fraction for a cap of `cap_bytes` on a device of `total_bytes`. Throws
// std::invalid_argument with a sentence where the cap is not positive or exceeds the device's memory.
double cap_fraction(int64_t cap_bytes, int64_t total_bytes);

// Caps device `index` (nullopt: the whole memory again) and sets the allocator's fraction to it.
void set_memory_cap(int index, std::optional<int64_t> bytes);
std::optional<int64_t> memory_cap(int index);

// Sets the allocator's fraction to `share` of the cap (or of the whole memory, uncapped): maxbatch's
// margin; share 1 puts the cap back.
void set_share_of_cap(int index, double share);

}  // namespace batchscope::gpu
