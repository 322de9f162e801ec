#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/cluster/shard_plan.h"
#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/config/config.h"
#include "lib/device/cpu_memory.h"
#include "lib/records/run_store.h"
#include "lib/records/summary_table.h"
#include "lib/sweep/batch_maximum.h"
#include "lib/sweep/machine_check.h"
#include "lib/sweep/max_batch.h"
#include "lib/sweep/sweep_plan.h"
#include "lib/sweep/sweep_runner.h"
#include "lib/sweep/time_spent.h"
#include "models/model_file.h"

// batchscope sweep: the command line into experiments and options, the sweep, its table.

namespace batchscope::app {
namespace {

// Every experiment option: a sweep's command line can describe a whole experiment.
const std::vector<ExperimentOption> kSweepOptions = {
    ExperimentOption::Model,        ExperimentOption::Batch,          ExperimentOption::Device,
    ExperimentOption::Steps,        ExperimentOption::Warmup,         ExperimentOption::Phase,
    ExperimentOption::Precision,    ExperimentOption::Optimizer,      ExperimentOption::Lr,
    ExperimentOption::Input,        ExperimentOption::SeqLen,         ExperimentOption::InputKind,
    ExperimentOption::Vocab,        ExperimentOption::Classes,        ExperimentOption::Data,
    ExperimentOption::Transfer,     ExperimentOption::Chunk,          ExperimentOption::Order,
    ExperimentOption::Seed,         ExperimentOption::ChannelsLast,   ExperimentOption::CudnnBenchmark,
    ExperimentOption::Profile,      ExperimentOption::ProfileSteps,   ExperimentOption::Repeats,
    ExperimentOption::CiWidth,      ExperimentOption::MinTime,        ExperimentOption::MaxTime,
    ExperimentOption::Tf32,         ExperimentOption::LossScale,      ExperimentOption::LossScaleInit,
    ExperimentOption::LossScaleGrowthInterval,                        ExperimentOption::Foreach};

// The options of batchscope sweep: every experiment option, then the sweep's own.
cxxopts::Options sweep_options() {
  cxxopts::Options options(
      "batchscope sweep",
      "Time every step of a training (or inference) loop at each batch size.\n"
      "Reads the experiments of CONFIG.yaml; the options below replace its values in every "
      "experiment, or describe a single experiment when no file is given.");
  options.positional_help("[CONFIG.yaml]");
  // clang-format off
  options.add_options()
      ("config", "YAML experiment file", cxxopts::value<std::string>())
      ("experiment", "run only the experiment of CONFIG with this name (repeatable)", cxxopts::value<std::vector<std::string>>(), "NAME");
  add_experiment_options(options, kSweepOptions);
  options.add_options()
      ("threads", threads_help("CPU threads for LibTorch"), cxxopts::value<std::string>())
      ("memory-limit", "LibTorch memory allowed on each device swept, e.g. 8GiB; more is out of memory (the CPU: its counted tensors; a GPU: its caching allocator, as on a GPU of that much memory)", cxxopts::value<std::string>())
      ("trace", "with --profile (which it implies): keep a Chrome trace of one profiled step per batch size in OUT/traces/, to open in Perfetto")
      ("no-energy", "do not measure energy (NVML on a GPU, RAPL on the CPU)")
      ("idle-seconds", "seconds of idle power measured before the sweep, 0 for none", cxxopts::value<std::string>()->default_value("2"))
      ("energy-window", "shortest energy window in ms; shorter batch sizes run more untimed steps in it (default: 20 updates of the counter, at least 100)", cxxopts::value<std::string>())
      ("o,out", "output directory (default runs/<config or model name>)", cxxopts::value<std::string>())
      ("force", "replace a complete run, or a different one, in the output directory (kept in its .replaced until the new one completes)")
      ("q,quiet", "no progress line")
      ("json", "print the summary (a row per experiment and batch size) as JSON on stdout instead of the table")
      ("shard", "run shard I of N (from 0) of the experiments' batch sizes, in OUT/shard-IIII-of-NNNN/; without it the "
                "shard comes from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX where they are set; none: never shard", cxxopts::value<std::string>(), "I/N")
      ("shards", "the shard count, with the index from the cluster (a Slurm array task id, a Kubernetes completion index)", cxxopts::value<std::string>())
      ("plan", "print what would run, as JSON (each experiment with its batch sizes and FLOPs per step; with --shards, "
               "each shard's share); runs and writes nothing")
      ("h,help", "this help");
  // clang-format on
  options.parse_positional({"config"});
  return options;
}

// --experiment NAME (repeatable): only the named experiments of the file, in the file's order.
SweepConfig only_named_experiments(SweepConfig config, const cxxopts::ParseResult& result, bool from_file) {
  if (!result.count("experiment")) return config;
  if (!from_file) refuse("--experiment chooses among the experiments of a file", "give a CONFIG.yaml, or leave it out");
  const auto names = result["experiment"].as<std::vector<std::string>>();
  std::string known;
  for (const ExperimentConfig& e : config.experiments) known += (known.empty() ? "" : ", ") + e.name;
  for (const std::string& name : names) {
    const bool found = std::any_of(config.experiments.begin(), config.experiments.end(),
                                   [&](const ExperimentConfig& e) { return e.name == name; });
    if (!found) refuse("--experiment: the file has no experiment named '" + name + "'", "give one of " + known);
  }
  std::vector<ExperimentConfig> kept;
  for (const ExperimentConfig& e : config.experiments) {
    if (std::find(names.begin(), names.end(), e.name) != names.end()) kept.push_back(e);
  }
  config.experiments = kept;
  return config;
}

// How the sweep runs and where it writes, from the command line.
SweepOptions sweep_run_options(const cxxopts::ParseResult& result, const std::vector<std::string>& args,
                               const std::string& out_dir) {
  SweepOptions sweep;
  sweep.out_dir = out_dir;
  sweep.force = result.count("force") > 0;
  sweep.show_progress = !result.count("quiet") && isatty(STDERR_FILENO);
  sweep.command_line = command_text("sweep", args);
  sweep.measure_energy = result.count("no-energy") == 0;
  sweep.idle_seconds = real_option(result, "idle-seconds", 0, 600);
  if (result.count("energy-window"))
    sweep.min_energy_window_ms = real_option(result, "energy-window", 0, 3.6e6, /*least_excluded=*/true);
  sweep.trace = result.count("trace") > 0;
  sweep.stop_requested = &stop_requested();
  return sweep;
}

// The options of how the sweep runs, checked before --plan answers and before submit writes its job
// script: neither is written for a command the sweep would refuse.
void check_run_options(const cxxopts::ParseResult& result, const std::vector<std::string>& args) {
  sweep_run_options(result, args, "");
  if (result.count("memory-limit")) parse_memory_limit(result["memory-limit"].as<std::string>());
}

// A shard of the plan: checks that the output directory holds no other plan, writes plan.json there,
// and moves the sweep into the shard's own directory. Returns the shard's experiments, or nullopt when
// the shard is complete already (a task run again ends at once, so a whole array can be resubmitted).
// The plan comes from the experiments as written (devices not yet resolved), so that every machine,
// and batchscope submit, computes the same one.
std::optional<SweepConfig> enter_shard(const ShardChoice& shard, const SweepConfig& parsed, const SweepConfig& machine,
                                       SweepOptions& sweep) {
  ShardPlanRecord plan = plan_shards(parsed, shard.count);
  const std::string root = sweep.out_dir;
  check_same_plan(root, plan);
  write_plan_file(root, plan);
  plan.index = shard.index;
  plan.from = shard.from;
  const SweepConfig mine = shard_config(machine, plan, shard.index);
  sweep.out_dir = (std::filesystem::path(root) / shard_dir_name(shard.index, shard.count)).string();
  const ShardDir dir = read_shard_dir(root, shard.index, shard.count);
  if (dir.complete && !sweep.force) {
    spdlog::info("shard {} of {} ({}) is complete already in {}", shard.index, shard.count, shard.explanation, sweep.out_dir);
    return std::nullopt;
  }
  const ShardShare& share = plan.shares[static_cast<std::size_t>(shard.index)];
  int64_t sizes = 0;
  for (const auto& part : share.parts) sizes += static_cast<int64_t>(part.batch_sizes.size());
  double total = 0;
  for (const ShardShare& s : plan.shares) total += s.cost;
  spdlog::info("shard {} of {} ({}): {} batch size(s) of {} experiment(s), {:.1f}% of the plan's estimated work, in {}",
               shard.index, shard.count, shard.explanation, sizes, share.parts.size(),
               total > 0 ? 100.0 * share.cost / total : 0.0, sweep.out_dir);
  sweep.shard_plan = to_json(plan);
  return mine;
}

}  // namespace

SweepConfig submitted_sweep_config(const std::string& config_path, const std::vector<std::string>& sweep_args) {
  cxxopts::Options options = sweep_options();
  const auto result = parse_command_line(options, sweep_args);
  for (const char* own : {"config", "out", "shard", "shards", "force", "plan", "help"}) {
    if (result.count(own)) {
      refuse(std::string("--") + own + " among the sweep options after -- belongs to submit itself",
             "give it before --, or leave it out");
    }
  }
  check_run_options(result, sweep_args);
  SweepOverrides o;
  read_experiment_options(result, kSweepOptions, o);
  if (result.count("trace")) o.profile = true;
  return only_named_experiments(load_sweep_config(config_path, o), result, /*from_file=*/true);
}

int run_sweep_command(const std::vector<std::string>& args) {
  cxxopts::Options options = sweep_options();
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help()
              << "\nExample: batchscope sweep --model vgg16 --batch 1:70 --device cuda:0 "
                 "--steps 20 --warmup 5 --out runs/vgg16\n";
    return 0;
  }

  SweepOverrides o;
  read_experiment_options(result, kSweepOptions, o);
  if (result.count("trace")) o.profile = true;

  apply_threads_option(result);

  const bool from_file = result.count("config") > 0;
  const SweepConfig parsed = only_named_experiments(
      from_file ? load_sweep_config(result["config"].as<std::string>(), o) : sweep_from_overrides(o), result, from_file);
  const int64_t shards = result.count("shards") ? whole_option(result, "shards", 1, limits::kMaxShards) : 0;
  check_run_options(result, args);
  if (result.count("plan")) {
    if (result.count("shard")) choose_shard(result["shard"].as<std::string>(), shards, process_environment());
    check_sweep_settings(parsed);  // what no machine changes; the device's checks are the sweep's
    nlohmann::json plan = sweep_plan(parsed);
    if (shards > 0) plan["shards"] = nlohmann::json::parse(to_json(plan_shards(parsed, static_cast<int>(shards))).dump());
    std::cout << plan.dump(2) << "\n";
    return 0;
  }
  const std::optional<ShardChoice> shard =
      choose_shard(result.count("shard") ? result["shard"].as<std::string>() : "", shards, process_environment());
  SweepConfig machine = resolve_for_machine(parsed);
  Json memory_limits;
  if (result.count("memory-limit")) {
    // On each device the experiments run on: a batch size that needs more is out of memory.
    std::vector<std::string> devices;
    for (const ExperimentConfig& e : machine.experiments) devices.push_back(e.device);
    memory_limits = apply_memory_limit(result["memory-limit"].as<std::string>(), devices);
  }

  // LibTorch's CPU tensors are counted on every CPU sweep, so that each batch size's record has its peak
  // memory, as a GPU's has.
  for (const ExperimentConfig& e : machine.experiments) {
    if (torch::Device(e.device).is_cpu()) cpu_memory::install();
  }

  const std::string out_dir =
      result.count("out") ? result["out"].as<std::string>()
      : from_file         ? "runs/" + std::filesystem::path(result["config"].as<std::string>()).stem().string()
                          : "runs/" + models::model_stem(machine.experiments.front().model);
  SweepOptions sweep = sweep_run_options(result, args, out_dir);
  sweep.memory_limits = memory_limits;
  if (shard) {
    const std::optional<SweepConfig> mine = enter_shard(*shard, parsed, machine, sweep);
    if (!mine) return 0;  // complete already
    machine = *mine;
  }
  // A sweep that cannot resume under these limits, or on this machine, is refused before any search for
  // its largest batch.
  if (!sweep.force) {
    std::set<std::string> devices;
    for (const ExperimentConfig& e : machine.experiments) devices.insert(e.device);
    check_resumed_session(sweep.out_dir, sweep.memory_limits, devices);
  } else if (const std::optional<std::string> kept = set_aside_replaced_sweep(sweep.out_dir)) {
    spdlog::info("--force: the sweep this one replaces is kept in {} until this one is complete", *kept);
  }
  // A search for the largest batch size (batch: 1:max) stops between two tries, and goes on from them.
  stop_on_signals("this try or batch size");
  SweepConfig config;
  try {
    config = resolve_batch_maximum(machine, sweep);
  } catch (const MaxBatchStopped&) {
    return kExitStopped;
  }
  if (result.count("quiet")) spdlog::set_level(spdlog::level::warn);
  const SweepOutcome outcome = run_sweep(config, sweep, std::cerr);
  if (outcome.interrupted) {
    spdlog::warn("stopped before the end; the finished batch sizes are in {}: run the same command to resume",
                 outcome.jsonl_path);
    return kExitStopped;
  }
  spdlog::info("time spent: {}", describe_time_spent(outcome.time_spent));
  const std::string written = std::string(outcome.resumed ? "resumed and completed: " : "written: ") +
                              outcome.jsonl_path + ", " + outcome.csv_path;
  if (result.count("json")) {
    // Standard output holds the JSON alone, for a pipe; where it was written goes to the log.
    std::cout << summary_json(outcome.records).dump(2) << "\n";
    spdlog::info("{}", written);
    return 0;
  }
  std::cout << format_summary_table(outcome.records) << "\n" << written << "\n";
  return 0;
}

}  // namespace batchscope::app
