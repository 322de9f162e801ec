#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/config.h"
#include "lib/power/power_source.h"
#include "lib/statistics.h"

namespace batchscope {

// Records keep their keys in the order written, "type" first, so a log reads naturally.
using Json = nlohmann::ordered_json;

// The record types of steps.jsonl, in the order they appear: one "run" (and one "resume" per
// resumed session), then per batch size its "step" records followed by its "point" summary, or an
// "oom" record with "skipped" records for the larger sizes; "end" closes a complete sweep.
namespace record {
inline constexpr const char* kRun = "run";
inline constexpr const char* kResume = "resume";
inline constexpr const char* kStep = "step";
inline constexpr const char* kPoint = "point";
inline constexpr const char* kOom = "oom";
inline constexpr const char* kSkipped = "skipped";
inline constexpr const char* kEnd = "end";
}  // namespace record

// The record that opens every log batchscope writes (run, resume, maxbatch): its type, a new run id,
// the start time, the environment (host, versions, devices), the command and the configuration. A number
// without its context is not a result.
Json context_record(const char* type, const std::string& command_line, const Json& config);

// Fields shared by every per-batch record: which experiment and batch size it belongs to.
Json batch_record(const char* type, const ExperimentConfig& e, const std::string& device, int64_t batch_size);

struct StepSample {
  double time_ms = 0;
  std::optional<double> loss;
};

Json step_record(const ExperimentConfig& e, const std::string& device, int64_t batch_size, int step,
                 const StepSample& sample, std::optional<int64_t> peak_memory_bytes);

// The energy side of one batch size, measured where the device has a power source (NVML for a GPU,
// RAPL for the CPU). Counters update only every few milliseconds, so the energy is read once over the
// timed steps of the batch size together (extended by more steps when they take less than the source
// needs), never per step; j_per_step is that energy divided by the steps it covered.
//
// In the point record these become flat fields (absent where no source was available):
//   energy_method, energy_scope, energy_resolution_ms, energy_window_ms, energy_steps, energy_j,
//   avg_power_w, j_per_step, j_per_sample, samples_per_j,
//   idle_power_w (null when no idle baseline was measured), and, with a baseline, the same with the
//   idle power taken away: avg_power_above_idle_w, j_per_step_above_idle, j_per_sample_above_idle,
//   samples_per_j_above_idle (null where the draw above idle is not positive);
//   start_/end_ + sm_clock_mhz, memory_clock_mhz, temperature_c, utilization_pct, power_w: telemetry
//   read just before the first and just after the last step of the window (null where unknown).
struct PointEnergy {
  std::string method, scope;
  double resolution_ms = 0;
  double window_ms = 0;
  int steps = 0;
  double joules = 0;
  std::optional<double> idle_power_w;
  power::Telemetry start, end;
};

void add_energy_fields(Json& point, int64_t batch_size, const PointEnergy& energy);

// The per-batch summary; flops_per_step is the work of one step (forward, or forward+backward for train).
Json point_record(const ExperimentConfig& e, const std::string& device, int64_t batch_size,
                  const std::vector<double>& times_ms, double flops_per_step,
                  std::optional<int64_t> peak_memory_bytes);

// Appends JSON lines to a file. Lines are buffered in memory and reach the file on flush(), which
// writes them at once and syncs: a killed process leaves whole batch sizes, never half of one.
class JsonlWriter {
 public:
  // Opens for appending (the file is created if missing). Throws UserError when it cannot be opened.
  explicit JsonlWriter(const std::string& path);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  void add(const Json& record);
  void flush();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string pending_;
};

struct JsonlContents {
  std::vector<Json> records;
  std::vector<int> record_lines;  // the 1-based line of each record
  // Lines that are not records, with their line numbers; filled only when reading leniently.
  std::vector<int> bad_lines;
  // Byte length of the file's complete lines: an interrupted write leaves a tail after it.
  std::uintmax_t complete_bytes = 0;
  int complete_lines = 0;
  bool truncated_tail = false;
};

enum class BadLines { Throw, Collect };

// Reads every record of a JSON-lines file. A line that is not a JSON object with a "type" throws
// UserError naming the file and line (or, with BadLines::Collect, is listed in bad_lines and skipped),
// except an unterminated last line (a killed write), which is reported as truncated_tail.
JsonlContents read_jsonl(const std::string& path, BadLines bad_lines = BadLines::Throw);

// What is wrong with a record that a reader would otherwise trust, in words that follow "the record"
// ("has a batch_size that is not a whole number from 1 to 16777216"), or "" when it is sound. Every field
// the readers use is checked for its type and range where it is present; step, point, oom and skipped
// records must have their experiment, model and batch size, steps a positive time and points their
// statistics in order. Records of types batchscope does not write give "".
std::string record_problem(const Json& record);

}  // namespace batchscope
