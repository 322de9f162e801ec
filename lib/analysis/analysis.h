#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/analysis/periodicity.h"

namespace batchscope {

// Statistics of one batch size of one group, from its step records.
struct PointStats {
  int64_t batch_size = 0;
  int samples = 0;
  double median_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
  std::optional<double> cv;
  double median_se_ms = 0;
  double samples_per_s = 0;
  std::optional<double> tflops;
  std::optional<int64_t> peak_memory_bytes;
  // Fewer samples than the analysis asks for: shown, but kept out of the trend, jumps and bests.
  bool too_few_samples = false;
};

// Theil–Sen line through the medians: robust to the jumps themselves and to outlying points.
struct Trend {
  double intercept_ms = 0;
  double slope_ms_per_sample = 0;
  int points = 0;
};

struct BatchChoice {
  int64_t batch_size = 0;
  double median_ms = 0;
  double samples_per_s = 0;
};

// One line of measurements: the same model, phase, precision, input, device kind and settings.
struct GroupAnalysis {
  std::string id;     // file-name safe, unique within an analysis
  std::string label;  // for people, e.g. "vgg16 train fp32 · NVIDIA H100 · cudnn_benchmark on"
  nlohmann::ordered_json identity;  // the fields that define the group
  std::vector<std::string> logs;    // the log files it was read from
  std::vector<std::string> run_ids;
  std::vector<PointStats> points;  // ascending batch size
  std::optional<Trend> trend;
  JumpAnalysis jumps;
  Periodicity periodicity;
  std::optional<BatchChoice> fastest;  // highest samples/s
  // The smallest batch size that reaches 90% of the highest samples/s: where the gains of a larger
  // batch run out (training and inference reach it at very different sizes).
  std::optional<BatchChoice> saturation;
  std::vector<BatchChoice> before_jumps;   // the largest batch size before each jump
  std::optional<int64_t> largest_fitting;  // largest batch size measured
  std::optional<int64_t> first_oom;        // smallest batch size that ran out of memory
  std::vector<int64_t> skipped;            // sizes not tried after an out-of-memory error
  std::vector<int64_t> flagged;            // sizes with too few samples
};

// Speedup of each group over a baseline that runs the same workload, per common batch size:
// baseline median step time / group median step time (> 1 means faster than the baseline).
struct SpeedupCurve {
  std::string group_id;
  std::string label;
  std::vector<std::pair<int64_t, double>> speedup;
  double median_speedup = 0;
  double min_speedup = 0, max_speedup = 0;
  int64_t min_at = 0, max_at = 0;
};

struct Comparison {
  std::string id;
  std::string workload;  // e.g. "vgg16 train 3x224x224"
  std::string baseline_id;
  std::string baseline_label;
  std::vector<SpeedupCurve> curves;
};

// What was read from one log file.
struct LogSummary {
  std::string path;
  std::vector<std::string> run_ids;
  int records = 0;
  bool complete = false;  // an "end" record closes it
  bool truncated_tail = false;
  std::vector<std::string> warnings;
  nlohmann::ordered_json environment;  // from its first run record (null without one)
};

// A `batchscope microbatch` log: its configuration and, per policy, the predicted and measured speedup
// of the planned micro-batches, with the per-layer splits.
struct MicroBatchLog {
  std::string log;
  nlohmann::ordered_json config;
  std::vector<nlohmann::ordered_json> results;  // microbatch_result records
  std::vector<nlohmann::ordered_json> plans;    // layer_plan records
};

struct Analysis {
  std::vector<LogSummary> logs;
  std::vector<MicroBatchLog> microbatch;
  std::vector<GroupAnalysis> groups;
  std::vector<Comparison> comparisons;
  std::vector<std::string> warnings;  // everything the user should know that is not an error
};

}  // namespace batchscope
