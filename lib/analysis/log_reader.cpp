#include "lib/analysis/log_reader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "lib/common/errors.h"
#include "lib/common/words.h"

namespace batchscope {
namespace fs = std::filesystem;
namespace {


std::string list_lines(const std::vector<int>& lines) {
  std::string out;
  const size_t shown = std::min<size_t>(lines.size(), 5);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(lines[i]);
  if (lines.size() > shown) out += " and " + std::to_string(lines.size() - shown) + " more";
  return out;
}

// Experiment name -> its batch sizes, from the latest run record.
using Plans = std::map<std::string, std::vector<int64_t>>;

// Why a record cannot be used, or "": record_problem's reasons, or a batch size its experiment's plan
// does not have. A sound run record replaces the plans.
std::string problem_of(const Json& r, const std::string& type, Plans& planned) {
  std::string problem = record_problem(r);
  if (!problem.empty()) return problem;
  if (type == record::kRun || type == record::kResume) {
    if (r.contains("config") && r["config"].contains("experiments")) {
      planned.clear();
      for (const Json& e : r["config"]["experiments"]) {
        if (e.contains("batch")) planned[e["name"].get<std::string>()] = e["batch"].get<std::vector<int64_t>>();
      }
    }
    return "";
  }
  if (type != record::kStep && type != record::kPoint && type != record::kOom && type != record::kSkipped) return "";
  const auto plan = planned.find(r["experiment"].get<std::string>());
  const int64_t batch = r["batch_size"].get<int64_t>();
  if (plan != planned.end() && std::find(plan->second.begin(), plan->second.end(), batch) == plan->second.end())
    return "is for a batch size that its experiment's plan in the run record does not have";
  return "";
}

// A sweep record kept: its run ids, environment and completeness go into the log's summary.
void keep(LoadedLog& log, const Json& r, const std::string& type, int line) {
  if (type == record::kRun) {
    if (r.contains("run_id") && r["run_id"].is_string()) log.summary.run_ids.push_back(r["run_id"]);
    if (log.summary.environment.is_null()) {
      Json env = r;
      env.erase("type");
      env.erase("config");
      log.summary.environment = env;
    }
  }
  log.records.push_back(sweep_record_from_json(r));
  if (type == record::kEnd) {
    log.summary.complete = true;
    log.summary.time_spent = std::get<EndRecord>(log.records.back()).time_spent;
  }
  log.lines.push_back(line);
}

// A record of a micro-batch study kept; BadRecord where a field has the wrong type.
void keep_microbatch(LoadedLog& log, const Json& r, const std::string& type) {
  if (type == record::kMicroBatchResult) {
    log.microbatch_results.push_back(microbatch_result_from_json(r));
  } else if (type == record::kLayerPlan) {
    log.layer_plans.push_back(layer_plan_from_json(r));
  } else {
    check_layer_cost(r);
    ++log.layer_costs;
  }
}

// Lines that are not records and an unfinished last line, as warnings.
void warn_unreadable(LoadedLog& log, const JsonlContents& contents) {
  const std::string& path = log.summary.path;
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
}

// Keeps the sound records of known types; the others become one warning per kind, with their lines.
void sort_records(LoadedLog& log, JsonlContents& contents) {
  const std::string& path = log.summary.path;
  std::map<std::string, std::vector<int>> unknown;
  std::map<std::string, std::vector<int>> damaged;  // what is wrong -> the lines
  Plans planned;
  for (size_t i = 0; i < contents.records.size(); ++i) {
    Json& r = contents.records[i];
    const int line = contents.record_lines[i];
    const std::string type = r["type"].is_string() ? r["type"].get<std::string>() : std::string();
    if (!is_sweep_record_type(type) && !is_microbatch_record_type(type)) {
      unknown[type.empty() ? r["type"].dump() : type].push_back(line);
    } else if (const std::string problem = problem_of(r, type, planned); !problem.empty()) {
      damaged[problem].push_back(line);
    } else if (is_microbatch_record_type(type)) {
      try {
        keep_microbatch(log, r, type);
      } catch (const BadRecord& damage) {
        damaged[damage.what()].push_back(line);
      }
    } else {
      keep(log, r, type, line);
    }
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
}

// A batch size's records go out in one write, its steps and then its point (or what happened instead):
// step records with no point after them, before the log ends or the next session's run record begins, are
// a batch size cut off mid-write (the sweep was killed), not measured whole. They are left out with a
// warning, as a resumed sweep cuts them (logs written before it did hold such steps before a resume).
// A log with no point record at all is of a writer that leaves the points to analyze; its steps are kept.
void drop_cut_off_steps(LoadedLog& log) {
  const bool writes_points = std::any_of(log.records.begin(), log.records.end(), [](const SweepRecord& r) {
    return std::holds_alternative<PointRecord>(r);
  });
  if (!writes_points) return;
  std::vector<SweepRecord> records;
  std::vector<int> lines;
  std::size_t i = 0;
  while (i < log.records.size()) {
    if (!std::holds_alternative<StepRecord>(log.records[i])) {
      records.push_back(std::move(log.records[i]));
      lines.push_back(log.lines[i]);
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < log.records.size() && std::holds_alternative<StepRecord>(log.records[end])) ++end;
    const bool cut_off = end == log.records.size() || std::holds_alternative<RunRecord>(log.records[end]);
    if (cut_off) {
      const auto& step = std::get<StepRecord>(log.records[i]);
      log.summary.warnings.push_back(
          located(log.summary.path, log.lines[i],
                  counted(static_cast<int64_t>(end - i), "step record") + " (from line " +
                      std::to_string(log.lines[i]) + ", batch size " + std::to_string(step.key.batch_size) +
                      " of experiment " + step.key.experiment + ") have no point record after them" +
                      (end == log.records.size() ? "" : " before the next session began") +
                      ": that batch size was cut off while being written, and they were left out",
                  end == log.records.size()
                      ? "run the same sweep command again to resume it, which measures that batch size again"
                      : "nothing to do: the session after it measured that batch size again"));
    } else {
      for (std::size_t k = i; k < end; ++k) {
        records.push_back(std::move(log.records[k]));
        lines.push_back(log.lines[k]);
      }
    }
    i = end;
  }
  log.records = std::move(records);
  log.lines = std::move(lines);
}

// Profiles written before the profiler's copies of our scopes on the GPU's timeline (device events
// named after a layer, or step.*) were told from kernels hold them as kernels of "(unattributed)", the
// smaller of them folded into its "(other)": that part's whole device time is those copies, counted on
// top of the layers' own. It is left out, and the step's kernel time with it. True where there were any.
bool drop_scope_copies(ProfileRecord& r) {
  const std::string unattributed = "(unattributed)";
  std::set<std::string> scopes;
  for (const LayerTime& l : r.layers) scopes.insert(l.layer);
  const auto in_part = [&](const auto& x) {
    return x.layer == unattributed && x.pass == profile_pass::kStep;
  };
  const bool copies = std::any_of(r.kernels.begin(), r.kernels.end(), [&](const KernelTime& k) {
    return in_part(k) && k.kind == "kernel" && (scopes.count(k.name) > 0 || k.name.rfind("step.", 0) == 0);
  });
  if (!copies) return false;
  double dropped = 0;
  r.kernels.erase(std::remove_if(r.kernels.begin(), r.kernels.end(),
                                 [&](const KernelTime& k) {
                                   if (!in_part(k) || k.kind != "kernel") return false;
                                   dropped += k.total_ms;
                                   return true;
                                 }),
                  r.kernels.end());
  for (LayerTime& l : r.layers) {
    if (in_part(l) && l.device_ms) l.device_ms = 0.0;
  }
  if (r.kernel_ms) r.kernel_ms = std::max(0.0, *r.kernel_ms - dropped);
  return true;
}

// One profile file of a sweep's directory; damaged lines are warnings.
void load_profile_file(LoadedLog& log, const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  JsonlContents contents;
  try {
    contents = read_jsonl(path.string(), BadLines::Collect);
  } catch (const UserError& e) {
    log.summary.warnings.push_back(e.what());
    return;
  }
  std::map<std::string, std::vector<int>> damaged;
  std::vector<int> with_copies;
  for (std::size_t i = 0; i < contents.records.size(); ++i) {
    try {
      log.profiles.push_back(profile_record_from_json(contents.records[i]));
      if (drop_scope_copies(log.profiles.back())) with_copies.push_back(contents.record_lines[i]);
    } catch (const BadRecord& damage) {
      damaged[damage.what()].push_back(contents.record_lines[i]);
    }
  }
  if (!with_copies.empty()) {
    log.summary.warnings.push_back(located(
        path.string(), with_copies.front(),
        "the profile(s) on line(s) " + list_lines(with_copies) +
            " were written before the profiler's copies of the layers on the GPU's timeline were told from "
            "kernels, and count them as kernels of (unattributed); that part is left out",
        "profile those batch sizes again for an (unattributed) part of their own"));
  }
  for (int line : contents.bad_lines) damaged["is not a JSON record"].push_back(line);
  for (const auto& [problem, lines] : damaged) {
    log.summary.warnings.push_back(located(path.string(), lines.front(),
                                           "the profile on line(s) " + list_lines(lines) + " " + printable(problem) +
                                               ", so it was skipped",
                                           "repair or remove it, or profile that batch size again"));
  }
}

// The profiles beside the log, where the sweep profiled its batch sizes: profile.jsonl.gz (a profile
// compressed to keep or send: gzip -9 profile.jsonl), then profile.jsonl, which a resumed sweep appends
// to beside the compressed one, so that its later profile of a batch size is the one kept.
void load_profiles(LoadedLog& log) {
  const fs::path dir = fs::path(log.summary.path).parent_path();
  load_profile_file(log, dir / "profile.jsonl.gz");
  load_profile_file(log, dir / "profile.jsonl");
}

}  // namespace

std::string log_file_for(const std::string& argument) {
  std::error_code ec;
  if (!fs::is_directory(argument, ec)) return argument;
  // A sweep's directory, else a micro-batch study's; each log plain, else compressed to keep or send
  // (gzip steps.jsonl leaves steps.jsonl.gz), which read_jsonl reads as the plain one.
  const fs::path sweep = fs::path(argument) / "steps.jsonl";
  for (const char* name : {"steps.jsonl", "steps.jsonl.gz", "microbatch.jsonl", "microbatch.jsonl.gz"}) {
    const fs::path log = fs::path(argument) / name;
    if (fs::exists(log, ec)) return log.string();
  }
  return sweep.string();
}

std::optional<LoadedLog> load_log(const std::string& argument, std::vector<std::string>& warnings) {
  const std::string path = log_file_for(argument);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    const bool dir = path != argument;
    warnings.push_back(located(path, 0,
                               dir ? "is missing (the directory holds no sweep or micro-batch log)" : "does not exist",
                               "pass a steps.jsonl written by batchscope sweep, a microbatch.jsonl written by "
                               "batchscope microbatch, or their directory"));
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
  warn_unreadable(log, contents);
  sort_records(log, contents);
  drop_cut_off_steps(log);
  load_profiles(log);
  log.summary.records = static_cast<int>(log.records.size() + log.microbatch_results.size() +
                                         log.layer_plans.size()) + log.layer_costs;
  if (log.summary.records == 0) {
    log.summary.warnings.insert(log.summary.warnings.begin(),
                                located(path, 0, "holds no batchscope records",
                                        "pass a steps.jsonl written by batchscope sweep, or its directory"));
  }
  return log;
}

}  // namespace batchscope
