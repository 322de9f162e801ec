#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/common/statistics.h"
#include "lib/config/config.h"
#include "lib/microbatch/gradient_accumulation.h"
#include "lib/microbatch/microbatch_planner.h"
#include "lib/records/microbatch_records.h"
#include "lib/records/records.h"
#include "models/network.h"
#include "models/registry.h"

namespace batchscope {

class Workload;

// µ-cuDNN's micro-batching, planned from measured costs and then measured as a whole step.
// layer: every convolution runs its own split (the rest of the network sees the whole batch);
// model: the whole step runs as micro-batches whose gradients accumulate before one optimizer step.
enum class MicroBatchMode { Layer, Model };
std::string to_string(MicroBatchMode mode);

// LibTorch's C++ API has no cuDNN workspace limit (µ-cuDNN's central parameter), said in every record.
extern const char* const kWorkspaceLimitNote;
// The value of CUDNN_CONV_WSCAP_DBG, PyTorch's documented cuDNN workspace knob for its cuDNN v8 API
// path, when set in the environment; nullopt otherwise.
std::optional<std::string> cudnn_workspace_cap_env();

using LayerCost = LayerCostRecord;  // as its layer_cost record holds it

// A study stopped on request before its costs were all measured (MicroBatchOptions::stop_requested).
struct MicroBatchStopped : std::runtime_error {
  MicroBatchStopped(int64_t measured, int64_t total);
  int64_t measured = 0;  // costs measured, those of an earlier run included
  int64_t total = 0;     // costs the study needs
};

// What a study keeps of its costs, so that a stopped one goes on: the costs an earlier run of the same
// study measured (taken as they are, never measured again), a callback for each cost once measured (the
// command appends it to its file), and a check made before each cost (true: MicroBatchStopped).
struct CostKeeping {
  std::vector<LayerCost> known;
  std::function<void(const LayerCost&)> on_cost;
  std::function<bool()> stop_requested;
};

struct MicroBatchOptions {
  int64_t batch = 0;  // the mini-batch to split
  std::vector<MicroBatchPolicy> policies{MicroBatchPolicy::Undivided, MicroBatchPolicy::PowerOfTwo,
                                         MicroBatchPolicy::All};
  MicroBatchMode mode = MicroBatchMode::Layer;
  int warmup = 3;   // untimed runs before each measurement
  int steps = 10;   // timed whole steps per measured configuration
  int repeats = 5;  // timed runs per cost (layer or micro-batch size)
  CostKeeping keeping;
};

// The sizes any of the policies allows for `batch`, ascending.
std::vector<int64_t> candidate_sizes(const std::vector<MicroBatchPolicy>& policies, int64_t batch);

struct CostMeasurement {
  std::vector<LayerCost> entries;  // per layer (forward order), per size ascending
  std::vector<CostTable> tables;   // one per layer (or one for the model), medians
  // Sizes that could not run (e.g. BatchNorm in train mode on one sample), with LibTorch's reason.
  std::vector<std::string> skipped;
};

// Runs one forward of `sample_batch` samples (under autocast in fp16 or bf16, channels-last where asked)
// with recording on, then off again: each convolution's per-sample input shape, in forward order; each also
// keeps its input's type.
std::vector<std::pair<std::string, std::vector<int64_t>>> record_convolution_inputs(
    models::Network& network, const std::vector<int64_t>& sample_shape, const torch::Device& device,
    Precision precision = Precision::FP32, int64_t sample_batch = 2, bool channels_last = false);

// Times each convolution alone (forward + backward of the layer itself, train mode, undivided) at
// each size: `warmup` untimed then `repeats` timed runs, each on its own with the device synchronised
// after it; inputs and output gradients are made before the timed region. In fp16 or bf16 the input
// has the type the layer sees in a step and its forward runs under autocast; with `channels_last` the
// input is laid out NHWC, as a channels-last step's are (the network's weights already so). A cost that
// `keeping` knows (same layer, input shape and size) is taken from it and not measured.
CostMeasurement measure_layer_costs(models::Network& network, const std::vector<int64_t>& sample_shape,
                                    const torch::Device& device, const std::vector<int64_t>& sizes,
                                    int warmup, int repeats, Precision precision = Precision::FP32,
                                    bool channels_last = false, const CostKeeping& keeping = {});

// Times one forward + loss + backward of the whole network (no optimizer step) at each size, on
// synthetic batches of `spec`'s kind: forward and loss under autocast in fp16 or bf16, and the backward
// of the loss times `loss_scale` where given (the step's scaler's first scale); images laid out NHWC with
// `channels_last`.
CostMeasurement measure_model_costs(models::Network& network, const models::ModelSpec& spec,
                                    const std::vector<int64_t>& sample_shape, int64_t classes,
                                    const torch::Device& device, const std::vector<int64_t>& sizes,
                                    int warmup, int repeats, Precision precision = Precision::FP32,
                                    std::optional<double> loss_scale = std::nullopt,
                                    bool channels_last = false, const CostKeeping& keeping = {});

std::vector<SplitPlan> plan_layers(const CostMeasurement& costs, int64_t batch, MicroBatchPolicy policy);
// Sets each named convolution's micro-batches to its plan's split; TORCH_CHECKs that every convolution
// has a plan. clear_micro_batches runs every convolution undivided again.
void apply_plans(models::Network& network, const std::vector<SplitPlan>& plans);
void clear_micro_batches(models::Network& network);

struct MeasuredSteps {
  Summary time_ms;
  std::optional<int64_t> peak_memory_bytes;
  // With loss scaling: the timed steps whose optimizer step was skipped (a gradient overflowed).
  std::optional<int64_t> skipped_steps;
};

struct PolicyOutcome {
  MicroBatchPolicy policy = MicroBatchPolicy::Undivided;
  std::vector<SplitPlan> plans;  // per convolution (layer mode) or one for the model
  double predicted_undivided_ms = 0, predicted_planned_ms = 0, predicted_speedup = 1;
  // Whole train steps, undivided and planned alternating one by one (same data, same warm-up), in the
  // experiment's precision, loss scaling and optimizer.
  MeasuredSteps undivided, planned;
  double measured_speedup = 0;  // undivided median / planned median
  // Relative L2 difference of all gradients, planned vs undivided, on the same batch with dropout off,
  // in fp32 whatever the precision, so that only the split can make it differ:
  // ~0 where the split is exact (per-layer splits, models without batch statistics), not where
  // BatchNorm sees micro-batches instead of the mini-batch.
  double gradient_difference = 0;
};

struct MicroBatchStudy {
  ExperimentConfig experiment;
  MicroBatchOptions options;
  std::string timer_method;
  CostMeasurement costs;
  std::vector<PolicyOutcome> outcomes;
  bool batch_norm = false;
  // Model mode with batch norm: the gradient difference of a split into two halves, for reference
  // where a plan keeps the mini-batch whole.
  std::optional<double> halves_gradient_difference;
};

// "BatchNorm models: micro-batches change the batch statistics; gradient difference 3.2% relative",
// or what holds instead; empty for a model without batch norm whose split is exact.
std::string batch_norm_note(const MicroBatchStudy& study, const PolicyOutcome& outcome);

// The whole study on the experiment's (resolved) device: costs, plans per policy, and the measured
// train steps undivided and planned. Throws std::invalid_argument on bad options.
MicroBatchStudy run_microbatch_study(const ExperimentConfig& experiment, const MicroBatchOptions& options);

// layer_cost, layer_plan and microbatch_result records, in that order.
std::vector<Json> study_records(const MicroBatchStudy& study);
std::string study_summary(const MicroBatchStudy& study);
std::string study_report_markdown(const MicroBatchStudy& study);

// DIR/microbatch.jsonl (run_record, the study's records, end) and DIR/report.md, replacing both.
void write_microbatch_files(const std::string& dir, const Json& run_record, const MicroBatchStudy& study);
// Whether DIR/microbatch.jsonl holds an "end" record.
bool has_complete_microbatch_result(const std::string& dir);

}  // namespace batchscope
