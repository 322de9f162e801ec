#include "lib/cluster/shard_status.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "lib/cluster/job_scripts.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

// "40 s", "12 min", "3.5 h", "2 days".
std::string ago(double seconds) {
  std::ostringstream out;
  out.precision(2);
  if (seconds < 90) {
    out << static_cast<int64_t>(std::lround(seconds)) << " s";
  } else if (seconds < 90 * 60) {
    out << static_cast<int64_t>(std::lround(seconds / 60)) << " min";
  } else if (seconds < 48 * 3600) {
    out << seconds / 3600 << " h";
  } else {
    out << static_cast<int64_t>(std::lround(seconds / 86400)) << " days";
  }
  return out.str();
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "-";
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(part > 0 && part / whole < 0.001 ? 2 : 1);
  out << 100.0 * part / whole << "%";
  return out.str();
}

std::string joined(const std::vector<int>& indices) { return joined_numbers(indices, ","); }

// What a shard's share plans and what of it is done.
void count_work(const ShardShare& share, const ShardDir* dir, ShardStatus& status) {
  std::set<std::tuple<std::string, int64_t, int64_t>> done;
  if (dir != nullptr) done.insert(dir->done.begin(), dir->done.end());
  status.cost = share.cost;
  for (const ShardShare::Part& part : share.parts) {
    for (std::size_t i = 0; i < part.batch_sizes.size(); ++i) {
      int64_t passes_done = 0;
      for (int64_t pass = 1; pass <= part.passes; ++pass) {
        passes_done += done.count({part.experiment, part.batch_sizes[i], pass}) > 0 ? 1 : 0;
      }
      status.planned += part.passes;
      status.done += passes_done;
      const double cost = i < part.costs.size() ? part.costs[i] : 0.0;
      status.cost_left += cost * static_cast<double>(part.passes - passes_done) / static_cast<double>(part.passes);
    }
  }
}

}  // namespace

std::string to_string(ShardState state) {
  switch (state) {
    case ShardState::Complete: return "complete";
    case ShardState::Running: return "running";
    case ShardState::Stopped: return "stopped";
    case ShardState::NotStarted: return "not started";
    case ShardState::Missing: return "missing";
  }
  return "";
}

RunStatus run_status(const std::string& root, double stale_seconds) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw UserError(located(root, 0, "is not a directory", "pass the --out directory of a sharded sweep"));
  }
  const std::optional<ShardedRun> found = find_shards(root);
  if (!found) {
    const bool single = fs::exists(fs::path(root) / "steps.jsonl", ec);
    throw UserError(located(root, 0,
                            single ? "holds one sweep, not the shards of one"
                                   : "holds no shard directory (shard-NNNN-of-NNNN) and no plan.json",
                            single ? "status follows sharded sweeps; its log is " + (fs::path(root) / "steps.jsonl").string()
                                   : "pass the --out directory of a sharded sweep"));
  }
  RunStatus status;
  status.root = root;
  status.plan = found->plan;
  status.plan_known = !found->plan.plan_id.empty();
  if (fs::is_regular_file(fs::path(root) / "slurm.sbatch", ec)) status.slurm_script = (fs::path(root) / "slurm.sbatch").string();
  if (fs::is_regular_file(fs::path(root) / "k8s-job.yaml", ec)) status.k8s_manifest = (fs::path(root) / "k8s-job.yaml").string();

  std::map<int, const ShardDir*> present;
  for (const ShardDir& d : found->shards) present[d.index] = &d;
  for (int i = 0; i < status.plan.count; ++i) {
    ShardStatus s;
    s.index = i;
    s.dir = (fs::path(root) / shard_dir_name(i, status.plan.count)).string();
    const auto it = present.find(i);
    const ShardDir* dir = it == present.end() ? nullptr : it->second;
    if (dir == nullptr) {
      s.state = ShardState::Missing;
    } else if (!dir->has_log) {
      s.state = ShardState::NotStarted;
    } else {
      s.last_record_time = dir->last_record_time;
      s.seconds_since_last_record = dir->seconds_since_last_record;
      s.state = dir->complete                                    ? ShardState::Complete
                : dir->seconds_since_last_record <= stale_seconds ? ShardState::Running
                                                                   : ShardState::Stopped;
    }
    if (status.plan_known) count_work(status.plan.shares.at(static_cast<std::size_t>(i)), dir, s);
    status.done += s.done;
    status.planned += s.planned;
    status.cost += s.cost;
    status.cost_left += s.cost_left;
    status.shards.push_back(s);
  }
  status.complete = std::all_of(status.shards.begin(), status.shards.end(),
                                [](const ShardStatus& s) { return s.state == ShardState::Complete; });
  return status;
}

std::vector<int> unfinished_shards(const RunStatus& status) {
  std::vector<int> indices;
  for (const ShardStatus& s : status.shards) {
    if (s.state != ShardState::Complete) indices.push_back(s.index);
  }
  return indices;
}

void write_status(std::ostream& out, const RunStatus& status) {
  out << status.root << ": " << status.plan.count << " shard(s)";
  if (status.plan_known) out << " of " << status.plan.source << " (plan " << status.plan.plan_id << ")";
  out << "\n\n";
  char line[200];
  std::snprintf(line, sizeof line, "%5s  %-11s  %11s  %-32s  %9s\n", "shard", "state", "points",
                "last record", "work left");
  out << line;
  std::map<ShardState, int> counts;
  for (const ShardStatus& s : status.shards) {
    ++counts[s.state];
    const std::string when =
        s.last_record_time ? *s.last_record_time + " (" + ago(s.seconds_since_last_record) + " ago)" : "-";
    const std::string batches = status.plan_known ? std::to_string(s.done) + "/" + std::to_string(s.planned) : "?";
    std::snprintf(line, sizeof line, "%5d  %-11s  %11s  %-32s  %9s\n", s.index, to_string(s.state).c_str(),
                  batches.c_str(), when.c_str(), percent(s.cost_left, status.cost).c_str());
    out << line;
  }
  out << "\n" << counts[ShardState::Complete] << " of " << status.plan.count << " shards complete";
  for (ShardState state : {ShardState::Running, ShardState::Stopped, ShardState::NotStarted, ShardState::Missing}) {
    if (counts[state] > 0) out << ", " << counts[state] << " " << to_string(state);
  }
  if (status.plan_known) {
    out << ": " << status.done << " of " << status.planned
        << " points done (a point: one batch size of one experiment in one pass), "
        << percent(status.cost_left, status.cost) << " of the estimated work left";
  }
  out << ".\n";
  const std::vector<int> left = unfinished_shards(status);
  if (status.complete) {
    out << "Every shard is complete: batchscope analyze " << status.root << "\n";
    return;
  }
  if (counts[ShardState::Stopped] + counts[ShardState::Missing] + counts[ShardState::NotStarted] == 0) return;
  out << "A stopped or missing shard resumes where it stopped when it runs again";
  if (!status.slurm_script.empty()) {
    out << ": sbatch --array=" << joined(left) << " " << shell_quote(status.slurm_script)
        << "\n(shards that are running or complete are safe to include: a complete one ends at once)";
  } else if (!status.k8s_manifest.empty()) {
    out << ": delete the Job and apply " << status.k8s_manifest << " again (complete shards end at once)";
  } else {
    out << ": batchscope sweep CONFIG --out " << status.root << " --shard I/" << status.plan.count
        << " for each I of " << joined(left);
  }
  out << ".\n";
}

Json status_json(const RunStatus& status) {
  Json shards = Json::array();
  for (const ShardStatus& s : status.shards) {
    Json j = {{"index", s.index}, {"state", to_string(s.state)}, {"dir", s.dir}};
    if (status.plan_known) {
      j["points_done"] = s.done;
      j["points_planned"] = s.planned;
      j["work_left"] = status.cost > 0 ? Json(s.cost_left / status.cost) : Json(nullptr);
    }
    j["last_record_time"] = optional_json(s.last_record_time);
    j["seconds_since_last_record"] = s.last_record_time ? Json(s.seconds_since_last_record) : Json(nullptr);
    shards.push_back(j);
  }
  Json j = {{"root", status.root},
            {"plan_id", status.plan_known ? Json(status.plan.plan_id) : Json(nullptr)},
            {"source", status.plan_known ? Json(status.plan.source) : Json(nullptr)},
            {"shards", status.plan.count},
            {"complete", status.complete}};
  if (status.plan_known) {
    j["points_done"] = status.done;
    j["points_planned"] = status.planned;
    j["work_left"] = status.cost > 0 ? Json(status.cost_left / status.cost) : Json(nullptr);
  }
  j["unfinished"] = unfinished_shards(status);
  j["per_shard"] = shards;
  return j;
}

}  // namespace batchscope
