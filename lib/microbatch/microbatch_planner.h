#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace batchscope {

// µ-cuDNN's policies for the micro-batch sizes a split may use: the whole batch only, powers of two
// (and the whole batch), or every size from 1 to the batch.
enum class MicroBatchPolicy { Undivided, PowerOfTwo, All };
std::string to_string(MicroBatchPolicy policy);
// "undivided", "powerOfTwo" (also "power_of_two"), "all", in any case; nullopt otherwise.
std::optional<MicroBatchPolicy> policy_from_string(const std::string& text);

// The micro-batch sizes a policy allows for a mini-batch of `batch`, ascending; always includes batch.
// Throws std::invalid_argument when batch < 1.
std::vector<int64_t> candidate_sizes(MicroBatchPolicy policy, int64_t batch);

// Measured time (ms) of one layer's (or the whole model's) forward+backward at each micro-batch size.
struct CostTable {
  std::string name;
  std::map<int64_t, double> ms;
};

struct SplitPlan {
  std::string name;
  std::vector<int64_t> split;  // micro-batch sizes adding up to the batch, largest first
  double predicted_ms = 0;     // sum of the measured times of the split's sizes
  double undivided_ms = 0;     // the measured time at the whole batch (0 when not measured)
};

// The split of `batch` into sizes the policy allows and the table has times for that minimises the
// summed time, by dynamic programming over 0..batch (T[b] = min over sizes s <= b of T[b - s] + t(s)).
// Table entries above the batch or outside the policy are ignored. Ties (relative 1e-12) go to fewer
// micro-batches. Throws std::invalid_argument when no split is possible (e.g. the table lacks the sizes the
// policy needs) or a usable time is negative or not finite. O(batch x candidate sizes).
SplitPlan plan_split(const CostTable& costs, int64_t batch, MicroBatchPolicy policy);

}  // namespace batchscope
