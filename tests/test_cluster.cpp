#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/cluster/job_scripts.h"
#include "lib/cluster/shard_plan.h"
#include "lib/cluster/shard_status.h"
#include "lib/common/errors.h"
#include "lib/common/program_runner.h"
#include "lib/config/config.h"
#include "tests/test_support.h"

// Sharing a sweep out over a cluster: the plan, which shard a task is, the shards on disk, their
// status, and the Slurm script and Kubernetes manifest that run them.

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

// VGG19 at full size beside a small MNIST network: the mix a bad split would put in one shard.
const char* kMixedYaml = R"(device: cpu
defaults: {warmup: 2, steps: 10}
experiments:
  - name: vgg19_full
    model: vgg19
    batch: 1:8
  - name: mnist
    model: mnist_cnn
    batch: 1:64
  - name: resnet
    model: resnet50
    batch: [1, 2, 4, 8]
)";

SweepConfig mixed() { return parse_sweep_config(kMixedYaml, "mixed.yaml"); }

Environment env_of(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

class ShardDirs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("batchscope_shards_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A shard's log: its run record naming the plan, then points for the given batch sizes, and an end
  // record where complete.
  void write_shard(const ShardPlanRecord& whole, int index, const std::vector<std::pair<std::string, int64_t>>& done,
                   bool complete) {
    ShardPlanRecord plan = whole;
    plan.index = index;
    plan.from = "--shard";
    const fs::path dir = fs::path(root_) / shard_dir_name(index, plan.count);
    fs::create_directories(dir);
    std::ofstream out(dir / "steps.jsonl");
    out << Json{{"type", "run"}, {"config", {{"experiments", Json::array()}, {"shard", to_json(plan)}}}}.dump() << "\n";
    for (const auto& [experiment, batch] : done) {
      out << Json{{"type", "point"}, {"experiment", experiment}, {"batch_size", batch}}.dump() << "\n";
    }
    if (complete) out << Json{{"type", "end"}}.dump() << "\n";
  }

  std::string root_;
};

TEST(ShardPlan, EveryBatchSizeIsInExactlyOneShard) {
  const SweepConfig config = mixed();
  for (int count : {1, 2, 5, 16, 76}) {
    const ShardPlanRecord plan = plan_shards(config, count);
    ASSERT_EQ(plan.shares.size(), static_cast<size_t>(count));
    std::multiset<std::pair<std::string, int64_t>> seen;
    for (const ShardShare& share : plan.shares) {
      EXPECT_FALSE(share.parts.empty()) << "every shard gets work";
      for (const auto& part : share.parts) {
        for (int64_t b : part.batch_sizes) seen.insert({part.experiment, b});
      }
    }
    std::multiset<std::pair<std::string, int64_t>> planned;
    for (const ExperimentConfig& e : config.experiments) {
      for (int64_t b : e.batch_sizes) planned.insert({e.name, b});
    }
    EXPECT_EQ(seen, planned) << count << " shards";
  }
}

TEST(ShardPlan, SharesAreBalancedByEstimatedCost) {
  const SweepConfig config = mixed();
  for (int count : {2, 4, 8}) {
    const ShardPlanRecord plan = plan_shards(config, count);
    double total = 0, largest_unit = 0, longest = 0;
    for (const ShardShare& share : plan.shares) {
      total += share.cost;
      longest = std::max(longest, share.cost);
      for (const auto& part : share.parts) {
        for (double c : part.costs) largest_unit = std::max(largest_unit, c);
      }
    }
    // No schedule beats max(total / N, the largest unit); largest-first is within 4/3 of the best.
    const double bound = std::max(total / count, largest_unit);
    EXPECT_LE(longest, bound * 4.0 / 3.0 + 1) << count << " shards";
    // The split is not by experiment: the VGG19 sizes are spread over the shards.
    int shards_with_vgg = 0;
    for (const ShardShare& share : plan.shares) {
      shards_with_vgg += std::any_of(share.parts.begin(), share.parts.end(),
                                     [](const auto& p) { return p.experiment == "vgg19_full"; });
    }
    EXPECT_GE(shards_with_vgg, std::min(count, 8) - 1) << count << " shards";
  }
}

TEST(ShardPlan, CostGrowsWithFlopsStepsAndPasses) {
  ExperimentConfig e = mixed().experiments[0];
  const double one = batch_cost(e, 1e9, 1), eight = batch_cost(e, 1e9, 8);
  EXPECT_GT(eight, one);
  e.repeats = 3;
  EXPECT_DOUBLE_EQ(batch_cost(e, 1e9, 8), 3 * eight);
  e.repeats = 1;
  e.timed_steps *= 2;
  EXPECT_GT(batch_cost(e, 1e9, 8), eight);
}

TEST(ShardPlan, TheSameExperimentsGiveTheSamePlanAndOthersAnother) {
  const ShardPlanRecord a = plan_shards(mixed(), 4), b = plan_shards(mixed(), 4);
  EXPECT_EQ(to_json(a), to_json(b));
  EXPECT_EQ(a.plan_id.size(), 16u);
  EXPECT_NE(plan_shards(mixed(), 5).plan_id, a.plan_id);
  SweepOverrides steps;
  steps.timed_steps = 11;
  EXPECT_NE(plan_shards(parse_sweep_config(kMixedYaml, "mixed.yaml", steps), 4).plan_id, a.plan_id);
  // Where the file is read from does not change the plan.
  EXPECT_EQ(plan_shards(parse_sweep_config(kMixedYaml, "elsewhere/mixed.yaml"), 4).plan_id, a.plan_id);
}

TEST(ShardPlan, RefusesMoreShardsThanBatchSizesAndSizesUpToMax) {
  const std::string more = error_of([] { plan_shards(mixed(), 77); });
  EXPECT_NE(more.find("mixed.yaml"), std::string::npos) << more;
  EXPECT_NE(more.find("76 batch size(s)"), std::string::npos) << more;
  EXPECT_NE(more.find("use at most 76 shards"), std::string::npos) << more;
  const SweepConfig to_max = parse_sweep_config("device: cpu\nmodel: mnist_cnn\nbatch: 8:max\n", "max.yaml");
  const std::string max = error_of([&] { plan_shards(to_max, 2); });
  EXPECT_NE(max.find("max.yaml:3"), std::string::npos) << max;
  EXPECT_NE(max.find("without --shard"), std::string::npos) << max;
}

TEST(ShardPlan, AShardKeepsItsExperimentsOrderAndDropsTheRest) {
  const SweepConfig config = mixed();
  const ShardPlanRecord plan = plan_shards(config, 40);
  for (int i = 0; i < 40; ++i) {
    const SweepConfig mine = shard_config(config, plan, i);
    ASSERT_FALSE(mine.experiments.empty());
    for (const ExperimentConfig& e : mine.experiments) {
      ASSERT_FALSE(e.batch_sizes.empty());
      EXPECT_TRUE(std::is_sorted(e.batch_sizes.begin(), e.batch_sizes.end())) << "in the order given";
    }
  }
}

TEST(ShardChoice, FromTheCommandLine) {
  const auto none = env_of({});
  const auto s = choose_shard("3/16", 0, none);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 3);
  EXPECT_EQ(s->count, 16);
  EXPECT_EQ(s->from, "--shard");
  EXPECT_FALSE(choose_shard("", 0, none));
  EXPECT_FALSE(choose_shard("none", 0, env_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})));
  for (const char* bad : {"3", "a/4", "4/4", "-1/4", "1/0", "1/", "/4", "1/10000"}) {
    EXPECT_NE(error_of([&] { choose_shard(bad, 0, none); }), "") << bad;
  }
  EXPECT_NE(error_of([&] { choose_shard("1/4", 8, none); }).find("two shard counts"), std::string::npos);
  EXPECT_NE(error_of([&] { choose_shard("", 4, none); }).find("--shard I/4"), std::string::npos);
}

TEST(ShardChoice, FromASlurmJobArray) {
  // With --shards the task id is the shard index: a resubmitted part of the array keeps its indices.
  const auto resubmitted = choose_shard(
      "", 16, env_of({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "1"}, {"SLURM_ARRAY_TASK_MIN", "3"}}));
  ASSERT_TRUE(resubmitted);
  EXPECT_EQ(resubmitted->index, 3);
  EXPECT_EQ(resubmitted->count, 16);
  EXPECT_EQ(resubmitted->from, "SLURM_ARRAY_TASK_ID");
  EXPECT_NE(resubmitted->explanation.find("SLURM_ARRAY_TASK_ID=3"), std::string::npos);
  EXPECT_NE(error_of([] { choose_shard("", 4, env_of({{"SLURM_ARRAY_TASK_ID", "4"}})); }).find("--array=0-3"),
            std::string::npos);
  // Without it, the array's own position: ids 1, 3, 5, 7 (--array=1-7:2) are shards 0..3 of 4.
  const auto stepped = choose_shard("", 0,
                                    env_of({{"SLURM_ARRAY_TASK_ID", "5"},
                                            {"SLURM_ARRAY_TASK_COUNT", "4"},
                                            {"SLURM_ARRAY_TASK_MIN", "1"},
                                            {"SLURM_ARRAY_TASK_STEP", "2"}}));
  ASSERT_TRUE(stepped);
  EXPECT_EQ(stepped->index, 2);
  EXPECT_EQ(stepped->count, 4);
  EXPECT_NE(error_of([] { choose_shard("", 0, env_of({{"SLURM_ARRAY_TASK_ID", "5"}})); }), "");
  EXPECT_NE(error_of([] { choose_shard("", 0, env_of({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "2"}})); }),
            "");
  // An explicit --shard wins over the environment.
  EXPECT_EQ(choose_shard("1/2", 0, env_of({{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "2"}}))->index, 1);
}

TEST(ShardChoice, FromAKubernetesIndexedJob) {
  const auto s = choose_shard("", 8, env_of({{"JOB_COMPLETION_INDEX", "7"}}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 7);
  EXPECT_EQ(s->from, "JOB_COMPLETION_INDEX");
  EXPECT_NE(error_of([] { choose_shard("", 0, env_of({{"JOB_COMPLETION_INDEX", "1"}})); }).find("--shards"),
            std::string::npos);
  EXPECT_NE(error_of([] { choose_shard("", 8, env_of({{"JOB_COMPLETION_INDEX", "8"}})); }), "");
}

TEST(ShardLayout, DirectoryNamesAndPlanRecordsRoundTrip) {
  EXPECT_EQ(shard_dir_name(3, 16), "shard-0003-of-0016");
  EXPECT_EQ(parse_shard_dir_name("shard-0003-of-0016"), std::make_pair(3, 16));
  EXPECT_FALSE(parse_shard_dir_name("shard-0016-of-0016"));
  EXPECT_FALSE(parse_shard_dir_name("shard-3-of-16"));
  EXPECT_FALSE(parse_shard_dir_name("shard-0003-of-0016x"));
  ShardPlanRecord plan = plan_shards(mixed(), 5);
  plan.index = 2;
  plan.from = "SLURM_ARRAY_TASK_ID";
  EXPECT_EQ(to_json(shard_plan_from_json(to_json(plan), "here")), to_json(plan));
  Json broken = to_json(plan);
  broken["shares"].erase(0);
  EXPECT_NE(error_of([&] { shard_plan_from_json(broken, "steps.jsonl:1"); }).find("steps.jsonl:1"), std::string::npos);
}

TEST_F(ShardDirs, ShardsOfOnePlanAreFoundWithWhatEachHasDone) {
  const ShardPlanRecord plan = plan_shards(mixed(), 3);
  const auto& first = plan.shares[0].parts.front();
  write_shard(plan, 0, {{first.experiment, first.batch_sizes.front()}}, false);
  write_shard(plan, 2, {}, true);
  write_plan_file(root_, plan);
  const auto run = find_shards(root_);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->plan.plan_id, plan.plan_id);
  ASSERT_EQ(run->shards.size(), 2u);
  EXPECT_EQ(run->shards[0].done.size(), 1u);
  EXPECT_FALSE(run->shards[0].complete);
  EXPECT_TRUE(run->shards[1].complete);
  EXPECT_FALSE(find_shards((fs::path(root_) / "shard-0000-of-0003").string())) << "a shard is not a root";
}

// A finished shard's log kept compressed (gzip steps.jsonl) is still that shard's: found, read and
// counted complete, so that analyze and status see it.
TEST_F(ShardDirs, AShardsCompressedLogIsRead) {
  const ShardPlanRecord plan = plan_shards(mixed(), 3);
  const auto& first = plan.shares[1].parts.front();
  write_shard(plan, 1, {{first.experiment, first.batch_sizes.front()}}, true);
  const fs::path log = fs::path(root_) / shard_dir_name(1, 3) / "steps.jsonl";
  testing_support::write_gzip(log.string() + ".gz", testing_support::file_bytes(log.string()));
  fs::remove(log);
  const auto run = find_shards(root_);
  ASSERT_TRUE(run);
  ASSERT_EQ(run->shards.size(), 1u);
  EXPECT_EQ(run->shards[0].log, log.string() + ".gz");
  EXPECT_TRUE(run->shards[0].has_log);
  EXPECT_TRUE(run->shards[0].complete);
  EXPECT_EQ(run->shards[0].done.size(), 1u);
}

TEST_F(ShardDirs, TwoPlansInOneDirectoryAreRefused) {
  write_shard(plan_shards(mixed(), 3), 0, {}, false);
  write_shard(plan_shards(mixed(), 4), 1, {}, false);
  const std::string message = error_of([&] { find_shards(root_); });
  EXPECT_NE(message.find("two different sweeps share"), std::string::npos) << message;

  fs::remove_all(root_);
  fs::create_directories(root_);
  const ShardPlanRecord three = plan_shards(mixed(), 3);
  write_shard(three, 0, {}, false);
  SweepOverrides steps;
  steps.timed_steps = 3;
  const ShardPlanRecord other = plan_shards(parse_sweep_config(kMixedYaml, "mixed.yaml", steps), 3);
  write_shard(other, 1, {}, false);
  const std::string plans = error_of([&] { find_shards(root_); });
  EXPECT_NE(plans.find(three.plan_id), std::string::npos) << plans;
  EXPECT_NE(plans.find(other.plan_id), std::string::npos) << plans;
  EXPECT_NE(error_of([&] { check_same_plan(root_, other); }), "");
}

TEST_F(ShardDirs, StatusSaysWhichShardsAreCompleteRunningStoppedOrMissing) {
  const ShardPlanRecord plan = plan_shards(mixed(), 4);
  write_plan_file(root_, plan);
  // Shard 0 complete, 1 running (written just now), 2 stopped an hour ago, 3 missing.
  std::vector<std::pair<std::string, int64_t>> all0;
  for (const auto& part : plan.shares[0].parts) {
    for (int64_t b : part.batch_sizes) all0.push_back({part.experiment, b});
  }
  write_shard(plan, 0, all0, true);
  const auto& part1 = plan.shares[1].parts.front();
  write_shard(plan, 1, {{part1.experiment, part1.batch_sizes.front()}}, false);
  write_shard(plan, 2, {}, false);
  const fs::path stopped_log = fs::path(root_) / shard_dir_name(2, 4) / "steps.jsonl";
  fs::last_write_time(stopped_log, fs::file_time_type::clock::now() - std::chrono::hours(1));

  const RunStatus status = run_status(root_, 600);
  ASSERT_EQ(status.shards.size(), 4u);
  EXPECT_EQ(status.shards[0].state, ShardState::Complete);
  EXPECT_EQ(status.shards[1].state, ShardState::Running);
  EXPECT_EQ(status.shards[2].state, ShardState::Stopped);
  EXPECT_GT(status.shards[2].seconds_since_last_record, 3000);
  EXPECT_EQ(status.shards[3].state, ShardState::Missing);
  EXPECT_EQ(status.shards[0].done, status.shards[0].planned);
  EXPECT_EQ(status.shards[0].cost_left, 0);
  EXPECT_EQ(status.shards[1].done, 1);
  EXPECT_DOUBLE_EQ(status.shards[3].cost_left, plan.shares[3].cost);
  EXPECT_FALSE(status.complete);
  EXPECT_EQ(unfinished_shards(status), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(status.planned, 76);

  std::ostringstream text;
  write_status(text, status);
  EXPECT_NE(text.str().find("1 of 4 shards complete, 1 running, 1 stopped, 1 missing"), std::string::npos) << text.str();
  const Json j = status_json(status);
  EXPECT_EQ(j["per_shard"][2]["state"], "stopped");
  EXPECT_EQ(j["unfinished"], Json::array({1, 2, 3}));
  // What is counted is points (a batch size of an experiment in a pass), and said so.
  EXPECT_NE(text.str().find(" of 76 points done (a point: one batch size of one experiment in one pass)"),
            std::string::npos)
      << text.str();
  EXPECT_EQ(j["points_planned"], 76);
  EXPECT_EQ(j["per_shard"][1]["points_done"], 1);
}

TEST_F(ShardDirs, StatusOfADirectoryWithoutShardsIsRefused) {
  EXPECT_NE(error_of([&] { run_status(root_, 60); }).find("no shard directory"), std::string::npos);
  EXPECT_NE(error_of([&] { run_status(root_ + "/absent", 60); }).find("not a directory"), std::string::npos);
}

namespace {

ShardedJob job(int gpus) {
  ShardedJob j;
  j.name = dns_name("batchscope-Quick_Sweep");
  j.config_path = "/home/me/my configs/it's.yaml";
  j.out_dir = "/home/me/runs/quick";
  j.program = "/opt/batchscope/bin/batchscope";
  j.sweep_options = {"--steps", "30"};
  j.shards = 4;
  j.gpus_per_task = gpus;
  j.max_parallel = 2;
  j.plan_id = "0123456789abcdef";
  j.written_by = "batchscope submit slurm x.yaml";
  return j;
}

}  // namespace

TEST(JobScripts, SlurmScriptIsAJobArrayThatRunsTheSweep) {
  SlurmOptions slurm;
  slurm.workdir = "/home/me";
  slurm.partition = "gpu";
  slurm.time_limit = "2:00:00";
  slurm.log_dir = "/home/me/runs/quick/slurm-logs";
  const std::string script = slurm_script(job(1), slurm);
  for (const char* line : {"#SBATCH --array=0-3%2\n", "#SBATCH --gres=gpu:1\n", "#SBATCH --partition=gpu\n",
                           "#SBATCH --time=2:00:00\n", "#SBATCH --requeue\n", "#SBATCH --job-name=batchscope-quick-sweep\n",
                           "#SBATCH --output=/home/me/runs/quick/slurm-logs/%A_%a.out\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << script;
  }
  EXPECT_NE(script.find("exec /opt/batchscope/bin/batchscope sweep '/home/me/my configs/it'\\''s.yaml' --out "
                        "/home/me/runs/quick --shards 4 --steps 30\n"),
            std::string::npos)
      << script;
  EXPECT_EQ(slurm_script(job(0), slurm).find("--gres"), std::string::npos) << "no GPU asked for";
  // sbatch splits an #SBATCH line at blanks and ends it at '#': such a path goes in double quotes, and one
  // with a double quote is refused.
  SlurmOptions spaced = slurm;
  spaced.log_dir = "/home/me/my runs/#1/slurm-logs";
  EXPECT_NE(
      slurm_script(job(1), spaced).find("#SBATCH --output=\"/home/me/my runs/#1/slurm-logs/%A_%a.out\"\n"),
      std::string::npos)
      << slurm_script(job(1), spaced);
  spaced.log_dir = "/home/me/a\"b";
  EXPECT_THROW(slurm_script(job(1), spaced), UserError);
  ShardedJob newline = job(1);
  newline.written_by = "batchscope submit slurm 'a\nrm -rf ~'";
  EXPECT_EQ(slurm_script(newline, slurm).find("\nrm -rf"), std::string::npos) << "a newline stays in its comment";
  slurm.container = "nvcr.io/me/batchscope:1";
  EXPECT_NE(slurm_script(job(1), slurm).find("srun --ntasks=1 --container-image=nvcr.io/me/batchscope:1"), std::string::npos);
  slurm.container_runtime = "apptainer";
  EXPECT_NE(slurm_script(job(1), slurm).find("apptainer exec --nv"), std::string::npos);

  // bash reads it as a script.
  const fs::path file = fs::temp_directory_path() / ("batchscope_slurm_" + std::to_string(::getpid()) + ".sbatch");
  std::ofstream(file) << script;
  const ProgramRun run = run_program("/bin/bash", {"-n", file.string()}, "/");
  fs::remove(file);
  ASSERT_TRUE(run.started) << run.failure;
  EXPECT_EQ(run.exit_status, 0) << run.errors;
}

TEST(JobScripts, KubernetesManifestIsAConfigMapAndAnIndexedJob) {
  K8sOptions k8s;
  k8s.image = "registry.example.com/batchscope:1";
  k8s.config_file_name = "quick.yaml";
  k8s.config_text = "device: auto   \n# a comment: with 'quotes' and \"these\"\nexperiments:\n  - {name: a, model: mnist_cnn, batch: 1:4}\n";
  ShardedJob j = job(1);
  j.out_dir = "/results/batchscope-quick-sweep";
  const std::vector<YAML::Node> docs = YAML::LoadAll(k8s_manifest(j, k8s));
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(docs[0]["data"]["quick.yaml"].as<std::string>(), k8s.config_text) << "the experiment file, byte for byte";
  const YAML::Node spec = docs[1]["spec"];
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "Job");
  EXPECT_EQ(spec["completionMode"].as<std::string>(), "Indexed");
  EXPECT_EQ(spec["completions"].as<int>(), 4);
  EXPECT_EQ(spec["parallelism"].as<int>(), 2);
  EXPECT_EQ(spec["backoffLimitPerIndex"].as<int>(), 2);
  const YAML::Node pod = spec["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  const YAML::Node container = pod["containers"][0];
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"].Tag(), "!") << "a quoted string, as a quantity is";
  std::vector<std::string> command;
  for (const auto& word : container["command"]) {
    EXPECT_EQ(word.Tag(), "!") << "every word a string";
    command.push_back(word.as<std::string>());
  }
  EXPECT_EQ(command, (std::vector<std::string>{"/opt/batchscope/bin/batchscope", "sweep", "/etc/batchscope/quick.yaml",
                                               "--out", "/results/batchscope-quick-sweep", "--shards", "4", "--steps",
                                               "30"}));
  EXPECT_EQ(pod["volumes"][1]["configMap"]["name"].as<std::string>(), docs[0]["metadata"]["name"].as<std::string>());
  EXPECT_FALSE(YAML::LoadAll(k8s_manifest(job(0), k8s))[1]["spec"]["template"]["spec"]["containers"][0]["resources"]);
}

TEST(JobScripts, NamesAndShellWords) {
  EXPECT_EQ(dns_name("batchscope-VGG16_jumps.v2"), "batchscope-vgg16-jumps-v2");
  EXPECT_EQ(dns_name("16x"), "batchscope-16x");
  EXPECT_LE(dns_name(std::string(100, 'a')).size(), 52u);
  EXPECT_EQ(shell_quote("runs/a-b_c.yaml"), "runs/a-b_c.yaml");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
}

TEST(ProgramRunner, KeepsWhatAProgramWritesToStdout) {
  const ProgramRun run = run_program("/bin/sh", {"-c", "echo 1234';'cluster; echo oops >&2"}, "/", Stdout::Keep);
  ASSERT_TRUE(run.started);
  EXPECT_EQ(run.output, "1234;cluster\n");
  EXPECT_EQ(run.errors, "oops\n");
  EXPECT_EQ(run_program("/bin/sh", {"-c", "echo x"}, "/").output, "") << "discarded unless kept";
}

}  // namespace
