#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "lib/config/config.h"
#include "lib/records/shard_layout.h"

namespace batchscope {

// Sharing one sweep out over N shards: every (experiment, batch size) is a unit of work with an
// estimated cost, and the units are dealt to the shards largest first, each to the shard with the least
// work so far (ties to the lower index). The deal depends only on the experiments and N, so every task
// of a job array computes the same plan on its own. Every pass of a repeated batch size stays in one
// shard, and a shard runs its units in the experiment's own order.

// What one step is estimated to cost besides its arithmetic (launching kernels, the optimizer's pass
// over the weights), as FLOPs: it keeps many tiny batch sizes from looking free.
inline constexpr double kStepOverheadFlops = 1e9;

// The estimated cost of one batch size of an experiment: its FLOPs per step plus the overhead, over
// its warm-up, timed and profiled steps and every pass.
double batch_cost(const ExperimentConfig& e, double forward_flops_per_sample, int64_t batch_size);

// The plan for `count` shards (index -1: no shard's own). Throws UserError naming the file and line
// for a shard count larger than the units of work, and for a batch list that ends in max (its sizes
// are known only once a GPU has been searched).
ShardPlanRecord plan_shards(const SweepConfig& config, int count);

// The experiments of one shard: each with only its batch sizes, in their own order; experiments with
// none are left out.
SweepConfig shard_config(const SweepConfig& config, const ShardPlanRecord& plan, int index);

// Which shard this process runs, and how that was chosen.
struct ShardChoice {
  int index = 0, count = 1;
  std::string from;         // "--shard", "SLURM_ARRAY_TASK_ID" or "JOB_COMPLETION_INDEX"
  std::string explanation;  // e.g. "SLURM_ARRAY_TASK_ID=3 with --shards 16"
};

// Looks up an environment variable; nullopt where it is not set.
using Environment = std::function<std::optional<std::string>(const std::string&)>;
Environment process_environment();

// The shard from --shard I/N (or "none"), --shards N (0 where not given) and the environment:
//   --shard I/N                       that shard;
//   --shard none                      not sharded, whatever the environment says;
//   SLURM_ARRAY_TASK_ID               with --shards N, the task id is the shard index (an array 0-(N-1),
//                                     or any part of it when resubmitting); without it, the array's own
//                                     (ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP of
//                                     SLURM_ARRAY_TASK_COUNT;
//   JOB_COMPLETION_INDEX              (a Kubernetes Indexed Job) with --shards N.
// nullopt: not sharded. Every inconsistency is a UserError naming the option or variable and the fix.
std::optional<ShardChoice> choose_shard(const std::string& shard_option, int64_t shards_option, const Environment& env);

}  // namespace batchscope
