#pragma once

#include <string>
#include <vector>

namespace batchscope {

// What batchscope submit hands to a cluster: one sweep shared out over N shards, each task running
// `batchscope sweep CONFIG --out OUT --shards N` with its index from the cluster (see choose_shard).
struct ShardedJob {
  std::string name;          // the job's name, as dns_name makes it
  std::string config_path;   // the experiment file, absolute
  std::string out_dir;       // the common output directory, absolute (Slurm) or in the results volume
  std::string program;       // the batchscope to run: an absolute path, or "batchscope" in an image
  std::vector<std::string> sweep_options;  // more options for every task's sweep
  int shards = 1;
  int gpus_per_task = 0;     // 0: no GPU is asked for
  int max_parallel = 0;      // 0: as many at once as the cluster runs
  std::string plan_id;       // named in a comment or a label
  std::string written_by;    // the submit command, in a comment
};

struct SlurmOptions {
  std::string workdir;  // where the tasks start (relative paths in the experiment file are from there)
  std::string partition, time_limit;  // "" leaves them to the cluster's defaults
  int cpus_per_task = 0;              // 0: the cluster's default
  std::string container;              // an image; "" runs the program on the node itself
  std::string container_runtime = "pyxis";  // pyxis (srun --container-image) or apptainer
  std::string log_dir;                // the tasks' output files, one per task
};

// An sbatch script for a job array of the shards: #SBATCH lines (array, %max parallel, gres, partition,
// time, requeue, output per task), then the exact sweep command. Any part of the array can be
// submitted again with sbatch --array=LIST: each task resumes its shard.
std::string slurm_script(const ShardedJob& job, const SlurmOptions& slurm);

struct K8sOptions {
  std::string image;
  std::string namespace_name;       // "" for the context's namespace
  std::string claim = "batchscope-results";  // the PersistentVolumeClaim the results go to
  std::string results_mount = "/results";
  std::string config_mount = "/etc/batchscope";
  std::string config_file_name;     // the experiment file's name in the ConfigMap
  std::string config_text;          // and its contents
  int backoff_limit_per_index = 2;  // retries of one shard before it counts as failed
};

// A ConfigMap holding the experiment file and an Indexed Job (completionMode: Indexed, completions =
// shards, parallelism, backoffLimitPerIndex, GPU limits, the results volume), as one YAML stream for
// kubectl apply -f.
std::string k8s_manifest(const ShardedJob& job, const K8sOptions& k8s);

// A name Kubernetes and Slurm both take: lower-case letters, digits and '-', starting with a letter,
// at most 52 characters (room for the suffixes Kubernetes adds to a Job's pods).
std::string dns_name(const std::string& text);

// The text as one shell word: in single quotes where it needs them.
std::string shell_quote(const std::string& text);

}  // namespace batchscope
