#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/records/jsonl.h"

namespace batchscope {

// A sweep shared out over N shards (sweep --shard I/N, a Slurm job array, a Kubernetes Indexed Job)
// writes one log directory per shard under a common output directory:
//
//   OUT/plan.json                    the whole plan (written by batchscope submit, or by the first shard)
//   OUT/shard-0000-of-0004/steps.jsonl
//   OUT/shard-0001-of-0004/steps.jsonl ...
//
// Every shard's run record names the whole plan (its id, every shard's share), so that analyze and
// status can merge the shards, tell what is missing, and refuse shards of two different plans.

// One shard's share of the plan: per experiment, its batch sizes and their estimated cost.
struct ShardShare {
  struct Part {
    std::string experiment;
    std::vector<int64_t> batch_sizes;
    std::vector<double> costs;  // one per batch size: FLOP-equivalents over all its steps and passes
    int64_t passes = 1;         // repeats: every pass of a batch size runs in the same shard
  };
  std::vector<Part> parts;
  double cost = 0;  // the sum of the parts' costs
};

// The whole plan, as each shard's run record and plan.json hold it (config.shard).
struct ShardPlanRecord {
  std::string plan_id;  // a hash of every experiment (all batch sizes) and the shard count
  int index = 0;        // this shard's, 0-based; -1 in plan.json, which is no shard's
  int count = 1;
  std::string from;     // how the index was chosen: "--shard", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"
  std::string source;   // the experiment file (or "command line")
  std::vector<ShardShare> shares;  // one per shard, in index order
};

Json to_json(const ShardPlanRecord& plan);
// Reads config.shard back; a UserError naming `where` (a file and line) when it is not a shard plan.
ShardPlanRecord shard_plan_from_json(const Json& j, const std::string& where);

// "shard-0003-of-0016".
std::string shard_dir_name(int index, int count);
// The index and count of a directory named like that; nullopt for any other name.
std::optional<std::pair<int, int>> parse_shard_dir_name(const std::string& name);

// One shard directory as found on disk.
struct ShardDir {
  int index = 0, count = 0;  // from its name
  std::string dir, log;      // the directory and its steps.jsonl (steps.jsonl.gz where only that is there)
  bool has_log = false;      // steps.jsonl exists and holds at least a run record
  std::optional<ShardPlanRecord> plan;  // from its first run record
  bool complete = false;     // an end record closes it
  // (experiment, batch size, pass) of every batch size done: measured, out of memory or skipped.
  std::vector<std::tuple<std::string, int64_t, int64_t>> done;
  std::optional<std::string> last_record_time;  // the log's modification time, ISO 8601 UTC
  double seconds_since_last_record = 0;
};

// A directory of shards: the plan they share and what each has written.
struct ShardedRun {
  std::string root;
  ShardPlanRecord plan;  // index -1: the whole plan
  std::vector<ShardDir> shards;  // those present, by index
  std::string plan_file;         // plan.json, where the plan was read from it ("" otherwise)
};

// The shard directories under root and the plan they share; nullopt when root holds no shard
// directory and no plan.json. Throws UserError, naming the files, when they belong to two different
// plans (another shard count, other experiments), or a shard's log does not name its plan.
std::optional<ShardedRun> find_shards(const std::string& root);

// One shard's directory under root, read as find_shards reads it (has_log false where it is absent).
// Throws UserError where its log is not a shard's.
ShardDir read_shard_dir(const std::string& root, int index, int count);

// Refuses (UserError) to add `plan` to root where root holds shards or a plan.json of another plan.
void check_same_plan(const std::string& root, const ShardPlanRecord& plan);

// Writes root/plan.json (the whole plan, no shard's index) unless it is there already; a reader never
// sees half of it.
void write_plan_file(const std::string& root, const ShardPlanRecord& plan);

// The shard plan recorded in a sweep directory's steps.jsonl (its first run record); nullopt where it
// has none or is not a sharded sweep.
std::optional<ShardPlanRecord> recorded_shard_plan(const std::string& log);

}  // namespace batchscope
