#include "lib/records.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lib/environment.h"
#include "lib/errors.h"

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

}  // namespace batchscope
