#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"

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
  bool from_top = false;                 // read along the top line (MemoryFit::top_steeper)
};

// A step of the peak off the line between two neighbouring measured sizes: the peak moved by more, or
// less, than the line grows over them, beyond the peaks' own scatter. On a GPU it is a library's
// workspace that changed with its algorithm (cuDNN chooses one per batch size); on the CPU, an
// operator's scratch memory.
struct MemoryStep {
  int64_t from_batch = 0, to_batch = 0;
  int64_t from_bytes = 0, to_bytes = 0;  // the measured peaks
  double beyond_line_bytes = 0;          // (to - from) - slope * (to_batch - from_batch)
};

// How the peak moved across a change of the step time (a jump or a drop), beyond the line's growth.
struct MemoryAtChange {
  int64_t from_batch = 0, to_batch = 0;
  bool drop = false;
  double beyond_line_bytes = 0;
  bool stepped = false;  // by more than the fit's step threshold: the time changed with a workspace
};

struct MemoryFit {
  double fixed_bytes = 0;       // the line at batch 0
  double bytes_per_sample = 0;  // its slope
  int points = 0;               // the batch sizes with a peak
  int64_t first_batch = 0, last_batch = 0;
  // The sizes the line runs through: those whose peaks sit at the largest size's level, the steps off
  // it between them summed (the workspaces larger batches run with), where they are at least
  // kMemoryFitMinPoints; else all of them. Ascending.
  std::vector<int64_t> line_batches;
  // The measured peak of the line's sizes farthest from it, as |measured - line| / measured, and its
  // batch size: a size whose library workspace differs (cuDNN's algorithm choice) stands out here.
  double worst_deviation = 0;
  int64_t worst_at = 0;
  // The line through the largest of line_batches only, their upper half and at least
  // kMemoryFitMinPoints (Theil–Sen again). Where its slope passes the line's by more than
  // kSteeperTopShare, the peak grows faster at the largest sizes than the line says (an LSTM whose
  // cuDNN algorithm takes more per sample from some size on, on an H200 4.6 MiB up to batch 128 and
  // 6.9 MiB above), and each memory's reach is read along it: the line through all of them would promise
  // sizes that the growth at the top cannot keep.
  double top_fixed_bytes = 0, top_bytes_per_sample = 0;
  int64_t top_first_batch = 0;
  bool top_steeper = false;
  // The device's own memory first where known, then the common GPU sizes (GPU groups only) but those
  // within 5% of it; each the smaller of the two lines' reaches where the top line is steeper; empty
  // where the line does not rise with the batch.
  std::vector<MemoryReach> reach;
  // How far a step between sizes one apart must move the peak beyond the line to count: 8 times the
  // median of that move per size between neighbouring sizes (the peaks' own scatter: an allocator's
  // rounding, or a growth per sample a little off the line's), and at least 1% of the median peak.
  // Between sizes further apart the scatter part grows with the gap (step_threshold_for), so that on a
  // doubling ladder a slope off by 3% is no step at its widest gap.
  double step_threshold_bytes = 0;
  double step_scatter_bytes_per_size = 0;  // its scatter part, per size of gap
  double step_floor_bytes = 0;             // its 1% part
  std::vector<MemoryStep> steps;  // ascending batch size
  // Each step-time jump, then each drop, whose two sizes both have a peak (memory_at_changes).
  std::vector<MemoryAtChange> at_changes;
};

// How far the peak must move beyond the line between sizes `gap` apart to count as a step.
double step_threshold_for(const MemoryFit& fit, int64_t gap);

// The fit needs this many batch sizes with a peak; fewer give no line worth extending.
inline constexpr int kMemoryFitMinPoints = 3;

// How much steeper than the line the top line must be for the reach to be read along it: 5%, above the
// at most 1.1% by which the two differ where the measured peaks lie on a line (22 groups of VGG, ResNet-50,
// MobileNetV2, the MNIST CNN, the Transformer and Deep Speech 2 on an H200; the LSTM's differ by 37%).
inline constexpr double kSteeperTopShare = 0.05;

// The GPU memory sizes a GPU group's line is read at beside its own, in GiB: 16 (V100, T4), 24 (A10,
// L4), 40 and 80 (A100, H100), 48 (L40S).
inline constexpr int64_t kCommonGpuMemoryGiB[] = {16, 24, 40, 48, 80};

// The line through (batch size, peak bytes): the steps off it found with the median growth between
// neighbouring sizes, then Theil–Sen through the sizes at the largest size's level (line_batches), robust
// to the odd size whose workspace differs; none with fewer than kMemoryFitMinPoints distinct sizes.
std::optional<MemoryFit> fit_memory(const std::vector<std::pair<int64_t, int64_t>>& peaks,
                                    const std::optional<MemoryCapacity>& own, bool gpu);

// How the peak moved across each jump and drop of the step time whose sizes both have one in `peaks`,
// into fit.at_changes.
void memory_at_changes(MemoryFit& fit, const std::vector<std::pair<int64_t, int64_t>>& peaks,
                       const std::vector<Jump>& jumps, const std::vector<Jump>& drops);

// The largest batch size b >= 1 whose line value fixed + slope * b stays within memory_bytes, and where
// the top line is steeper (top_steeper) within its value too; none where batch 1 passes it or the line
// does not rise.
std::optional<int64_t> largest_batch_within(const MemoryFit& fit, int64_t memory_bytes);

}  // namespace batchscope
