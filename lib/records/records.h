#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "lib/config/config.h"
#include "lib/power/power_source.h"
#include "lib/records/jsonl.h"

namespace batchscope {

// The records of a sweep log (steps.jsonl), as plain structs. Every writer (the log, steps.csv, the
// summary table) and every reader (resume, analyze) goes through these types; to_json gives the
// exact line the log holds, from_json reads one back with its types checked.
//
// The order a log holds them in: one "run" (and one "resume" per resumed session), then per batch
// size its "step" records followed by its "point" summary, or an "oom" record with "skipped" records
// for the larger sizes; "end" closes a complete sweep.
namespace record {
inline constexpr const char* kRun = "run";
inline constexpr const char* kResume = "resume";
inline constexpr const char* kStep = "step";
inline constexpr const char* kPoint = "point";
inline constexpr const char* kOom = "oom";
inline constexpr const char* kSkipped = "skipped";
inline constexpr const char* kEnd = "end";
// The other commands' logs: train.jsonl, compare.jsonl, the micro-batch study and maxbatch.
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kComparison = "comparison";
inline constexpr const char* kLayerCost = "layer_cost";
inline constexpr const char* kLayerCostSkipped = "layer_cost_skipped";
inline constexpr const char* kLayerPlan = "layer_plan";
inline constexpr const char* kMicroBatchResult = "microbatch_result";
inline constexpr const char* kMaxBatchSearch = "maxbatch_search";
inline constexpr const char* kMaxBatchTry = "maxbatch_try";
inline constexpr const char* kMaxBatch = "maxbatch";
// Profiled steps of a sweep (profile.jsonl beside steps.jsonl).
inline constexpr const char* kProfile = "profile";
// batchscope peak: the device's matrix-product and convolution rates.
inline constexpr const char* kPeak = "peak";
}  // namespace record

// The record that opens a log: its type, a new run id, the start time, the environment (host,
// versions, devices), the command and the configuration. A number without its context is not a result.
// A sweep adds its step timers, power sources and a note on how energy is read.
struct RunRecord {
  std::string type = record::kRun;  // or record::kResume
  std::string run_id, start_time;
  Json environment = Json::object();  // top-level keys of the record, between start_time and command
  std::string command;
  Json config = Json::object();
  Json timers, power;  // null where the log has none
  std::string energy_note;
};

// Which experiment and batch size a per-batch record belongs to.
struct BatchKey {
  std::string experiment, model, phase, precision, device;
  std::string transfer;  // "" in logs written before it was recorded
  int64_t batch_size = 0;
  // Which of the ladder's repeated passes (repeats: R, 1-based); absent in a sweep of one pass.
  std::optional<int64_t> pass;
};

struct StepRecord {
  BatchKey key;
  std::optional<int64_t> step;
  double time_ms = 0;
  std::optional<double> loss;  // none for inference
  std::optional<int64_t> peak_memory_bytes;
  // CPU time of the thread that issued the step, from its start to its stop (before any wait for the
  // device): on a GPU, where it nears time_ms the device waits for the host.
  std::optional<double> host_ms = std::nullopt;
};

// The energy side of one batch size, measured where the device has a power source (NVML for a GPU,
// RAPL for the CPU). Counters update only every few milliseconds, so the energy is read once over the
// timed steps of the batch size together (extended by more steps when they take less than the source
// needs), never per step; j_per_step is that energy divided by the steps it covered. The *_above_idle
// figures take the idle baseline measured before the sweep away (all empty without one);
// avg_power_above_idle_w is kept as it comes out, zero or negative included, and the J and samples per
// J above idle stay empty where it is not positive. start and end are the device's telemetry just before the first
// and just after the last step of the window. A number the record leaves null stays empty.
struct PointEnergy {
  std::string method, scope;
  std::optional<double> resolution_ms, window_ms;
  std::optional<int64_t> steps;
  std::optional<double> joules;
  std::optional<double> avg_power_w, j_per_step, j_per_sample, samples_per_j;
  std::optional<double> idle_power_w;
  std::optional<double> avg_power_above_idle_w, j_per_step_above_idle, j_per_sample_above_idle,
      samples_per_j_above_idle;
  power::Telemetry start, end;
};

// Fills the figures that follow from a window's joules, length and steps (average power, J per step
// and per sample, samples per J, and with an idle power the same above idle).
void derive_energy_figures(PointEnergy& energy, int64_t batch_size);

// The energy fields of a point record (energy_method ... end_power_w), added to j in the log's order.
void add_energy_fields(Json& j, const PointEnergy& energy);

// chunk: auto, at a batch size that ran out of memory whole: the micro-batches (inference: slices) its
// steps ran in, and the search on the batch itself that found the largest one fitting beside it.
struct PointChunk {
  int64_t chunk = 0;            // even_chunk of the batch size and largest_fitting
  int64_t largest_fitting = 0;  // the largest micro-batch that ran the whole batch without running out
  int tries = 0;                // the search's (0: an earlier pass's choice at this size, taken again)
  double seconds = 0;           // the search's tries, in all
  // Where the search started at the largest micro-batch that fitted beside a smaller batch: that size.
  std::optional<int64_t> bound_from_batch;
};

// The per-batch summary of the timed steps. The sweep writes every field; a log from elsewhere may
// leave statistics out (analyze recomputes them from the steps), so they are optional.
struct PointRecord {
  BatchKey key;
  std::optional<int64_t> samples;
  std::optional<double> median_ms, p10_ms, p90_ms, mean_ms, min_ms, max_ms, stddev_ms, cv;
  std::optional<double> samples_per_s;
  std::optional<double> flops_per_step;  // the work of one step (forward, or forward+backward for train)
  std::optional<double> tflops;
  std::optional<double> host_median_ms;  // the median of the steps' host_ms
  // The median's 95% confidence interval from the steps' order statistics; absent with fewer than 6.
  std::optional<double> median_ci_low_ms, median_ci_high_ms;
  // steps: auto: why this size's timing stopped (kStoppedBy...); absent for a fixed step count.
  std::optional<std::string> steps_stopped_by;
  // Training with loss scaling (fp16): timed steps whose optimizer step was skipped because a gradient
  // overflowed (they are cheaper than the rest), and the loss scale after the last of them.
  std::optional<int64_t> skipped_steps;
  std::optional<double> loss_scale;
  std::optional<int64_t> peak_memory_bytes;
  std::optional<PointEnergy> energy;  // only where the device had a power source
  std::optional<PointChunk> chunk;    // chunk: auto, where the batch did not fit whole
};

// Why the timed steps of a batch size under steps: auto stopped.
inline constexpr const char* kStoppedByCiWidth = "ci_width";    // the median's interval was narrow enough
inline constexpr const char* kStoppedByMaxTime = "max_time";    // the time limit came first
inline constexpr const char* kStoppedByMaxSteps = "max_steps";  // the largest step count came first

struct OomRecord {
  BatchKey key;
  std::string message;  // the first line of the allocator's error
};

// A batch size that was not run, with why (a smaller size ran out of memory, LibTorch lacks an operation).
struct SkippedRecord {
  BatchKey key;
  std::string reason;
};

// How one sweep session's wall time was spent, in seconds: the parts in kSweepParts' order, and the
// whole from the start of the sweep to its end record.
struct SweepTimeSpent {
  double total_s = 0;
  std::vector<std::pair<std::string, double>> parts;
};
// What a sweep spends its time on; "other" is the rest of the whole (the run record, waits, freeing).
inline const char* const kSweepParts[] = {
    "timed_steps",      "warm_up",   "energy_windows", "idle_baseline", "model_building",
    "data_preparation", "profiling", "chunk_search",   "writing",       "other"};
// "82% timed steps, 11% warm up, 4% writing, ... of 41.2 s": the parts over 0.5%, largest first.
std::string describe_time_spent(const SweepTimeSpent& spent);
// The share of the whole that was warm-up and timed steps, from 0 to 1 (0 for an empty whole).
double stepping_share(const SweepTimeSpent& spent);

struct EndRecord {
  std::string time;
  std::optional<bool> complete;
  std::optional<SweepTimeSpent> time_spent = std::nullopt;  // absent in logs written before it was recorded
};

using SweepRecord = std::variant<RunRecord, StepRecord, PointRecord, OomRecord, SkippedRecord, EndRecord>;

// The batch key of a per-batch record; nullptr for run and end records.
const BatchKey* batch_key_of(const SweepRecord& record);
const char* type_of(const SweepRecord& record);

// Building the records of a sweep.
RunRecord run_record(const char* type, const std::string& command_line, const Json& config);
BatchKey batch_key(const ExperimentConfig& e, const std::string& device, int64_t batch_size);
PointRecord point_record(const BatchKey& key, const std::vector<double>& times_ms, double flops_per_step,
                         std::optional<int64_t> peak_memory_bytes);
EndRecord end_record(std::optional<SweepTimeSpent> time_spent = std::nullopt);  // now, complete

// One point record for a batch size measured in several passes (repeats: R), for what is not in the step
// times (those the caller pools itself): the work per step, chunk and loss scale as the last pass has
// them; the highest peak memory; the skipped steps added up; the host median the median of the passes'
// (pool the steps' host_ms where they have it); the energy windows added up (merge_energy). Its key has
// no pass, and its step-time statistics are the last pass's. `passes` must not be empty.
PointRecord merge_pass_points(const std::vector<PointRecord>& passes);

// The energy of one batch size over several windows (one a pass): their joules, lengths and steps added
// up, the idle power weighted by each window's length (so that the energy above idle is the sum of the
// windows'), the coarsest resolution, and the figures derived again. start and end are the telemetry
// of the window that ended on the lowest SM clock, the one a throttling check must see (else the last
// window's). A window without joules, length or steps leaves the figures out. `windows` must not be empty.
PointEnergy merge_energy(const std::vector<PointEnergy>& windows, int64_t batch_size);

// The record that opens the logs of the other commands (train, compare, maxbatch, microbatch).
Json context_record(const char* type, const std::string& command_line, const Json& config);

// The first key of two objects (in `now`'s order, then `earlier`'s) whose values differ, as "KEY was X
// there and is Y here" (a missing key is "absent"); empty where they are equal.
std::string first_key_difference(const Json& earlier, const Json& now);

Json to_json(const RunRecord& r);
Json to_json(const StepRecord& r);
Json to_json(const PointRecord& r);
Json to_json(const OomRecord& r);
Json to_json(const SkippedRecord& r);
Json to_json(const EndRecord& r);
Json to_json(const SweepRecord& r);
// The fields every per-batch record starts with: its type, then the batch key.
Json key_json(const char* type, const BatchKey& k);

// A record that cannot be read as the type it claims; what() is record_problem's sentence.
class BadRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads one record of a sweep log. Throws BadRecord with record_problem's words where a field has the
// wrong type or range, and for types a sweep log does not hold.
SweepRecord sweep_record_from_json(const Json& j);
bool is_sweep_record_type(const std::string& type);

// What is wrong with a record that a reader would otherwise trust, in words that follow "the record"
// ("has a batch_size that is not a whole number from 1 to 16777216"), or "" when it is sound. Every field
// the readers use is checked for its type and range where it is present; step, point, oom and skipped
// records must have their experiment, model and batch size, steps a positive time and points their
// statistics in order. Records of types batchscope does not write give "".
std::string record_problem(const Json& record);

}  // namespace batchscope
