#include <unistd.h>

#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/cluster/job_scripts.h"
#include "lib/cluster/shard_plan.h"
#include "lib/cluster/shard_status.h"
#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/common/program_runner.h"
#include "lib/common/words.h"
#include "lib/sweep/machine_check.h"

// batchscope status and batchscope submit: a sweep shared out over a cluster.

namespace batchscope::app {
namespace fs = std::filesystem;
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(located(path, 0, "cannot be read", "pass an experiment file that exists"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// This program's own path, for the tasks of a cluster that shares this file system.
std::string own_program() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "batchscope" : self.string();
}

cxxopts::Options submit_options(const std::string& engine) {
  const bool slurm = engine == "slurm";
  cxxopts::Options options(
      "batchscope submit " + engine,
      slurm ? "Share the sweep of CONFIG.yaml out over a Slurm job array: writes OUT/slurm.sbatch (task I runs shard I "
              "into OUT/shard-IIII-of-NNNN/) and submits it with sbatch. Options after -- go to every task's sweep."
            : "Share the sweep of CONFIG.yaml out over a Kubernetes Indexed Job: writes OUT/k8s-job.yaml (a ConfigMap "
              "with the experiment file, and the Job) to apply with kubectl apply -f. Options after -- go to every "
              "task's sweep.");
  options.positional_help("CONFIG.yaml [-- SWEEP OPTIONS]");
  // clang-format off
  options.add_options()
      ("config", "YAML experiment file", cxxopts::value<std::string>())
      ("shards", "how many shards (tasks) to share the batch sizes out over (default: 8, or fewer where there are fewer batch sizes)", cxxopts::value<std::string>())
      ("gpus-per-task", "GPUs each task asks for (default: 1, or 0 where every experiment runs on the cpu)", cxxopts::value<std::string>())
      ("max-parallel", "at most this many tasks at once (default: as many as the cluster runs)", cxxopts::value<std::string>())
      ("name", "the job's name (default: batchscope-<config name>)", cxxopts::value<std::string>())
      ("o,out", "the common output directory of the shards (default runs/<config name>)", cxxopts::value<std::string>());
  if (slurm) {
    options.add_options()
        ("partition", "the Slurm partition", cxxopts::value<std::string>())
        ("time", "the time limit of each task, as sbatch takes it (e.g. 2:00:00)", cxxopts::value<std::string>())
        ("cpus-per-task", "CPUs each task asks for", cxxopts::value<std::string>())
        ("container", "run each task in this container image", cxxopts::value<std::string>())
        ("container-runtime", "how: pyxis (srun --container-image) or apptainer", cxxopts::value<std::string>()->default_value("pyxis"))
        ("unfinished", "submit only the shards that are not complete in OUT (after a cancelled or failed task)")
        ("dry-run", "write the script and do not submit it");
  } else {
    options.add_options()
        ("image", "the container image with batchscope (required)", cxxopts::value<std::string>())
        ("namespace", "the Kubernetes namespace (default: the context's)", cxxopts::value<std::string>())
        ("claim", "the PersistentVolumeClaim the results are written to", cxxopts::value<std::string>()->default_value("batchscope-results"))
        ("program", "batchscope's path in the image", cxxopts::value<std::string>()->default_value("batchscope"))
        ("backoff-limit-per-index", "retries of one shard before it counts as failed", cxxopts::value<std::string>()->default_value("2"));
  }
  options.add_options()("h,help", "this help");
  // clang-format on
  options.parse_positional({"config"});
  return options;
}

const std::string kNameCharacters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:";

// A value that goes into the script as it is: no newline, no quote that could end it early. `described`
// says in words what `allowed` holds.
std::string plain_value(const cxxopts::ParseResult& result, const std::string& name,
                        const std::string& allowed, const std::string& described) {
  const std::string value = result[name].as<std::string>();
  if (value.empty() || value.find_first_not_of(allowed) != std::string::npos) {
    refuse("--" + name + " '" + printable(value) + "' has characters a cluster does not take there",
           "use " + described);
  }
  return value;
}

// A Kubernetes object's name as given, where it is one (RFC 1123: lowercase letters, digits and '-',
// beginning and ending with a letter or digit; with `dots`, several such labels joined by '.'); refused
// otherwise, never changed into another name that the cluster would not find.
std::string kubernetes_name(const cxxopts::ParseResult& result, const std::string& name, bool dots) {
  const std::string value = result[name].as<std::string>();
  const std::size_t longest = dots ? 253 : 63;
  bool ok = !value.empty() && value.size() <= longest;
  std::size_t label = 0;  // characters of the label so far
  for (std::size_t i = 0; ok && i < value.size(); ++i) {
    const char c = value[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '.' && dots) {
      ok = label > 0 && value[i - 1] != '-';
      label = 0;
    } else if (alnum || (c == '-' && label > 0)) {
      ++label;
    } else {
      ok = false;
    }
  }
  ok = ok && label > 0 && value.back() != '-';
  if (!ok) {
    refuse("--" + name + " '" + printable(value) + "' is not a Kubernetes name",
           std::string("use lowercase letters, digits and '-'") + (dots ? " (and '.' between parts)" : "") +
               ", beginning and ending with a letter or digit, at most " + std::to_string(longest) +
               " characters, as the " + (dots ? "claim" : "namespace") + " is named in the cluster");
  }
  return value;
}

struct Submission {
  SweepConfig config;
  ShardPlanRecord plan;
  ShardedJob job;
  fs::path out;
};

// What both engines share: the plan, the output directory with plan.json, the job's description.
Submission prepare(const cxxopts::ParseResult& result, const std::vector<std::string>& args,
                   const std::vector<std::string>& sweep_args, const std::string& engine) {
  if (!result.count("config")) refuse("submit " + engine + " needs an experiment file", "e.g. batchscope submit " + engine + " configs/quick.yaml");
  const std::string config_path = result["config"].as<std::string>();
  Submission s;
  s.config = submitted_sweep_config(config_path, sweep_args);
  check_sweep_settings(s.config);  // before any task is submitted to fail on it
  int64_t sizes = 0;
  for (const ExperimentConfig& e : s.config.experiments) sizes += static_cast<int64_t>(e.batch_sizes.size());
  const int64_t shards = result.count("shards") ? whole_option(result, "shards", 1, limits::kMaxShards)
                                                : std::max<int64_t>(1, std::min<int64_t>(8, sizes));
  s.plan = plan_shards(s.config, static_cast<int>(shards));
  const std::string stem = fs::path(config_path).stem().string();
  s.out = fs::absolute(result.count("out") ? fs::path(result["out"].as<std::string>()) : fs::path("runs") / stem).lexically_normal();
  check_same_plan(s.out.string(), s.plan);
  write_plan_file(s.out.string(), s.plan);

  const bool all_cpu = std::all_of(s.config.experiments.begin(), s.config.experiments.end(),
                                   [](const ExperimentConfig& e) { return e.device == "cpu"; });
  s.job.name = dns_name(result.count("name") ? result["name"].as<std::string>() : "batchscope-" + stem);
  s.job.config_path = fs::absolute(config_path).lexically_normal().string();
  s.job.sweep_options = sweep_args;
  s.job.shards = static_cast<int>(shards);
  s.job.gpus_per_task = result.count("gpus-per-task") ? static_cast<int>(whole_option(result, "gpus-per-task", 0, 64)) : (all_cpu ? 0 : 1);
  s.job.max_parallel = result.count("max-parallel") ? static_cast<int>(whole_option(result, "max-parallel", 1, limits::kMaxShards)) : 0;
  s.job.plan_id = s.plan.plan_id;
  s.job.written_by = command_text("submit", args);
  return s;
}

int submit_slurm(const cxxopts::ParseResult& result, const std::vector<std::string>& args,
                 const std::vector<std::string>& sweep_args) {
  // The options first: nothing is written for a command that is refused.
  SlurmOptions slurm;
  slurm.workdir = fs::current_path().string();
  if (result.count("partition"))
    slurm.partition = plain_value(result, "partition", kNameCharacters, "letters, digits and - _ . , :");
  if (result.count("time"))
    slurm.time_limit =
        plain_value(result, "time", "0123456789:-", "digits, ':' and '-', as in 2:00:00 or 1-12:00");
  if (result.count("cpus-per-task")) slurm.cpus_per_task = static_cast<int>(whole_option(result, "cpus-per-task", 1, 4096));
  if (result.count("container")) slurm.container = result["container"].as<std::string>();
  slurm.container_runtime = result["container-runtime"].as<std::string>();
  if (slurm.container_runtime != "pyxis" && slurm.container_runtime != "apptainer") {
    refuse("--container-runtime " + printable(slurm.container_runtime) + " is not one batchscope writes for", "use pyxis or apptainer");
  }
  Submission s = prepare(result, args, sweep_args, "slurm");
  s.job.out_dir = s.out.string();
  s.job.program = slurm.container.empty() ? own_program() : "batchscope";
  slurm.log_dir = (s.out / "slurm-logs").string();
  fs::create_directories(slurm.log_dir);
  const fs::path script = s.out / "slurm.sbatch";
  replace_file(script.string(), slurm_script(s.job, slurm), /*executable=*/true);
  std::cout << "written: " << script.string() << " (" << s.job.shards << " shards of " << s.config.source << ", plan "
            << s.plan.plan_id << ")\n";

  std::vector<std::string> sbatch_args = {"--parsable"};
  std::string tasks = "0-" + std::to_string(s.job.shards - 1);
  if (result.count("unfinished")) {
    const std::vector<int> left = unfinished_shards(run_status(s.out.string(), 0));
    if (left.empty()) {
      std::cout << "every shard is complete: batchscope analyze " << s.out.string() << "\n";
      return 0;
    }
    tasks = joined_numbers(left, ",");
    if (s.job.max_parallel > 0) sbatch_args.push_back("--array=" + tasks + "%" + std::to_string(s.job.max_parallel));
    else sbatch_args.push_back("--array=" + tasks);
  }
  if (result.count("dry-run")) {
    std::cout << "not submitted (--dry-run); submit it with: sbatch " << (sbatch_args.size() > 1 ? sbatch_args[1] + " " : "")
              << shell_quote(script.string()) << "\n";
    return 0;
  }
  const auto sbatch = find_program("sbatch");
  if (!sbatch) {
    throw UserError(located(script.string(), 0, "is written, but sbatch is not on PATH here, so it was not submitted",
                            "submit it from a Slurm login node with: sbatch " + script.string()));
  }
  sbatch_args.push_back(script.string());
  const ProgramRun run = run_program(*sbatch, sbatch_args, slurm.workdir, Stdout::Keep);
  if (!run.started || run.exit_status != 0) {
    std::string why = run.started ? run.errors : run.failure;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw UserError(located(script.string(), 0, "was refused by sbatch: " + printable(why),
                            "fix the options it names (--partition, --time, --gpus-per-task), then submit again"));
  }
  const std::string job_id = run.output.substr(0, run.output.find_first_of(";\n"));
  std::cout << "submitted job " << job_id << ": tasks " << tasks
            << (s.job.max_parallel > 0 ? ", at most " + std::to_string(s.job.max_parallel) + " at once" : "") << "\n"
            << "follow it: squeue -j " << job_id << "  and  batchscope status " << s.out.string() << "\n"
            << "task output: " << slurm.log_dir << "/" << job_id << "_I.out\n"
            << "when it is done: batchscope analyze " << s.out.string() << "\n";
  return 0;
}

int submit_k8s(const cxxopts::ParseResult& result, const std::vector<std::string>& args,
               const std::vector<std::string>& sweep_args) {
  if (!result.count("image")) refuse("submit k8s needs the container image with batchscope", "give it with --image, e.g. --image registry.example.com/batchscope:latest");
  // The options first: nothing is written for a command that is refused.
  K8sOptions k8s;
  k8s.image = plain_value(result, "image", kNameCharacters + "/@", "letters, digits and - _ . , : / @");
  if (result.count("namespace")) k8s.namespace_name = kubernetes_name(result, "namespace", /*dots=*/false);
  k8s.claim = kubernetes_name(result, "claim", /*dots=*/true);
  k8s.backoff_limit_per_index = static_cast<int>(whole_option(result, "backoff-limit-per-index", 0, 1000));
  Submission s = prepare(result, args, sweep_args, "k8s");
  k8s.config_file_name = fs::path(s.job.config_path).filename().string();
  k8s.config_text = read_text(s.job.config_path);
  s.job.program = result["program"].as<std::string>();
  s.job.out_dir = k8s.results_mount + "/" + s.job.name;
  const fs::path manifest = s.out / "k8s-job.yaml";
  replace_file(manifest.string(), k8s_manifest(s.job, k8s));
  std::cout << "written: " << manifest.string() << " (" << s.job.shards << " shards of " << s.config.source << ", plan "
            << s.plan.plan_id << ")\n"
            << "apply it: kubectl apply -f " << manifest.string() << "\n"
            << "follow it: kubectl get job " << s.job.name << "; the shards write to " << s.job.out_dir
            << " on the claim " << k8s.claim << "\n"
            << "then copy that directory here and: batchscope status DIR; batchscope analyze DIR\n";
  return 0;
}

}  // namespace

int run_status_command(const std::vector<std::string>& args) {
  cxxopts::Options options("batchscope status",
                           "Which shards of a sharded sweep are complete, running, stopped or missing, and what is left.\n"
                           "Exit code 0 when every shard is complete, 3 while work is left.");
  options.positional_help("OUT");
  // clang-format off
  options.add_options()
      ("out", "the common output directory of the shards", cxxopts::value<std::string>())
      ("stale-minutes", "a shard whose log has not been written to for longer is stopped, not running", cxxopts::value<std::string>()->default_value("30"))
      ("json", "print the status as JSON")
      ("h,help", "this help");
  // clang-format on
  options.parse_positional({"out"});
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help() << "\nExample: batchscope status runs/vgg_cluster\n";
    return 0;
  }
  if (!result.count("out")) refuse("status needs the output directory of a sharded sweep", "e.g. batchscope status runs/quick");
  const double stale = real_option(result, "stale-minutes", 0, 1e6, /*least_excluded=*/true) * 60;
  const RunStatus status = run_status(result["out"].as<std::string>(), stale);
  if (result.count("json")) {
    std::cout << status_json(status).dump(2) << "\n";
  } else {
    write_status(std::cout, status);
  }
  return status.complete ? 0 : 3;
}

int run_submit_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << "usage: batchscope submit slurm CONFIG.yaml [options] [-- SWEEP OPTIONS]\n"
                 "       batchscope submit k8s CONFIG.yaml --image IMAGE [options] [-- SWEEP OPTIONS]\n"
                 "batchscope submit slurm --help and batchscope submit k8s --help list the options.\n";
    return args.empty() ? 2 : 0;
  }
  const std::string engine = args[0];
  if (engine != "slurm" && engine != "k8s") {
    refuse("submit " + printable(engine) + " is not a cluster batchscope submits to", "use submit slurm or submit k8s");
  }
  std::vector<std::string> own(args.begin() + 1, args.end()), sweep_args;
  const auto dashes = std::find(own.begin(), own.end(), "--");
  if (dashes != own.end()) {
    sweep_args.assign(dashes + 1, own.end());
    own.erase(dashes, own.end());
  }
  cxxopts::Options options = submit_options(engine);
  const auto result = parse_command_line(options, own);
  if (result.count("help")) {
    std::cout << options.help() << "\nExample: batchscope submit " << engine << " configs/vgg16_jumps.yaml --shards 16 "
              << (engine == "slurm" ? "--partition gpu --time 2:00:00" : "--image registry.example.com/batchscope:latest")
              << " -- --steps 30\n";
    return 0;
  }
  return engine == "slurm" ? submit_slurm(result, args, sweep_args) : submit_k8s(result, args, sweep_args);
}

}  // namespace batchscope::app
