#include <cmath>

#include "lib/common/limits.h"
#include "lib/records/field_check.h"
#include "lib/records/records.h"

// record_problem(): the type and range of every field a reader of a sweep log relies on.

namespace batchscope {

namespace field_check {

bool is_whole(const Json& j, int64_t min, int64_t max) {
  return j.is_number_integer() && !(j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) &&
         j.get<int64_t>() >= min && j.get<int64_t>() <= max;
}

bool is_finite_number(const Json& j) { return j.is_number() && std::isfinite(j.get<double>()); }

std::string with_article(const std::string& key) {
  return (std::string("aeiou").find(key.empty() ? 'x' : key[0]) != std::string::npos ? "an " : "a ") + key;
}

namespace {

[[noreturn]] void bad(const std::string& key, const char* should_be) {
  throw BadRecord("has " + with_article(key) + " that is not " + should_be);
}

const Json& field(const Json& j, const char* key) {
  static const Json missing;
  const auto found = j.find(key);
  return found == j.end() ? missing : *found;
}

}  // namespace

std::string read_text(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_string()) bad(key, "text");
  return v.get<std::string>();
}

double read_number(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!is_finite_number(v)) bad(key, "a number");
  return v.get<double>();
}

std::optional<double> read_optional_number(const Json& j, const char* key) {
  if (field(j, key).is_null()) return std::nullopt;
  return read_number(j, key);
}

int64_t read_whole(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!is_whole(v)) bad(key, "a whole number");
  return v.get<int64_t>();
}

std::vector<int64_t> read_sizes(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_array()) bad(key, "a list of whole numbers");
  std::vector<int64_t> out;
  for (const Json& size : v) {
    if (!is_whole(size)) bad(key, "a list of whole numbers");
    out.push_back(size.get<int64_t>());
  }
  return out;
}

const Json& read_object(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_object()) bad(key, "an object");
  return v;
}

const Json& read_array(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_array()) bad(key, "a list");
  return v;
}

}  // namespace field_check

namespace {

using field_check::is_finite_number;
using field_check::is_whole;
using field_check::with_article;

// Checks of the fields present in `j`: each key names what its value must be.
struct FieldCheck {
  const char* key;
  bool (*valid)(const Json&);
  const char* should_be;
};

std::string check_fields(const Json& j, std::initializer_list<FieldCheck> checks, const std::string& prefix = "") {
  for (const FieldCheck& c : checks) {
    if (j.contains(c.key) && !c.valid(j[c.key])) return "has " + with_article(prefix + c.key) + " that is not " + c.should_be;
  }
  return "";
}

bool text(const Json& j) { return j.is_string(); }
bool count(const Json& j) { return is_whole(j, 0, INT64_MAX); }
bool number_or_null(const Json& j) { return j.is_null() || is_finite_number(j); }
bool count_or_null(const Json& j) { return j.is_null() || count(j); }
bool duration(const Json& j) { return is_finite_number(j) && j.get<double>() >= 0; }
bool positive_number(const Json& j) { return is_finite_number(j) && j.get<double>() > 0; }
bool positive_duration(const Json& j) { return positive_number(j); }

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
                                      {"torch_interop_threads", count, "a whole number"},
                                      {"usable_physical_cores", count, "a whole number"},
                                      {"threads_from", text, "text"}},
                           "cpu.");
    if (!problem.empty()) return problem;
    if (r["cpu"].contains("onednn")) {
      if (!r["cpu"]["onednn"].is_object()) return "has a cpu.onednn that is not an object";
      problem = check_fields(r["cpu"]["onednn"],
                             {{"version", text, "text"},
                              {"enabled", [](const Json& j) { return j.is_boolean(); }, "true or false"}},
                             "cpu.onednn.");
      if (!problem.empty()) return problem;
    }
    if (r["cpu"].contains("torchscript_fuser") && !r["cpu"]["torchscript_fuser"].is_boolean())
      return "has a cpu.torchscript_fuser that is not true or false";
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
            if (!is_whole(b, 1, limits::kMaxBatchSize))
              return "has an experiment batch size that is not a whole number from 1 to " +
                     std::to_string(limits::kMaxBatchSize);
          }
        }
        problem = check_fields(e, {{"cudnn_benchmark", [](const Json& j) { return j.is_boolean(); }, "true or false"},
                                   {"channels_last", [](const Json& j) { return j.is_boolean(); }, "true or false"},
                                   {"profile", [](const Json& j) { return j.is_boolean(); }, "true or false"},
                                   {"profile_steps", [](const Json& j) { return is_whole(j, 1, limits::kMaxProfileSteps); },
                                    "a whole number from 1 to 100"},
                                   {"repeats", [](const Json& j) { return is_whole(j, 1, limits::kMaxRepeats); },
                                    "a whole number from 1 to 100"}},
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
  if (!r.contains("batch_size") || !is_whole(r["batch_size"], 1, limits::kMaxBatchSize))
    return "has a batch_size that is not a whole number from 1 to " + std::to_string(limits::kMaxBatchSize);
  std::string problem = check_fields(r, {{"phase", text, "text"},
                                         {"precision", text, "text"},
                                         {"device", text, "text"},
                                         {"transfer", text, "text"},
                                         {"pass", [](const Json& j) { return is_whole(j, 1, limits::kMaxRepeats); },
                                          "a whole number from 1 to 100"},
                                         {"peak_memory_bytes", count_or_null, "a whole number or null"}});
  if (!problem.empty()) return problem;
  if (type == record::kStep) {
    if (!r.contains("time_ms") || !positive_duration(r["time_ms"])) return "has a time_ms that is not a positive duration";
    return check_fields(r, {{"step", count, "a whole number"},
                            {"loss", number_or_null, "a number or null"},
                            {"host_ms", duration, "a duration"}});
  }
  if (type == record::kPoint) {
    // The statistics of the timed steps; analyze recomputes them from the step records, so a point
    // may come without them, but where they are they must be sound.
    const char* const statistics[] = {"min_ms", "p10_ms", "median_ms", "p90_ms", "max_ms"};
    for (const char* key : statistics) {
      if (r.contains(key) && !duration(r[key])) return "has " + with_article(key) + " that is not a duration";
    }
    if (r.contains("samples") && !is_whole(r["samples"], 1, limits::kMaxSteps))
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
                               {"host_median_ms", duration, "a duration"},
                               {"median_ci_low_ms", duration, "a duration"},
                               {"median_ci_high_ms", duration, "a duration"},
                               {"steps_stopped_by", text, "text"},
                               {"skipped_steps", count, "a whole number"},
                               {"loss_scale", positive_number, "a positive number"},
                               {"energy_method", [](const Json& j) { return j.is_null() || j.is_string(); },
                                "text or null"},
                               {"energy_scope", [](const Json& j) { return j.is_null() || j.is_string(); },
                                "text or null"},
                               {"energy_steps", count_or_null, "a whole number or null"}});
    if (!problem.empty()) return problem;
    // chunk: auto's micro-batch, with the search that chose it.
    if (r.contains("chunk")) {
      if (!is_whole(r["chunk"], 1, limits::kMaxBatchSize))
        return "has a chunk that is not a whole number from 1 to " + std::to_string(limits::kMaxBatchSize);
      for (const char* key : {"chunk_largest_fitting", "chunk_tries"}) {
        if (!r.contains(key) || !is_whole(r[key], 0, limits::kMaxBatchSize))
          return "has a chunk whose " + std::string(key) + " is not a whole number";
      }
      if (!r.contains("chunk_search_s") || !duration(r["chunk_search_s"]))
        return "has a chunk whose chunk_search_s is not a duration";
      problem = check_fields(r, {{"chunk_bound_from_batch", count, "a whole number"}});
      if (!problem.empty()) return problem;
    }
    // Every other energy and telemetry number (energy_j, j_per_sample, start_power_w, ...) is a number
    // or null where it is present.
    for (const auto& [key, value] : r.items()) {
      const bool energy = key.rfind("energy_", 0) == 0 || key.rfind("start_", 0) == 0 || key.rfind("end_", 0) == 0 ||
                          key.find("power_w") != std::string::npos || key.rfind("j_per_", 0) == 0 ||
                          key.rfind("samples_per_j", 0) == 0;
      if (energy && key != "energy_method" && key != "energy_scope" && !number_or_null(value))
        return "has " + with_article(key) + " that is not a number or null";
    }
  }
  return "";
}

}  // namespace

std::string record_problem(const Json& r) {
  if (!r.is_object() || !r.contains("type") || !r["type"].is_string()) return "has no text \"type\"";
  const std::string type = r["type"].get<std::string>();
  if (type == record::kRun || type == record::kResume) return run_problem(r);
  if (type == record::kEnd && r.contains("time_spent_s")) {
    if (!r["time_spent_s"].is_object()) return "has a time_spent_s that is not an object";
    for (const auto& [part, seconds] : r["time_spent_s"].items()) {
      if (!duration(seconds)) return "has a time_spent_s." + part + " that is not a duration";
    }
  }
  if (type == record::kStep || type == record::kPoint || type == record::kOom || type == record::kSkipped)
    return batch_problem(type, r);
  return "";
}

}  // namespace batchscope
