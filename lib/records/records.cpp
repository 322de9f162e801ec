#include "lib/records/records.h"

#include <algorithm>
#include <cstdio>

#include "lib/common/statistics.h"
#include "lib/device/environment.h"

namespace batchscope {
namespace {

// Readers for fields record_problem() has already checked: a wrong type cannot reach them.
std::optional<double> number(const Json& j, const char* key) {
  const auto found = j.find(key);
  if (found == j.end() || !found->is_number()) return std::nullopt;
  return found->get<double>();
}
std::optional<int64_t> whole(const Json& j, const char* key) {
  const auto found = j.find(key);
  if (found == j.end() || !found->is_number_integer()) return std::nullopt;
  return found->get<int64_t>();
}
std::string text(const Json& j, const char* key) {
  const auto found = j.find(key);
  return found != j.end() && found->is_string() ? found->get<std::string>() : std::string();
}

// The number fields of the energy side of a point, in the log's order, as a table that both writing
// and reading go through: the window (before energy_steps), the figures (after it), and the telemetry
// of each edge of the window (start_ and end_ + the key).
template <typename Struct>
struct NumberField {
  const char* key;
  std::optional<double> Struct::*field;
};
const NumberField<PointEnergy> kWindowFields[] = {{"energy_resolution_ms", &PointEnergy::resolution_ms},
                                                  {"energy_window_ms", &PointEnergy::window_ms}};
const NumberField<PointEnergy> kFigureFields[] = {
    {"energy_j", &PointEnergy::joules},
    {"avg_power_w", &PointEnergy::avg_power_w},
    {"j_per_step", &PointEnergy::j_per_step},
    {"j_per_sample", &PointEnergy::j_per_sample},
    {"samples_per_j", &PointEnergy::samples_per_j},
    {"idle_power_w", &PointEnergy::idle_power_w},
    {"avg_power_above_idle_w", &PointEnergy::avg_power_above_idle_w},
    {"j_per_step_above_idle", &PointEnergy::j_per_step_above_idle},
    {"j_per_sample_above_idle", &PointEnergy::j_per_sample_above_idle},
    {"samples_per_j_above_idle", &PointEnergy::samples_per_j_above_idle}};
const NumberField<power::Telemetry> kTelemetryFields[] = {{"sm_clock_mhz", &power::Telemetry::sm_clock_mhz},
                                                          {"memory_clock_mhz", &power::Telemetry::memory_clock_mhz},
                                                          {"temperature_c", &power::Telemetry::temperature_c},
                                                          {"utilization_pct", &power::Telemetry::utilization_pct},
                                                          {"power_w", &power::Telemetry::power_w}};

// The statistics of a point: a summary and rates that a foreign log may leave out (then they stay out),
// and a spread that a sweep leaves null for a single step.
const NumberField<PointRecord> kSummaryFields[] = {{"median_ms", &PointRecord::median_ms}, {"p10_ms", &PointRecord::p10_ms},
                                                   {"p90_ms", &PointRecord::p90_ms},       {"mean_ms", &PointRecord::mean_ms},
                                                   {"min_ms", &PointRecord::min_ms},       {"max_ms", &PointRecord::max_ms}};
const NumberField<PointRecord> kSpreadFields[] = {{"stddev_ms", &PointRecord::stddev_ms}, {"cv", &PointRecord::cv}};
const NumberField<PointRecord> kRateFields[] = {{"samples_per_s", &PointRecord::samples_per_s},
                                                {"flops_per_step", &PointRecord::flops_per_step},
                                                {"tflops", &PointRecord::tflops}};

template <typename Struct, std::size_t N>
void write_fields(Json& j, const Struct& from, const NumberField<Struct> (&fields)[N], const std::string& prefix = "") {
  for (const auto& f : fields) j[prefix + f.key] = optional_json(from.*f.field);
}

// The fields that have a value; absent ones stay out of the record.
template <typename Struct, std::size_t N>
void write_present_fields(Json& j, const Struct& from, const NumberField<Struct> (&fields)[N]) {
  for (const auto& f : fields) {
    if (from.*f.field) j[f.key] = *(from.*f.field);
  }
}

template <typename Struct, std::size_t N>
void read_fields(const Json& j, Struct& to, const NumberField<Struct> (&fields)[N], const std::string& prefix = "") {
  for (const auto& f : fields) to.*f.field = number(j, (prefix + f.key).c_str());
}

BatchKey key_from(const Json& j) {
  return {text(j, "experiment"), text(j, "model"),    text(j, "phase"),
          text(j, "precision"),  text(j, "device"),   text(j, "transfer"),
          whole(j, "batch_size").value_or(0), whole(j, "pass")};
}

std::optional<PointEnergy> energy_from(const Json& j) {
  // The writer puts energy_method into every point it measured energy for; the numbers may be null.
  if (!j.contains("energy_method") || j["energy_method"].is_null()) return std::nullopt;
  PointEnergy e;
  e.method = text(j, "energy_method");
  e.scope = text(j, "energy_scope");
  read_fields(j, e, kWindowFields);
  e.steps = whole(j, "energy_steps");
  read_fields(j, e, kFigureFields);
  read_fields(j, e.start, kTelemetryFields, "start_");
  read_fields(j, e.end, kTelemetryFields, "end_");
  return e;
}

// The keys of a run record that are not its environment.
bool run_own_key(const std::string& key) {
  for (const char* own : {"type", "run_id", "start_time", "command", "config", "timers", "power", "energy_note"}) {
    if (key == own) return true;
  }
  return false;
}

}  // namespace

void add_energy_fields(Json& j, const PointEnergy& e) {
  j["energy_method"] = e.method;
  j["energy_scope"] = e.scope;
  write_fields(j, e, kWindowFields);
  j["energy_steps"] = optional_json(e.steps);
  write_fields(j, e, kFigureFields);
  write_fields(j, e.start, kTelemetryFields, "start_");
  write_fields(j, e.end, kTelemetryFields, "end_");
}

void derive_energy_figures(PointEnergy& e, int64_t batch_size) {
  if (!e.joules || !e.window_ms || !e.steps || *e.steps <= 0) return;
  const double steps = static_cast<double>(*e.steps);
  const double seconds = *e.window_ms / 1e3;
  const double per_sample = *e.joules / steps / static_cast<double>(batch_size);
  e.avg_power_w = *e.joules / seconds;
  e.j_per_step = *e.joules / steps;
  e.j_per_sample = per_sample;
  e.samples_per_j = per_sample > 0 ? std::optional<double>(1.0 / per_sample) : std::nullopt;
  e.avg_power_above_idle_w = e.j_per_step_above_idle = e.j_per_sample_above_idle = e.samples_per_j_above_idle =
      std::nullopt;
  if (!e.idle_power_w) return;
  // The window's draw above what the device takes doing nothing: the work's own energy.
  const double above_j = *e.joules - *e.idle_power_w * seconds;
  e.avg_power_above_idle_w = above_j / seconds;
  if (above_j <= 0) return;
  const double above_per_sample = above_j / steps / static_cast<double>(batch_size);
  e.j_per_step_above_idle = above_j / steps;
  e.j_per_sample_above_idle = above_per_sample;
  e.samples_per_j_above_idle = 1.0 / above_per_sample;
}

PointEnergy merge_energy(const std::vector<PointEnergy>& windows, int64_t batch_size) {
  PointEnergy merged = windows.back();
  merged.joules = merged.window_ms = std::nullopt;
  merged.steps = std::nullopt;
  merged.idle_power_w = std::nullopt;
  double joules = 0, window_ms = 0, idle_joules = 0;
  int64_t steps = 0;
  bool complete = true, idle_everywhere = true;
  const PointEnergy* lowest_end = &windows.back();
  for (const PointEnergy& w : windows) {
    if (w.resolution_ms) merged.resolution_ms = std::max(merged.resolution_ms.value_or(0), *w.resolution_ms);
    if (w.end.sm_clock_mhz &&
        (!lowest_end->end.sm_clock_mhz || *w.end.sm_clock_mhz < *lowest_end->end.sm_clock_mhz))
      lowest_end = &w;
    if (!w.joules || !w.window_ms || !w.steps) {
      complete = false;
      continue;
    }
    joules += *w.joules;
    window_ms += *w.window_ms;
    steps += *w.steps;
    if (w.idle_power_w) {
      idle_joules += *w.idle_power_w * *w.window_ms;
    } else {
      idle_everywhere = false;
    }
  }
  merged.start = lowest_end->start;
  merged.end = lowest_end->end;
  merged.avg_power_w = merged.j_per_step = merged.j_per_sample = merged.samples_per_j = std::nullopt;
  merged.avg_power_above_idle_w = merged.j_per_step_above_idle = merged.j_per_sample_above_idle =
      merged.samples_per_j_above_idle = std::nullopt;
  if (!complete || window_ms <= 0) return merged;
  merged.joules = joules;
  merged.window_ms = window_ms;
  merged.steps = steps;
  if (idle_everywhere) merged.idle_power_w = idle_joules / window_ms;
  derive_energy_figures(merged, batch_size);
  return merged;
}

PointRecord merge_pass_points(const std::vector<PointRecord>& passes) {
  PointRecord merged = passes.back();
  merged.key.pass.reset();
  std::vector<double> host_medians;
  std::vector<PointEnergy> windows;
  for (const PointRecord& p : passes) {
    if (!merged.flops_per_step) merged.flops_per_step = p.flops_per_step;
    if (p.peak_memory_bytes)
      merged.peak_memory_bytes = std::max(merged.peak_memory_bytes.value_or(0), *p.peak_memory_bytes);
    if (p.host_median_ms) host_medians.push_back(*p.host_median_ms);
    if (p.energy) windows.push_back(*p.energy);
  }
  merged.skipped_steps.reset();
  for (const PointRecord& p : passes) {
    if (p.skipped_steps) merged.skipped_steps = merged.skipped_steps.value_or(0) + *p.skipped_steps;
  }
  merged.host_median_ms = host_medians.empty() ? std::nullopt : std::optional<double>(median(host_medians));
  merged.energy = windows.empty() ? std::nullopt
                                  : std::optional<PointEnergy>(merge_energy(windows, merged.key.batch_size));
  return merged;
}

Json key_json(const char* type, const BatchKey& k) {
  Json j = {{"type", type},          {"experiment", k.experiment}, {"model", k.model},
            {"phase", k.phase},      {"precision", k.precision},   {"device", k.device}};
  if (!k.transfer.empty()) j["transfer"] = k.transfer;
  j["batch_size"] = k.batch_size;
  if (k.pass) j["pass"] = *k.pass;
  return j;
}

const BatchKey* batch_key_of(const SweepRecord& record) {
  return std::visit(
      [](const auto& r) -> const BatchKey* {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, RunRecord> || std::is_same_v<T, EndRecord>) {
          return nullptr;
        } else {
          return &r.key;
        }
      },
      record);
}

const char* type_of(const SweepRecord& record) {
  switch (record.index()) {
    case 0: return std::get<RunRecord>(record).type == record::kResume ? record::kResume : record::kRun;
    case 1: return record::kStep;
    case 2: return record::kPoint;
    case 3: return record::kOom;
    case 4: return record::kSkipped;
    default: return record::kEnd;
  }
}

RunRecord run_record(const char* type, const std::string& command_line, const Json& config) {
  RunRecord r;
  r.type = type;
  r.run_id = make_run_id();
  r.start_time = iso8601_utc_now();
  const nlohmann::json environment = collect_environment();
  for (const auto& [key, value] : environment.items()) r.environment[key] = Json(value);
  r.command = command_line;
  r.config = config;
  return r;
}

Json context_record(const char* type, const std::string& command_line, const Json& config) {
  return to_json(run_record(type, command_line, config));
}

BatchKey batch_key(const ExperimentConfig& e, const std::string& device, int64_t batch_size) {
  return {e.name, e.model, to_string(e.phase), to_string(e.precision), device, to_string(e.transfer), batch_size, std::nullopt};
}

PointRecord point_record(const BatchKey& key, const std::vector<double>& times_ms, double flops_per_step,
                         std::optional<int64_t> peak_memory_bytes) {
  const Summary s = summarize(times_ms);
  PointRecord p;
  p.key = key;
  p.samples = s.count;
  p.median_ms = s.median;
  p.p10_ms = s.p10;
  p.p90_ms = s.p90;
  p.mean_ms = s.mean;
  p.min_ms = s.min;
  p.max_ms = s.max;
  p.stddev_ms = s.stddev;
  p.cv = s.cv;
  p.samples_per_s = static_cast<double>(key.batch_size) / (s.median / 1e3);
  p.flops_per_step = flops_per_step;
  p.tflops = flops_per_step / (s.median / 1e3) / 1e12;
  if (const std::optional<Interval> ci = median_confidence_interval(times_ms)) {
    p.median_ci_low_ms = ci->low;
    p.median_ci_high_ms = ci->high;
  }
  p.peak_memory_bytes = peak_memory_bytes;
  return p;
}

EndRecord end_record(std::optional<SweepTimeSpent> time_spent) { return {iso8601_utc_now(), true, std::move(time_spent)}; }

Json to_json(const RunRecord& r) {
  Json j = {{"type", r.type}, {"run_id", r.run_id}, {"start_time", r.start_time}};
  for (const auto& [key, value] : r.environment.items()) j[key] = value;
  j["command"] = r.command;
  j["config"] = r.config;
  if (!r.timers.is_null()) j["timers"] = r.timers;
  if (!r.power.is_null()) j["power"] = r.power;
  if (!r.energy_note.empty()) j["energy_note"] = r.energy_note;
  return j;
}

Json to_json(const StepRecord& r) {
  Json j = key_json(record::kStep, r.key);
  j["step"] = optional_json(r.step);
  j["time_ms"] = r.time_ms;
  if (r.host_ms) j["host_ms"] = *r.host_ms;
  j["loss"] = optional_json(r.loss);
  j["peak_memory_bytes"] = optional_json(r.peak_memory_bytes);
  return j;
}

Json to_json(const PointRecord& r) {
  Json j = key_json(record::kPoint, r.key);
  if (r.samples) j["samples"] = *r.samples;
  write_present_fields(j, r, kSummaryFields);
  write_fields(j, r, kSpreadFields);
  write_present_fields(j, r, kRateFields);
  if (r.host_median_ms) j["host_median_ms"] = *r.host_median_ms;
  if (r.median_ci_low_ms) j["median_ci_low_ms"] = *r.median_ci_low_ms;
  if (r.median_ci_high_ms) j["median_ci_high_ms"] = *r.median_ci_high_ms;
  if (r.steps_stopped_by) j["steps_stopped_by"] = *r.steps_stopped_by;
  if (r.skipped_steps) j["skipped_steps"] = *r.skipped_steps;
  if (r.loss_scale) j["loss_scale"] = *r.loss_scale;
  j["peak_memory_bytes"] = optional_json(r.peak_memory_bytes);
  if (r.energy) add_energy_fields(j, *r.energy);
  if (r.chunk) {
    j["chunk"] = r.chunk->chunk;
    j["chunk_largest_fitting"] = r.chunk->largest_fitting;
    j["chunk_tries"] = r.chunk->tries;
    j["chunk_search_s"] = r.chunk->seconds;
    if (r.chunk->bound_from_batch) j["chunk_bound_from_batch"] = *r.chunk->bound_from_batch;
  }
  return j;
}

Json to_json(const OomRecord& r) {
  Json j = key_json(record::kOom, r.key);
  j["message"] = r.message;
  return j;
}

Json to_json(const SkippedRecord& r) {
  Json j = key_json(record::kSkipped, r.key);
  j["reason"] = r.reason;
  return j;
}

Json to_json(const EndRecord& r) {
  Json j = {{"type", record::kEnd}, {"time", r.time}};
  if (r.complete) j["complete"] = *r.complete;
  if (r.time_spent) {
    Json spent = {{"total", r.time_spent->total_s}};
    for (const auto& [part, seconds] : r.time_spent->parts) spent[part] = seconds;
    j["time_spent_s"] = spent;
  }
  return j;
}

Json to_json(const SweepRecord& r) {
  return std::visit([](const auto& typed) { return to_json(typed); }, r);
}

bool is_sweep_record_type(const std::string& type) {
  for (const char* t : {record::kRun, record::kResume, record::kStep, record::kPoint, record::kOom,
                        record::kSkipped, record::kEnd}) {
    if (type == t) return true;
  }
  return false;
}

SweepRecord sweep_record_from_json(const Json& j) {
  const std::string problem = record_problem(j);
  if (!problem.empty()) throw BadRecord(problem);
  const std::string type = j["type"].get<std::string>();
  if (type == record::kRun || type == record::kResume) {
    RunRecord r;
    r.type = type;
    r.run_id = text(j, "run_id");
    r.start_time = text(j, "start_time");
    for (const auto& [key, value] : j.items()) {
      if (!run_own_key(key)) r.environment[key] = value;
    }
    r.command = text(j, "command");
    if (j.contains("config")) r.config = j["config"];
    if (j.contains("timers")) r.timers = j["timers"];
    if (j.contains("power")) r.power = j["power"];
    r.energy_note = text(j, "energy_note");
    return r;
  }
  if (type == record::kStep) {
    return StepRecord{key_from(j), whole(j, "step"), *number(j, "time_ms"), number(j, "loss"),
                      whole(j, "peak_memory_bytes"), number(j, "host_ms")};
  }
  if (type == record::kPoint) {
    PointRecord p;
    p.key = key_from(j);
    p.samples = whole(j, "samples");
    read_fields(j, p, kSummaryFields);
    read_fields(j, p, kSpreadFields);
    read_fields(j, p, kRateFields);
    p.host_median_ms = number(j, "host_median_ms");
    p.median_ci_low_ms = number(j, "median_ci_low_ms");
    p.median_ci_high_ms = number(j, "median_ci_high_ms");
    if (std::string why = text(j, "steps_stopped_by"); !why.empty()) p.steps_stopped_by = std::move(why);
    p.skipped_steps = whole(j, "skipped_steps");
    p.loss_scale = number(j, "loss_scale");
    p.peak_memory_bytes = whole(j, "peak_memory_bytes");
    p.energy = energy_from(j);
    if (j.contains("chunk")) {
      p.chunk = PointChunk{*whole(j, "chunk"), *whole(j, "chunk_largest_fitting"),
                           static_cast<int>(*whole(j, "chunk_tries")), *number(j, "chunk_search_s"),
                           whole(j, "chunk_bound_from_batch")};
    }
    return p;
  }
  if (type == record::kOom) return OomRecord{key_from(j), text(j, "message")};
  if (type == record::kSkipped) return SkippedRecord{key_from(j), text(j, "reason")};
  if (type == record::kEnd) {
    EndRecord end{text(j, "time"), std::nullopt};
    if (j.contains("complete") && j["complete"].is_boolean()) end.complete = j["complete"].get<bool>();
    if (j.contains("time_spent_s")) {
      SweepTimeSpent spent;
      for (const auto& [part, seconds] : j["time_spent_s"].items()) {
        if (part == "total") {
          spent.total_s = seconds.get<double>();
        } else {
          spent.parts.emplace_back(part, seconds.get<double>());
        }
      }
      end.time_spent = spent;
    }
    return end;
  }
  throw BadRecord("has type \"" + type + "\", which a sweep log does not hold");
}

std::string describe_time_spent(const SweepTimeSpent& spent) {
  std::vector<std::pair<std::string, double>> parts = spent.parts;
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [part, seconds] : parts) {
    const double share = spent.total_s > 0 ? 100.0 * seconds / spent.total_s : 0.0;
    if (share < 0.5) continue;
    std::string words = part;
    std::replace(words.begin(), words.end(), '_', ' ');
    char line[96];
    std::snprintf(line, sizeof line, "%s%.0f%% %s", text.empty() ? "" : ", ", share, words.c_str());
    text += line;
  }
  char total[48];
  std::snprintf(total, sizeof total, " of %.1f s", spent.total_s);
  return text + total;
}

double stepping_share(const SweepTimeSpent& spent) {
  if (spent.total_s <= 0) return 0;
  double stepping = 0;
  for (const auto& [part, seconds] : spent.parts) {
    if (part == "timed_steps" || part == "warm_up") stepping += seconds;
  }
  return stepping / spent.total_s;
}

namespace {

std::string shown(const Json& value) {
  if (value.is_null()) return "absent";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

std::string first_key_difference(const Json& earlier, const Json& now) {
  const auto value = [](const Json& object, const std::string& key) {
    return object.is_object() && object.contains(key) ? object[key] : Json();
  };
  std::vector<std::string> keys;
  for (const Json* object : {&now, &earlier}) {
    if (!object->is_object()) continue;
    for (const auto& [key, unused] : object->items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  for (const std::string& key : keys) {
    const Json before = value(earlier, key), after = value(now, key);
    if (before == after) continue;
    // Within two objects, the key inside that differs: "optimizer.lr", not both optimizers whole.
    if (before.is_object() && after.is_object()) return key + "." + first_key_difference(before, after);
    return key + " was " + shown(before) + " there and is " + shown(after) + " here";
  }
  return "";
}

}  // namespace batchscope
