#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/cost.h"
#include "lib/analysis/jump_causes.h"
#include "lib/analysis/jump_detector.h"
#include "lib/analysis/layer_rates.h"
#include "lib/analysis/memory_fit.h"
#include "lib/analysis/peak_share.h"
#include "lib/analysis/periodicity.h"
#include "lib/analysis/tile_model.h"
#include "lib/records/microbatch_records.h"
#include "lib/records/records.h"

namespace batchscope {

// The energy side of one batch size as analyze uses it: the point record's energy fields and two
// verdicts of the analysis.
struct PointEnergyStats : PointEnergy {
  // With repeated passes, the shortest of their windows: each window carries its own edges' rounding, so
  // the passes' summed window_ms says more updates than any one of them saw.
  std::optional<double> shortest_window_ms = std::nullopt;
  // A window of fewer than 10 counter updates (with passes, any pass's): shown, but kept out of the most
  // efficient choice.
  bool low_confidence = false;
  // The SM clock fell during the window or stayed well below the group's best: a slower device then.
  bool throttled = false;
};

// Statistics of one batch size of one group, from its step records.
struct PointStats {
  int64_t batch_size = 0;
  int samples = 0;
  double median_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
  std::optional<double> cv;
  double median_se_ms = 0;
  // With repeated passes: each pass's median (by pass), and the standard error of the median that
  // their spread gives (their standard deviation / √passes), which the jump detector takes as this
  // size's noise where it exceeds median_se_ms: drift of the machine between passes.
  std::map<int64_t, double> pass_medians;
  std::optional<double> between_pass_se_ms;
  double samples_per_s = 0;
  std::optional<double> tflops;
  std::optional<int64_t> peak_memory_bytes;
  // The median CPU time of the thread that issued the steps (logs from before it was recorded: none).
  std::optional<double> host_median_ms;
  // On a GPU: the host's time to issue a step is at least kLaunchBoundShare of the step, so the device
  // waits for the host, and a faster GPU would not make this batch size faster.
  bool launch_bound = false;
  // Training with loss scaling: timed steps whose optimizer step was skipped (a gradient overflowed).
  std::optional<int64_t> skipped_steps;
  // Fewer samples than the analysis asks for: shown, but kept out of the trend, jumps and bests.
  bool too_few_samples = false;
  std::optional<PointEnergyStats> energy;  // only where the point record carries energy fields
  // chunk: auto, where the batch did not fit whole: the micro-batches (inference: slices) it ran in, and
  // the largest that fitted.
  std::optional<int64_t> chunk, chunk_largest_fitting;
};

// (batch size, peak memory) of the points that ran whole and recorded a peak, in the points' order: what
// the memory line is fitted to. A size run in micro-batches holds one micro-batch's activations at a
// time, not the batch's, so it is left out.
inline std::vector<std::pair<int64_t, int64_t>> whole_batch_peaks(const std::vector<PointStats>& points) {
  std::vector<std::pair<int64_t, int64_t>> peaks;
  for (const PointStats& p : points) {
    if (!p.chunk && p.peak_memory_bytes) peaks.emplace_back(p.batch_size, *p.peak_memory_bytes);
  }
  return peaks;
}

// The share of a GPU step's time that the host's issuing time must reach for the step to count as
// launch-bound: the device then idles between kernels for want of work.
inline constexpr double kLaunchBoundShare = 0.9;

// Theil–Sen line through the medians: robust to the jumps themselves and to outlying points.
struct Trend {
  double intercept_ms = 0;
  double slope_ms_per_sample = 0;
  int points = 0;
};

// The share of the highest throughput from which a size "gains little more".
constexpr double kSaturationShare = 0.9;

struct BatchChoice {
  int64_t batch_size = 0;
  double median_ms = 0;
  double samples_per_s = 0;
};

// The batch size that does the most work per joule, with or without the idle draw.
struct EnergyChoice {
  int64_t batch_size = 0;
  double samples_per_j = 0;
  std::optional<double> j_per_sample, avg_power_w;  // the above-idle ones for the above-idle choice
  double samples_per_s = 0;
  double median_ms = 0;
};

// A batch size whose SM clock shows throttling, with the readings that show it.
struct Throttling {
  int64_t batch_size = 0;
  std::optional<double> start_sm_clock_mhz, end_sm_clock_mhz;
  std::optional<double> start_temperature_c, end_temperature_c;
  bool fell_in_window = false;  // end clock more than 10% below the start clock
  bool below_group = false;     // below 90% of the group's highest start clock
};

// The energy side of a group, present where at least one of its point records carries energy.
struct GroupEnergy {
  std::vector<std::string> methods, scopes;  // distinct values, as first seen
  std::optional<double> resolution_ms;       // the coarsest of its points
  int points = 0;                            // batch sizes with energy
  bool idle_baseline = false;                // some point has an idle power
  std::optional<double> highest_start_sm_clock_mhz;
  std::optional<EnergyChoice> most_efficient;             // highest samples/J
  std::optional<EnergyChoice> most_efficient_above_idle;  // highest samples/J above idle
  std::vector<int64_t> low_confidence;                    // windows under 10 counter updates
  std::vector<Throttling> throttled;
};

// What one batch size costs at the group's price per device-hour.
struct PointCost {
  int64_t batch_size = 0;
  double usd_per_million_samples = 0;
  std::optional<double> usd_per_epoch;  // where the epoch's size is known
};

// The group's price, where it came from, and its cheapest batch size (lowest $ per million samples
// among the sizes with enough steps).
struct GroupCost {
  double usd_per_hour = 0;
  std::string price_from;  // "--price" or "FILE:LINE (key)"
  std::optional<int64_t> epoch_samples;
  std::vector<PointCost> points;  // ascending batch size, the flagged ones left out
  std::optional<PointCost> cheapest;
};

// One line of measurements: the same model, phase, precision, input, device kind and settings.
struct GroupAnalysis {
  std::string id;     // file-name safe, unique within an analysis
  std::string label;  // for people, e.g. "vgg16 train fp32 · NVIDIA H100 · cudnn_benchmark on"
  nlohmann::ordered_json identity;  // the fields that define the group
  nlohmann::json workload;          // of those, what comparisons must share (RawGroup::workload)
  std::vector<std::string> logs;    // the log files it was read from
  std::vector<std::string> run_ids;
  std::vector<PointStats> points;  // ascending batch size
  std::optional<Trend> trend;
  JumpAnalysis jumps;
  Periodicity periodicity;
  std::optional<BatchChoice> fastest;  // highest samples/s
  // The smallest batch size that reaches 90% of the highest samples/s: where the gains of a larger
  // batch run out.
  std::optional<BatchChoice> saturation;   // the first size at kSaturationShare of the fastest's samples/s
  std::vector<BatchChoice> before_jumps;   // the largest batch size before each jump
  std::optional<int64_t> largest_fitting;  // largest batch size measured
  std::optional<int64_t> first_oom;        // smallest batch size that ran out of memory
  // The line through the peak memory of the sizes that ran whole, and what it puts within a memory.
  std::optional<MemoryFit> memory;
  std::vector<int64_t> skipped;            // sizes not tried after an out-of-memory error
  // chunk: auto: the sizes that did not fit whole and ran in micro-batches (PointStats::chunk); the
  // largest that ran whole is then the largest measured below the first of them.
  std::vector<int64_t> accumulated;
  std::optional<int64_t> largest_whole;
  std::vector<int64_t> flagged;            // sizes with too few samples
  std::vector<int64_t> launch_bound;       // GPU sizes whose steps wait for the host (PointStats)
  std::vector<int64_t> overflowed;         // sizes where loss scaling skipped timed optimizer steps
  std::optional<GroupEnergy> energy;
  std::optional<GroupProfile> profile;  // where the sweep profiled its batch sizes (sweep --profile)
  // Each convolution and linear layer's TFLOP/s at the profiled batch size nearest the fastest, where
  // the sweep profiled a model made of plan layers.
  std::optional<LayerRates> layer_rates;
  // Predicted jumps (tile and wave quantization) beside the measured ones, where an SM count is known
  // and the model is made of plan layers; otherwise why there is none.
  std::optional<Prediction> prediction;
  std::string no_prediction;
  std::optional<GroupCost> cost;  // where analyze was given a price for its device
  // Where analyze was given a noise scale and the group trains: the time to an accuracy per batch size.
  std::optional<GroupTimeToAccuracy> time_to_accuracy;
  std::optional<GroupPeak> peak;  // where analyze was given the measured peak of its device (--peak)
};

// One common batch size of an energy comparison: group samples/J / baseline samples/J, and the same
// above idle where both sides measured an idle baseline.
struct EnergyRatioPoint {
  int64_t batch_size = 0;
  double ratio = 0;
  std::optional<double> ratio_above_idle;
};

// Energy efficiency of a group over the baseline at the common batch sizes where both have a trusted
// window and enough steps (> 1: more samples per joule than the baseline), with each side's own most
// efficient batch size over all its sizes.
struct EnergyRatioCurve {
  std::vector<EnergyRatioPoint> points;
  double median_ratio = 0;
  double min_ratio = 0, max_ratio = 0;
  int64_t min_at = 0, max_at = 0;
  std::optional<EnergyChoice> best, baseline_best;
  // Where the two sides read different scopes of energy (a GPU board against a CPU's packages: the GPU's
  // figure leaves out the host that drove it): "GPU 0 board vs CPU package 0", else empty.
  std::string scopes_differ;
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
  std::optional<EnergyRatioCurve> energy;  // only where both sides have energy at a common size
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
  // Where the session that completed the sweep spent its wall time (its end record), where recorded.
  std::optional<SweepTimeSpent> time_spent;
};

// A `batchscope microbatch` log: its configuration and, per policy, the predicted and measured speedup
// of the planned micro-batches, with the per-layer splits.
struct MicroBatchLog {
  std::string log;
  nlohmann::ordered_json config;
  std::vector<MicroBatchResultRecord> results;
  std::vector<LayerPlanRecord> plans;
};

struct Analysis {
  std::vector<LogSummary> logs;
  std::vector<MicroBatchLog> microbatch;
  std::vector<GroupAnalysis> groups;
  std::vector<Comparison> comparisons;
  // Pairs of groups that differ only in whether the copy to the device was timed.
  std::vector<TransferVerdict> transfer_verdicts;
  // Groups left unpriced although prices were given (their labels).
  std::vector<std::string> unpriced;
  std::vector<std::string> warnings;  // everything the user should know that is not an error
};

}  // namespace batchscope
