#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace batchscope {

// How a group's peak memory grows with its batch size: a straight line through the measured peaks
// (weights, gradients and optimizer state do not grow with the batch; activations and the batch do),
// and the largest batch size that line puts within a memory: the device's own, or the sweep's limit, and
// on a GPU the memory sizes a user may rent instead. The line counts what LibTorch's allocator holds, so
// its reach is an upper bound; `batchscope maxbatch` measures what runs.

// The memory the group's batches had: a GPU's (its run record's total memory) or a --memory-limit's.
struct MemoryCapacity {
  int64_t bytes = 0;
  std::string what;  // "NVIDIA H200's memory", "the sweep's --memory-limit"
};

struct MemoryReach {
  int64_t memory_bytes = 0;
  std::string what;                      // as MemoryCapacity::what, or a common GPU size: "16 GiB"
  bool own = false;                      // the device the group ran on, or its limit
  std::optional<int64_t> largest_batch;  // none where the line passes the memory before batch 1
};

struct MemoryFit {
  double fixed_bytes = 0;       // the line at batch 0
  double bytes_per_sample = 0;  // its slope
  int points = 0;               // the batch sizes it was fitted to
  int64_t first_batch = 0, last_batch = 0;
  // The measured peak farthest from the line, as |measured - line| / measured, and its batch size: a
  // size whose library workspace differs (cuDNN's algorithm choice) stands out here.
  double worst_deviation = 0;
  int64_t worst_at = 0;
  // The device's own memory first where known, then the common GPU sizes (GPU groups only) but those
  // within 5% of it; empty where the line does not rise with the batch.
  std::vector<MemoryReach> reach;
};

// The fit needs this many batch sizes with a peak; fewer give no line worth extending.
inline constexpr int kMemoryFitMinPoints = 3;

// The GPU memory sizes a GPU group's line is read at beside its own, in GiB: 16 (V100, T4), 24 (A10,
// L4), 40 and 80 (A100, H100), 48 (L40S).
inline constexpr int64_t kCommonGpuMemoryGiB[] = {16, 24, 40, 48, 80};

// Theil–Sen through (batch size, peak bytes), robust to the odd size whose workspace differs; none with
// fewer than kMemoryFitMinPoints distinct sizes.
std::optional<MemoryFit> fit_memory(const std::vector<std::pair<int64_t, int64_t>>& peaks,
                                    const std::optional<MemoryCapacity>& own, bool gpu);

// The largest batch size b >= 1 whose line value fixed + slope * b stays within memory_bytes; none where
// batch 1 passes it or the line does not rise.
std::optional<int64_t> largest_batch_within(const MemoryFit& fit, int64_t memory_bytes);

}  // namespace batchscope
