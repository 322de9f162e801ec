#include "lib/cluster/shard_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/timing/step_runner.h"
#include "models/registry.h"

namespace batchscope {
namespace {

// FNV-1a over the text: the same experiments and shard count give the same id on every machine.
std::string hash_id(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(h));
  return id;
}

struct Unit {
  std::size_t experiment = 0;
  std::size_t position = 0;  // in the experiment's batch list
  double cost = 0;
};

// A whole number from 0 to most, or nullopt.
std::optional<int64_t> whole(const std::string& text, int64_t most) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t value = std::strtoll(text.c_str(), nullptr, 10);
  if (value > most) return std::nullopt;
  return value;
}

[[noreturn]] void refuse_shard(const std::string& problem, const std::string& fix) {
  throw UserError(located("command line", 0, problem, fix));
}

}  // namespace

double batch_cost(const ExperimentConfig& e, double forward_flops_per_sample, int64_t batch_size) {
  // steps: auto is costed at its first block: how many more steps a size takes is known only as it runs.
  const double steps = e.warmup_steps + e.timed_steps + (e.profile ? e.profile_steps : 0);
  // A share's cost, not a result: the first layer's data gradient is left in, so that a plan written by an
  // earlier version is the same plan.
  return steps * e.repeats *
         (step_flops(e.phase, forward_flops_per_sample, 0, batch_size) + kStepOverheadFlops);
}

ShardPlanRecord plan_shards(const SweepConfig& config, int count) {
  std::vector<Unit> units;
  nlohmann::json experiments = nlohmann::json::array();
  for (std::size_t i = 0; i < config.experiments.size(); ++i) {
    const ExperimentConfig& e = config.experiments[i];
    if (e.batch_to_max) {
      throw UserError(located_value(e, "batch",
                                    "experiment " + e.name + " ends its batch sizes in max, which are known only "
                                    "once a GPU has been searched, so they cannot be shared out in advance",
                                    "give its sizes (e.g. batch: 1:256), or run it without --shard"));
    }
    const double forward = experiment_forward_flops(e);
    for (std::size_t p = 0; p < e.batch_sizes.size(); ++p) units.push_back({i, p, batch_cost(e, forward, e.batch_sizes[p])});
    experiments.push_back(to_json(e));
  }
  if (count < 1 || count > limits::kMaxShards) {
    refuse_shard(std::to_string(count) + " shards are not a shard count",
                 "give from 1 to " + std::to_string(limits::kMaxShards));
  }
  if (static_cast<std::size_t>(count) > units.size()) {
    throw UserError(located(config.source, 0,
                            "the plan has " + std::to_string(units.size()) + " batch size(s) to share out, fewer than the " +
                                std::to_string(count) + " shards asked for",
                            "use at most " + std::to_string(units.size()) + " shards"));
  }

  // Largest first, each to the least loaded shard: within 4/3 of the best possible longest shard.
  std::vector<std::size_t> order(units.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return units[a].cost > units[b].cost; });
  std::vector<double> load(static_cast<std::size_t>(count), 0.0);
  std::vector<int> owner(units.size(), 0);
  for (std::size_t u : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owner[u] = static_cast<int>(least - load.begin());
    *least += units[u].cost;
  }

  ShardPlanRecord plan;
  plan.count = count;
  plan.index = -1;
  plan.source = config.source;
  plan.plan_id = hash_id(nlohmann::json{{"count", count}, {"experiments", experiments}}.dump());
  plan.shares.resize(static_cast<std::size_t>(count));
  // Each share in the experiments' order, and each experiment's sizes in the order given.
  for (std::size_t u = 0; u < units.size(); ++u) {
    ShardShare& share = plan.shares[static_cast<std::size_t>(owner[u])];
    const ExperimentConfig& e = config.experiments[units[u].experiment];
    if (share.parts.empty() || share.parts.back().experiment != e.name) {
      ShardShare::Part part;
      part.experiment = e.name;
      part.passes = e.repeats;
      share.parts.push_back(part);
    }
    share.parts.back().batch_sizes.push_back(e.batch_sizes[units[u].position]);
    share.parts.back().costs.push_back(units[u].cost);
    share.cost += units[u].cost;
  }
  return plan;
}

SweepConfig shard_config(const SweepConfig& config, const ShardPlanRecord& plan, int index) {
  SweepConfig shard;
  shard.source = config.source;
  const ShardShare& share = plan.shares.at(static_cast<std::size_t>(index));
  for (const ExperimentConfig& e : config.experiments) {
    for (const ShardShare::Part& part : share.parts) {
      if (part.experiment != e.name) continue;
      ExperimentConfig mine = e;
      mine.batch_sizes = part.batch_sizes;
      shard.experiments.push_back(std::move(mine));
    }
  }
  return shard;
}

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<ShardChoice> choose_shard(const std::string& shard_option, int64_t shards_option, const Environment& env) {
  const std::string most = std::to_string(limits::kMaxShards);
  if (shards_option < 0 || shards_option > limits::kMaxShards) {
    refuse_shard("--shards " + std::to_string(shards_option) + " is not a shard count", "give from 1 to " + most);
  }
  if (shard_option == "none") {
    if (shards_option > 0) refuse_shard("--shard none and --shards contradict each other", "leave one of them out");
    return std::nullopt;
  }
  if (!shard_option.empty()) {
    const std::size_t slash = shard_option.find('/');
    const auto index = slash == std::string::npos ? std::nullopt : whole(shard_option.substr(0, slash), limits::kMaxShards);
    const auto count = slash == std::string::npos ? std::nullopt : whole(shard_option.substr(slash + 1), limits::kMaxShards);
    if (!index || !count || *count < 1) {
      refuse_shard("--shard " + shard_option + " is not a shard",
                   "give the shard's index from 0 and the shard count, e.g. --shard 3/16, or --shard none");
    }
    if (*index >= *count) {
      refuse_shard("--shard " + shard_option + ": there is no shard " + std::to_string(*index) + " of " +
                       std::to_string(*count) + " (shards count from 0)",
                   "give an index from 0 to " + std::to_string(*count - 1));
    }
    if (shards_option > 0 && shards_option != *count) {
      refuse_shard("--shard " + shard_option + " and --shards " + std::to_string(shards_option) + " give two shard counts",
                   "leave --shards out");
    }
    return ShardChoice{static_cast<int>(*index), static_cast<int>(*count), "--shard", "--shard " + shard_option};
  }

  if (const auto task = env("SLURM_ARRAY_TASK_ID")) {
    const auto id = whole(*task, 1 << 30);
    if (!id) refuse_shard("SLURM_ARRAY_TASK_ID=" + *task + " is not a task id", "run the sweep from a Slurm job array, or pass --shard I/N");
    if (shards_option > 0) {
      if (*id >= shards_option) {
        refuse_shard("SLURM_ARRAY_TASK_ID=" + *task + " is no shard of --shards " + std::to_string(shards_option) +
                         " (with --shards, the task ids are the shard indices)",
                     "submit the array as --array=0-" + std::to_string(shards_option - 1) + ", or a part of it");
      }
      return ShardChoice{static_cast<int>(*id), static_cast<int>(shards_option), "SLURM_ARRAY_TASK_ID",
                         "SLURM_ARRAY_TASK_ID=" + *task + " with --shards " + std::to_string(shards_option)};
    }
    const auto count_text = env("SLURM_ARRAY_TASK_COUNT");
    const auto count = count_text ? whole(*count_text, limits::kMaxShards) : std::nullopt;
    if (!count || *count < 1) {
      refuse_shard("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not a task count",
                   "pass --shards N (the task ids are then the shard indices), or --shard none to run unsharded");
    }
    const auto min_text = env("SLURM_ARRAY_TASK_MIN");
    const auto step_text = env("SLURM_ARRAY_TASK_STEP");
    const int64_t min = min_text ? whole(*min_text, 1 << 30).value_or(-1) : 0;
    const int64_t step = step_text ? whole(*step_text, 1 << 30).value_or(0) : 1;
    if (min < 0 || min > *id || step < 1 || (*id - min) % step != 0 || (*id - min) / step >= *count) {
      refuse_shard("SLURM_ARRAY_TASK_ID=" + *task + " does not fall on the array's own tasks (SLURM_ARRAY_TASK_MIN, _STEP, _COUNT)",
                   "pass --shards N, so that the task ids are the shard indices");
    }
    const int64_t index = (*id - min) / step;
    return ShardChoice{static_cast<int>(index), static_cast<int>(*count), "SLURM_ARRAY_TASK_ID",
                       "SLURM_ARRAY_TASK_ID=" + *task + " of SLURM_ARRAY_TASK_COUNT=" + *count_text};
  }

  if (const auto completion = env("JOB_COMPLETION_INDEX")) {
    const auto id = whole(*completion, limits::kMaxShards);
    if (!id) refuse_shard("JOB_COMPLETION_INDEX=" + *completion + " is not an index", "run the sweep from an Indexed Job, or pass --shard I/N");
    if (shards_option == 0) {
      refuse_shard("JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job), but no --shards N says how many shards there are",
                   "pass --shards with the Job's completions, or --shard none to run unsharded");
    }
    if (*id >= shards_option) {
      refuse_shard("JOB_COMPLETION_INDEX=" + *completion + " is no shard of --shards " + std::to_string(shards_option),
                   "make the Job's completions equal to --shards");
    }
    return ShardChoice{static_cast<int>(*id), static_cast<int>(shards_option), "JOB_COMPLETION_INDEX",
                       "JOB_COMPLETION_INDEX=" + *completion + " with --shards " + std::to_string(shards_option)};
  }
  if (shards_option > 0) {
    refuse_shard("--shards " + std::to_string(shards_option) + " needs to know which shard this is",
                 "pass --shard I/" + std::to_string(shards_option) +
                     ", or run it as a task of a Slurm job array or a Kubernetes Indexed Job");
  }
  return std::nullopt;
}

}  // namespace batchscope
