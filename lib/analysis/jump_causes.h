#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/records/profile_records.h"

namespace batchscope {

// Why the step time jumps, from profiled steps (sweep --profile): each layer's time against batch size,
// and each jump or drop split into the layers and kernels that changed.

// One layer in one pass, against batch size.
struct LayerSeries {
  std::string layer, pass;
  std::map<int64_t, double> ms;  // per step, at each profiled batch size
};

// A layer's part in one jump.
struct LayerChange {
  std::string layer, pass;
  double from_ms = 0, to_ms = 0, delta_ms = 0;
  double share = 0;  // of the step's change, from the timed medians (can exceed 1, or be negative)
  // The kernels (operators on the CPU) that carry at least 5% of the layer's time on one side only, the
  // most time first.
  std::vector<std::string> appeared, vanished;
  bool switched() const { return !appeared.empty() || !vanished.empty(); }
};

struct JumpCause {
  int64_t from_batch = 0, to_batch = 0;
  bool drop = false;
  double step_delta_ms = 0;         // the timed medians' change
  double profiled_delta_ms = 0;     // the change of the profiled layers' sum
  std::vector<LayerChange> layers;  // the largest changes first, those making up 90% of it
  std::string missing;  // why it could not be attributed ("batch size 17 was not profiled"); "" if it was
  // "16→17: +8.3 ms; classifier.0 backward +6.9 ms (83%), kernel changed from A to B"
  std::string summary;
};

struct GroupProfile {
  std::string method;
  // "device" where kernels were recorded (their GPU time per layer), else "host" (CPU time per layer).
  std::string basis;
  std::vector<int64_t> batch_sizes;   // profiled ones, ascending
  std::vector<LayerSeries> layers;    // in the order of the step
  std::map<int64_t, double> step_ms;  // the profiled steps' wall time, per batch size
  std::vector<JumpCause> causes;      // per jump, then per drop
};

// One layer's part in a jump: "classifier.0 backward +6.9 ms (83%), kernel switch: A → B".
std::string describe_change(const LayerChange& change);

// Kernel names as a table shows them: a C++ signature cut to its function name.
std::string short_kernel_name(const std::string& name);

// The layer table of `profiles` (per batch size) and the cause of each jump and drop; `medians` holds
// the timed median step time per batch size.
GroupProfile explain_jumps(const std::map<int64_t, ProfileRecord>& profiles, const std::vector<Jump>& jumps,
                           const std::vector<Jump>& drops, const std::map<int64_t, double>& medians);

// Whether jumps survive with the data already on the device: the jumps of a sweep that timed the
// host-to-device copy (transfer: included) set against those of the same workload that did not.
struct TransferVerdict {
  std::string included_group, excluded_group;  // group ids
  std::string included_label, excluded_label;  // as the report names the groups
  std::vector<int64_t> with_copy, on_device;   // the first batch size after each jump
  std::vector<int64_t> both;                   // on both sides, within one batch size, or seen (below)
  // Of `both`: found on one side only, while the other side's medians rise across the same pair by at
  // least half as much (a rise its noise kept below the threshold, not an absent one).
  std::vector<int64_t> below_threshold;
  std::string verdict;
};

// One side of the comparison: its group's id and label, its jumps, its median step time per batch size.
struct TransferSide {
  std::string id, label;
  std::vector<Jump> jumps;
  std::map<int64_t, double> medians;
};

TransferVerdict transfer_verdict(const TransferSide& included, const TransferSide& excluded);

}  // namespace batchscope
