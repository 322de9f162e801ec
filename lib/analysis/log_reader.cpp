#include "lib/analysis/log_reader.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "lib/common/errors.h"

namespace batchscope {
namespace fs = std::filesystem;
namespace {

bool microbatch_type(const std::string& type) {
  for (const char* known : {"layer_cost", "layer_cost_skipped", "layer_plan", "microbatch_result"}) {
    if (type == known) return true;
  }
  return false;
}

std::string list_lines(const std::vector<int>& lines) {
  std::string out;
  const size_t shown = std::min<size_t>(lines.size(), 5);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(lines[i]);
  if (lines.size() > shown) out += " and " + std::to_string(lines.size() - shown) + " more";
  return out;
}

}  // namespace

std::string log_file_for(const std::string& argument) {
  std::error_code ec;
  if (fs::is_directory(argument, ec)) return (fs::path(argument) / "steps.jsonl").string();
  return argument;
}

std::optional<LoadedLog> load_log(const std::string& argument, std::vector<std::string>& warnings) {
  const std::string path = log_file_for(argument);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    const bool dir = path != argument;
    warnings.push_back(located(path, 0,
                               dir ? "is missing (the directory holds no sweep log)" : "does not exist",
                               "pass a steps.jsonl written by batchscope sweep, or its directory"));
    return std::nullopt;
  }
  JsonlContents contents;
  try {
    contents = read_jsonl(path, BadLines::Collect);
  } catch (const UserError& e) {
    warnings.push_back(e.what());
    return std::nullopt;
  }

  LoadedLog log;
  log.summary.path = path;
  if (!contents.bad_lines.empty()) {
    log.summary.warnings.push_back(
        located(path, contents.bad_lines.front(),
                "line(s) " + list_lines(contents.bad_lines) + " are not batchscope records and were skipped",
                "remove or repair them if they should count"));
  }
  if (contents.truncated_tail) {
    log.summary.truncated_tail = true;
    log.summary.warnings.push_back(
        located(path, contents.complete_lines + 1,
                "the last line is unfinished (the sweep was killed while writing) and was ignored",
                "run the same sweep command again to resume it"));
  }

  std::map<std::string, std::vector<int>> unknown;
  std::map<std::string, std::vector<int>> damaged;         // what is wrong -> the lines
  std::map<std::string, std::vector<int64_t>> planned;     // experiment -> its sizes, from the run record
  for (size_t i = 0; i < contents.records.size(); ++i) {
    Json& r = contents.records[i];
    const std::string type = r["type"].is_string() ? r["type"].get<std::string>() : std::string();
    if (!is_sweep_record_type(type) && !microbatch_type(type)) {
      unknown[type.empty() ? r["type"].dump() : type].push_back(contents.record_lines[i]);
      continue;
    }
    // A record is used only when its values are valid, and a batch size only when the plan has it.
    std::string problem = record_problem(r);
    if (problem.empty() && (type == record::kRun || type == record::kResume)) {
      if (r.contains("config") && r["config"].contains("experiments")) {
        planned.clear();
        for (const Json& e : r["config"]["experiments"]) {
          if (e.contains("batch")) planned[e["name"].get<std::string>()] = e["batch"].get<std::vector<int64_t>>();
        }
      }
    } else if (problem.empty() && (type == record::kStep || type == record::kPoint || type == record::kOom ||
                                   type == record::kSkipped)) {
      const auto plan = planned.find(r["experiment"].get<std::string>());
      const int64_t batch = r["batch_size"].get<int64_t>();
      if (plan != planned.end() && std::find(plan->second.begin(), plan->second.end(), batch) == plan->second.end())
        problem = "is for a batch size that its experiment's plan in the run record does not have";
    }
    if (!problem.empty()) {
      damaged[problem].push_back(contents.record_lines[i]);
      continue;
    }
    if (microbatch_type(type)) {
      log.microbatch.push_back(std::move(r));
      continue;
    }
    if (type == record::kRun) {
      if (r.contains("run_id") && r["run_id"].is_string()) log.summary.run_ids.push_back(r["run_id"]);
      if (log.summary.environment.is_null()) {
        Json env = r;
        env.erase("type");
        env.erase("config");
        log.summary.environment = env;
      }
    }
    if (type == record::kEnd) log.summary.complete = true;
    log.records.push_back(sweep_record_from_json(r));
    log.lines.push_back(contents.record_lines[i]);
  }
  for (const auto& [type, lines] : unknown) {
    log.summary.warnings.push_back(located(path, lines.front(),
                                           "record type \"" + type + "\" (line(s) " + list_lines(lines) +
                                               ") is not one batchscope writes and was ignored",
                                           "check that the file is a batchscope sweep log"));
  }
  for (const auto& [problem, lines] : damaged) {
    log.summary.warnings.push_back(located(path, lines.front(),
                                           "the record on line(s) " + list_lines(lines) + " " + printable(problem) +
                                               ", so it was skipped",
                                           "repair or remove it if it should count"));
  }
  log.summary.records = static_cast<int>(log.records.size() + log.microbatch.size());
  if (log.summary.records == 0) {
    log.summary.warnings.insert(log.summary.warnings.begin(),
                                located(path, 0, "holds no batchscope records",
                                        "pass a steps.jsonl written by batchscope sweep, or its directory"));
  }
  return log;
}

}  // namespace batchscope
