#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lib/records/jsonl.h"
#include "lib/records/shard_layout.h"

namespace batchscope {

// Where each shard of a sharded sweep stands, read from its log alone (batchscope status OUT).
enum class ShardState {
  Complete,    // its log ends with an end record
  Running,     // its log was written to within the last stale_seconds
  Stopped,     // its log has not been written to for longer: killed, cancelled, preempted or failed
  NotStarted,  // its directory exists, with no record yet
  Missing,     // no directory: never started (or still queued)
};
std::string to_string(ShardState state);

struct ShardStatus {
  int index = 0;
  ShardState state = ShardState::Missing;
  int64_t done = 0, planned = 0;   // points (a batch size of an experiment in a pass) done and planned
  double cost = 0, cost_left = 0;  // estimated work, in the plan's units
  std::optional<std::string> last_record_time;
  double seconds_since_last_record = 0;
  std::string dir;
};

struct RunStatus {
  std::string root;
  ShardPlanRecord plan;
  bool plan_known = false;  // false where no shard has started and there is no plan.json
  std::vector<ShardStatus> shards;  // every shard of the plan, by index
  int64_t done = 0, planned = 0;
  double cost = 0, cost_left = 0;
  bool complete = false;
  std::string slurm_script, k8s_manifest;  // beside the results, where submit wrote them
};

// The status of the sharded sweep in root. Throws UserError when root holds no sharded sweep, or
// shards of two plans.
RunStatus run_status(const std::string& root, double stale_seconds);

// A table with a line per shard, a line of totals and, where work is left, how to run it again.
void write_status(std::ostream& out, const RunStatus& status);
Json status_json(const RunStatus& status);

// The indices of the shards that are not complete.
std::vector<int> unfinished_shards(const RunStatus& status);

}  // namespace batchscope
