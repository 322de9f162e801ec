#include "lib/records.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lib/environment.h"
#include "lib/errors.h"
#include "lib/limits.h"

namespace batchscope {

Json context_record(const char* type, const std::string& command_line, const Json& config) {
  Json record = {{"type", type}, {"run_id", make_run_id()}, {"start_time", iso8601_utc_now()}};
  const nlohmann::json environment = collect_environment();
  for (const auto& [key, value] : environment.items()) record[key] = Json(value);
  record["command"] = command_line;
  record["config"] = config;
  return record;
}

Json batch_record(const char* type, const ExperimentConfig& e, const std::string& device,
                  int64_t batch_size) {
  return Json{{"type", type},
              {"experiment", e.name},
              {"model", e.model},
              {"phase", to_string(e.phase)},
              {"precision", to_string(e.precision)},
              {"device", device},
              {"transfer", to_string(e.transfer)},
              {"batch_size", batch_size}};
}

Json step_record(const ExperimentConfig& e, const std::string& device, int64_t batch_size, int step,
                 const StepSample& sample, std::optional<int64_t> peak_memory_bytes) {
  Json j = batch_record(record::kStep, e, device, batch_size);
  j["step"] = step;
  j["time_ms"] = sample.time_ms;
  j["loss"] = sample.loss ? Json(*sample.loss) : Json(nullptr);
  j["peak_memory_bytes"] = peak_memory_bytes ? Json(*peak_memory_bytes) : Json(nullptr);
  return j;
}

Json point_record(const ExperimentConfig& e, const std::string& device, int64_t batch_size,
                  const std::vector<double>& times_ms, double flops_per_step,
                  std::optional<int64_t> peak_memory_bytes) {
  const Summary s = summarize(times_ms);
  Json j = batch_record(record::kPoint, e, device, batch_size);
  j["samples"] = s.count;
  j["median_ms"] = s.median;
  j["p10_ms"] = s.p10;
  j["p90_ms"] = s.p90;
  j["mean_ms"] = s.mean;
  j["min_ms"] = s.min;
  j["max_ms"] = s.max;
  j["stddev_ms"] = s.stddev ? Json(*s.stddev) : Json(nullptr);
  j["cv"] = s.cv ? Json(*s.cv) : Json(nullptr);
  j["samples_per_s"] = static_cast<double>(batch_size) / (s.median / 1e3);
  j["flops_per_step"] = flops_per_step;
  j["tflops"] = flops_per_step / (s.median / 1e3) / 1e12;
  j["peak_memory_bytes"] = peak_memory_bytes ? Json(*peak_memory_bytes) : Json(nullptr);
  return j;
}

namespace {

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

void add_telemetry(Json& point, const char* when, const power::Telemetry& t) {
  const std::string prefix = when;
  point[prefix + "sm_clock_mhz"] = optional_number(t.sm_clock_mhz);
  point[prefix + "memory_clock_mhz"] = optional_number(t.memory_clock_mhz);
  point[prefix + "temperature_c"] = optional_number(t.temperature_c);
  point[prefix + "utilization_pct"] = optional_number(t.utilization_pct);
  point[prefix + "power_w"] = optional_number(t.power_w);
}

}  // namespace

void add_energy_fields(Json& point, int64_t batch_size, const PointEnergy& energy) {
  const double steps = energy.steps;
  const double seconds = energy.window_ms / 1e3;
  const double per_step = energy.joules / steps;
  const double per_sample = per_step / static_cast<double>(batch_size);
  point["energy_method"] = energy.method;
  point["energy_scope"] = energy.scope;
  point["energy_resolution_ms"] = energy.resolution_ms;
  point["energy_window_ms"] = energy.window_ms;
  point["energy_steps"] = energy.steps;
  point["energy_j"] = energy.joules;
  point["avg_power_w"] = energy.joules / seconds;
  point["j_per_step"] = per_step;
  point["j_per_sample"] = per_sample;
  point["samples_per_j"] = per_sample > 0 ? Json(1.0 / per_sample) : Json(nullptr);
  point["idle_power_w"] = optional_number(energy.idle_power_w);
  if (energy.idle_power_w) {
    // The window's draw above what the device takes doing nothing: the work's own energy.
    const double above_j = energy.joules - *energy.idle_power_w * seconds;
    const bool positive = above_j > 0;
    const double above_per_sample = above_j / steps / static_cast<double>(batch_size);
    point["avg_power_above_idle_w"] = above_j / seconds;
    point["j_per_step_above_idle"] = positive ? Json(above_j / steps) : Json(nullptr);
    point["j_per_sample_above_idle"] = positive ? Json(above_per_sample) : Json(nullptr);
    point["samples_per_j_above_idle"] = positive ? Json(1.0 / above_per_sample) : Json(nullptr);
  } else {
    for (const char* key : {"avg_power_above_idle_w", "j_per_step_above_idle", "j_per_sample_above_idle",
                            "samples_per_j_above_idle"}) {
      point[key] = nullptr;
    }
  }
  add_telemetry(point, "start_", energy.start);
  add_telemetry(point, "end_", energy.end);
}

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ab");
  if (file_ == nullptr) {
    throw UserError(located(path, 0, std::string("cannot open for writing (") + std::strerror(errno) + ")",
                            "choose an --out directory you can write to"));
  }
}

JsonlWriter::~JsonlWriter() {
  try {
    flush();
  } catch (...) {
    // A destructor must not throw; the caller's explicit flush() reports write errors.
  }
  if (file_ != nullptr) std::fclose(file_);
}

void JsonlWriter::add(const Json& record) {
  pending_ += record.dump(-1, ' ', false, Json::error_handler_t::replace);
  pending_ += '\n';
}

void JsonlWriter::flush() {
  if (pending_.empty()) return;
  const bool ok = std::fwrite(pending_.data(), 1, pending_.size(), file_) == pending_.size() &&
                  std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  if (!ok) {
    throw UserError(located(path_, 0, std::string("writing failed (") + std::strerror(errno) + ")",
                            "free disk space or choose another --out directory, then run again to resume"));
  }
  pending_.clear();
}

JsonlContents read_jsonl(const std::string& path, BadLines bad_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(located(path, 0, "cannot be read", "check the path"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  JsonlContents out;
  std::size_t begin = 0;
  int line = 0;
  while (begin < text.size()) {
    ++line;
    const std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) {
      out.truncated_tail = true;  // no newline: the writer was stopped mid-line
      break;
    }
    const std::string_view content(text.data() + begin, end - begin);
    begin = end + 1;
    out.complete_lines = line;
    if (content.find_first_not_of(" \t\r") == std::string_view::npos) {
      out.complete_bytes = begin;
      continue;
    }
    Json j = Json::parse(content, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type")) {
      if (bad_lines == BadLines::Collect) {
        out.bad_lines.push_back(line);
        out.complete_bytes = begin;
        continue;
      }
      throw UserError(located(path, line, "is not a batchscope record (a JSON object with a \"type\")",
                              "remove or repair that line"));
    }
    out.records.push_back(std::move(j));
    out.record_lines.push_back(line);
    out.complete_bytes = begin;
  }
  return out;
}

namespace {

bool whole(const Json& j, int64_t min, int64_t max) {
  return j.is_number_integer() && !(j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) &&
         j.get<int64_t>() >= min && j.get<int64_t>() <= max;
}
bool finite(const Json& j) { return j.is_number() && std::isfinite(j.get<double>()); }

// "a batch_size", "an energy_j".
std::string article(const std::string& key) {
  return (std::string("aeiou").find(key.empty() ? 'x' : key[0]) != std::string::npos ? "an " : "a ") + key;
}

// Checks of the fields present in `j`: each key names what its value must be.
struct FieldCheck {
  const char* key;
  bool (*valid)(const Json&);
  const char* should_be;
};

std::string check_fields(const Json& j, std::initializer_list<FieldCheck> checks, const std::string& prefix = "") {
  for (const FieldCheck& c : checks) {
    if (j.contains(c.key) && !c.valid(j[c.key])) return "has " + article(prefix + c.key) + " that is not " + c.should_be;
  }
  return "";
}

bool text(const Json& j) { return j.is_string(); }
bool count(const Json& j) { return whole(j, 0, INT64_MAX); }
bool number_or_null(const Json& j) { return j.is_null() || finite(j); }
bool count_or_null(const Json& j) { return j.is_null() || count(j); }
bool duration(const Json& j) { return finite(j) && j.get<double>() >= 0; }
bool positive_duration(const Json& j) { return finite(j) && j.get<double>() > 0; }

std::string run_problem(const Json& r) {
  std::string problem = check_fields(r, {{"run_id", text, "text"},
                                         {"start_time", text, "text"},
                                         {"host", text, "text"},
                                         {"os", text, "text"},
                                         {"command", text, "text"},
                                         {"batchscope_version", text, "text"},
                                         {"libtorch_version", text, "text"},
                                         {"cuda_runtime_version", text, "text"},
                                         {"cudnn_version", text, "text"}});
  if (!problem.empty()) return problem;
  if (r.contains("cpu")) {
    if (!r["cpu"].is_object()) return "has a cpu that is not an object";
    problem = check_fields(r["cpu"], {{"model", text, "text"},
                                      {"logical_cores", count, "a whole number"},
                                      {"torch_threads", count, "a whole number"},
                                      {"torch_interop_threads", count, "a whole number"}},
                           "cpu.");
    if (!problem.empty()) return problem;
  }
  if (r.contains("gpus")) {
    if (!r["gpus"].is_array()) return "has gpus that are not a list";
    for (const Json& g : r["gpus"]) {
      if (!g.is_object()) return "has a gpus entry that is not an object";
      problem = check_fields(g, {{"index", count, "a whole number"},
                                 {"name", text, "text"},
                                 {"total_memory_bytes", count, "a whole number"}},
                             "gpus entry's ");
      if (!problem.empty()) return problem;
    }
  }
  if (r.contains("config")) {
    const Json& config = r["config"];
    if (!config.is_object()) return "has a config that is not an object";
    if (config.contains("experiments")) {
      if (!config["experiments"].is_array()) return "has config.experiments that are not a list";
      for (const Json& e : config["experiments"]) {
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string())
          return "has an experiment in config.experiments without a name";
        if (e.contains("batch")) {
          if (!e["batch"].is_array()) return "has an experiment whose batch is not a list";
          for (const Json& b : e["batch"]) {
            if (!whole(b, 1, limits::kMaxBatchSize))
              return "has an experiment batch size that is not a whole number from 1 to " +
                     std::to_string(limits::kMaxBatchSize);
          }
        }
        problem = check_fields(e, {{"cudnn_benchmark", [](const Json& j) { return j.is_boolean(); }, "true or false"},
                                   {"channels_last", [](const Json& j) { return j.is_boolean(); }, "true or false"}},
                               "experiment's ");
        if (!problem.empty()) return problem;
      }
    }
  }
  return "";
}

std::string batch_problem(const std::string& type, const Json& r) {
  if (!r.contains("experiment") || !r["experiment"].is_string() || r["experiment"].get<std::string>().empty())
    return "has no experiment name";
  if (!r.contains("model") || !r["model"].is_string()) return "has no model name";
  if (!r.contains("batch_size") || !whole(r["batch_size"], 1, limits::kMaxBatchSize))
    return "has a batch_size that is not a whole number from 1 to " + std::to_string(limits::kMaxBatchSize);
  std::string problem = check_fields(r, {{"phase", text, "text"},
                                         {"precision", text, "text"},
                                         {"device", text, "text"},
                                         {"transfer", text, "text"},
                                         {"peak_memory_bytes", count_or_null, "a whole number or null"}});
  if (!problem.empty()) return problem;
  if (type == record::kStep) {
    if (!r.contains("time_ms") || !positive_duration(r["time_ms"])) return "has a time_ms that is not a positive duration";
    return check_fields(r, {{"step", count, "a whole number"}, {"loss", number_or_null, "a number or null"}});
  }
  if (type == record::kPoint) {
    // The statistics of the timed steps; analyze recomputes them from the step records, so a point
    // may come without them, but where they are they must be sound.
    const char* const statistics[] = {"min_ms", "p10_ms", "median_ms", "p90_ms", "max_ms"};
    for (const char* key : statistics) {
      if (r.contains(key) && !duration(r[key])) return "has " + article(key) + " that is not a duration";
    }
    if (r.contains("samples") && !whole(r["samples"], 1, limits::kMaxSteps))
      return "has a samples count that is not a whole number from 1 to " + std::to_string(limits::kMaxSteps);
    double previous = 0;
    for (const char* key : statistics) {
      if (!r.contains(key)) continue;
      if (r[key].get<double>() < previous)
        return "has step-time statistics out of order (min ≤ p10 ≤ median ≤ p90 ≤ max)";
      previous = r[key].get<double>();
    }
    problem = check_fields(r, {{"mean_ms", duration, "a duration"},
                               {"stddev_ms", number_or_null, "a number or null"},
                               {"cv", number_or_null, "a number or null"},
                               {"samples_per_s", number_or_null, "a number or null"},
                               {"flops_per_step", number_or_null, "a number or null"},
                               {"tflops", number_or_null, "a number or null"},
                               {"energy_method", [](const Json& j) { return j.is_null() || j.is_string(); },
                                "text or null"},
                               {"energy_scope", [](const Json& j) { return j.is_null() || j.is_string(); },
                                "text or null"},
                               {"energy_steps", count_or_null, "a whole number or null"}});
    if (!problem.empty()) return problem;
    // Every other energy and telemetry number (energy_j, j_per_sample, start_power_w, ...) is a number
    // or null where it is present.
    for (const auto& [key, value] : r.items()) {
      const bool energy = key.rfind("energy_", 0) == 0 || key.rfind("start_", 0) == 0 || key.rfind("end_", 0) == 0 ||
                          key.find("power_w") != std::string::npos || key.rfind("j_per_", 0) == 0 ||
                          key.rfind("samples_per_j", 0) == 0;
      if (energy && key != "energy_method" && key != "energy_scope" && !number_or_null(value))
        return "has " + article(key) + " that is not a number or null";
    }
  }
  return "";
}

}  // namespace

std::string record_problem(const Json& r) {
  if (!r.is_object() || !r.contains("type") || !r["type"].is_string()) return "has no text \"type\"";
  const std::string type = r["type"].get<std::string>();
  if (type == record::kRun || type == record::kResume) return run_problem(r);
  if (type == record::kStep || type == record::kPoint || type == record::kOom || type == record::kSkipped)
    return batch_problem(type, r);
  return "";
}

}  // namespace batchscope
