#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/records/records.h"

namespace batchscope {

// The records of a micro-batch study (`batchscope microbatch`, after its run record): the measured
// cost of each layer at each micro-batch size, the split planned for each layer, and per policy the
// predicted and measured speedup. The study writes them (lib/microbatch/microbatch_report.cpp) and
// analyze reads them back, both through these structs.

struct LayerCostRecord {
  std::string layer;
  std::vector<int64_t> input_shape;  // one sample's
  int64_t micro_batch = 0;
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
};

// A micro-batch size that could not run, with LibTorch's reason.
struct LayerCostSkippedRecord {
  std::string reason;
};

struct LayerPlanRecord {
  std::string policy, layer;
  std::vector<int64_t> split;  // micro-batch sizes adding up to the batch
  double predicted_ms = 0, undivided_ms = 0;
};

// Timed whole training steps, undivided or planned.
struct MicroBatchSteps {
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  int64_t steps = 0;
  std::optional<int64_t> peak_memory_bytes;
  // With loss scaling: how many of the timed steps skipped their optimizer step (absent without).
  std::optional<int64_t> skipped_steps;
};

struct MicroBatchResultRecord {
  std::string policy, mode;
  int64_t batch = 0;
  // Predicted from the layer costs: over the convolutions (layer mode) or the whole step (model mode).
  std::string predicted_scope;
  double predicted_undivided_ms = 0, predicted_planned_ms = 0, predicted_speedup = 0, predicted_saving_ms = 0;
  // Measured over whole train steps.
  std::string measured_scope, timer;
  MicroBatchSteps undivided, planned;
  double measured_speedup = 0, measured_saving_ms = 0;
  std::optional<double> gradient_difference;  // relative L2 of planned against undivided gradients
  std::optional<double> conv_share_of_step;
  std::string batch_norm_note;  // "" where the model has no batch norm
  std::optional<double> halves_gradient_difference;
};

Json to_json(const LayerCostRecord& r);
Json to_json(const LayerCostSkippedRecord& r);
Json to_json(const LayerPlanRecord& r);
Json to_json(const MicroBatchResultRecord& r);

// "the loss scaler skipped the optimizer step of 2 undivided and 1 planned of 10 timed steps each" where
// it skipped any (those steps are cheaper, so a skew would pass for a speedup), else "".
std::string skipped_steps_note(const MicroBatchResultRecord& r);

bool is_microbatch_record_type(const std::string& type);
// Read back with every field's type checked; BadRecord (in words that follow "the record") otherwise.
LayerPlanRecord layer_plan_from_json(const Json& j);
MicroBatchResultRecord microbatch_result_from_json(const Json& j);
LayerCostRecord layer_cost_from_json(const Json& j);
// Checks a layer_cost or layer_cost_skipped record the same way (analyze only counts them).
void check_layer_cost(const Json& j);

}  // namespace batchscope
