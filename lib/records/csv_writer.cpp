#include "lib/records/csv_writer.h"

#include <cstdio>
#include <fstream>

#include "lib/common/errors.h"

namespace batchscope {
namespace {

std::string escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Text as it is, numbers as JSON writes them (the shortest form that reads back to the same double),
// null as an empty cell.
std::string cell(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return escape(value.get<std::string>());
  return escape(value.dump());
}

void write_lines(std::ofstream& out, const std::vector<SweepRecord>& records, std::string& run_id) {
  for (const SweepRecord& r : records) {
    if (const auto* run = std::get_if<RunRecord>(&r)) run_id = run->run_id;
    const std::string line = csv_line(r, run_id);
    if (!line.empty()) out << line << '\n';
  }
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  // The fields of the per-batch records in the order the JSON lines hold them (tests/test_records.cpp
  // checks that every field of every record type has its column).
  static const std::vector<std::string> columns = {
      "type", "run_id", "experiment", "model", "phase", "precision", "device", "transfer", "batch_size",
      "pass",
      // step
      "step", "time_ms", "host_ms", "loss",
      // point
      "samples", "median_ms", "p10_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "stddev_ms", "cv",
      "samples_per_s", "flops_per_step", "tflops", "host_median_ms", "median_ci_low_ms", "median_ci_high_ms",
      "steps_stopped_by", "skipped_steps", "loss_scale", "peak_memory_bytes",
      // point energy
      "energy_method", "energy_scope", "energy_resolution_ms", "energy_window_ms", "energy_steps", "energy_j",
      "avg_power_w", "j_per_step", "j_per_sample", "samples_per_j", "idle_power_w", "avg_power_above_idle_w",
      "j_per_step_above_idle", "j_per_sample_above_idle", "samples_per_j_above_idle", "start_sm_clock_mhz",
      "start_memory_clock_mhz", "start_temperature_c", "start_utilization_pct", "start_power_w",
      "end_sm_clock_mhz", "end_memory_clock_mhz", "end_temperature_c", "end_utilization_pct", "end_power_w",
      // point: chunk: auto's micro-batches where the batch did not fit whole
      "chunk", "chunk_largest_fitting", "chunk_tries", "chunk_search_s", "chunk_bound_from_batch",
      // oom, skipped
      "message", "reason"};
  return columns;
}

std::string csv_header_line() {
  std::string line;
  for (const std::string& c : csv_columns()) line += (line.empty() ? "" : ",") + c;
  return line;
}

std::string csv_line(const SweepRecord& record, const std::string& run_id) {
  if (batch_key_of(record) == nullptr) return "";
  Json fields = to_json(record);
  fields["run_id"] = run_id;
  std::string line;
  bool first = true;
  for (const std::string& c : csv_columns()) {
    if (!first) line += ',';
    first = false;
    const auto found = fields.find(c);
    if (found != fields.end()) line += cell(*found);
  }
  return line;
}

void rewrite_csv(const std::string& path, const std::vector<SweepRecord>& records) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out)
      throw UserError(
          located(temporary, 0, "cannot be written", "choose an --out directory you can write to"));
    out << csv_header_line() << '\n';
    std::string run_id;
    write_lines(out, records, run_id);
    if (!out.flush()) throw UserError(located(temporary, 0, "writing failed", "free disk space"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw UserError(located(path, 0, "cannot be replaced", "check the permissions of the --out directory"));
  }
}

void append_csv(const std::string& path, const std::vector<SweepRecord>& records, std::string& run_id) {
  std::ofstream out(path, std::ios::app);
  if (!out)
    throw UserError(located(path, 0, "cannot be written", "choose an --out directory you can write to"));
  write_lines(out, records, run_id);
  if (!out.flush()) throw UserError(located(path, 0, "writing failed", "free disk space"));
}

}  // namespace batchscope
