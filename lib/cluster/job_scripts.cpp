#include "lib/cluster/job_scripts.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <sstream>

#include "lib/common/errors.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

// The words of every task's sweep command after the program.
std::vector<std::string> sweep_words(const ShardedJob& job, const std::string& config, const std::string& out) {
  std::vector<std::string> words = {"sweep", config, "--out", out, "--shards", std::to_string(job.shards)};
  words.insert(words.end(), job.sweep_options.begin(), job.sweep_options.end());
  return words;
}

std::string joined_words(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) text += (text.empty() ? "" : " ") + shell_quote(w);
  return text;
}

// Text that a YAML literal block keeps exactly; other text is written double-quoted.
bool literal_safe(const std::string& text) {
  if (text.empty() || text.front() == ' ' || text.front() == '\n') return false;
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return false;
  }
  return text.find(" \n") == std::string::npos;
}

void labels(YAML::Emitter& y, const ShardedJob& job) {
  y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "app.kubernetes.io/name" << YAML::Value << "batchscope";
  y << YAML::Key << "batchscope/job" << YAML::Value << job.name;
  if (!job.plan_id.empty()) y << YAML::Key << "batchscope/plan" << YAML::Value << YAML::DoubleQuoted << job.plan_id;
  y << YAML::EndMap;
}

void metadata(YAML::Emitter& y, const std::string& name, const ShardedJob& job, const K8sOptions& k8s) {
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << name;
  if (!k8s.namespace_name.empty()) y << YAML::Key << "namespace" << YAML::Value << k8s.namespace_name;
  labels(y, job);
  y << YAML::EndMap;
}

void container(YAML::Emitter& y, const ShardedJob& job, const K8sOptions& k8s) {
  const std::string config = k8s.config_mount + "/" + k8s.config_file_name;
  std::vector<std::string> command = {job.program};
  for (const std::string& w : sweep_words(job, config, job.out_dir)) command.push_back(w);
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << "batchscope";
  y << YAML::Key << "image" << YAML::Value << k8s.image;
  y << YAML::Key << "command" << YAML::Value << YAML::BeginSeq;
  for (const std::string& w : command) y << YAML::DoubleQuoted << w;
  y << YAML::EndSeq;
  if (job.gpus_per_task > 0) {
    y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "nvidia.com/gpu" << YAML::Value << YAML::DoubleQuoted << std::to_string(job.gpus_per_task);
    y << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "results" << YAML::Key << "mountPath" << YAML::Value
    << k8s.results_mount << YAML::EndMap;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "config" << YAML::Key << "mountPath" << YAML::Value
    << k8s.config_mount << YAML::Key << "readOnly" << YAML::Value << true << YAML::EndMap;
  y << YAML::EndSeq;
  y << YAML::EndMap;
}

}  // namespace

std::string shell_quote(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=,%@+") ==
                           std::string::npos)
    return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string dns_name(const std::string& text) {
  std::string name;
  for (char c : text) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
    if (keep) {
      name += lower;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  if (name.empty() || !(name.front() >= 'a' && name.front() <= 'z')) name = "batchscope-" + name;
  if (name.size() > 52) name.resize(52);
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name;
}

namespace {

// A value of an #SBATCH line. sbatch splits those lines at blanks and ends them at a '#' outside double
// quotes, so a value with either goes in double quotes; one with a double quote or a line break cannot be
// written there at all.
std::string sbatch_value(const std::string& text) {
  if (text.find_first_of("\"\n\r") != std::string::npos) {
    throw UserError(located("command line", 0,
                            "--out " + printable(text) +
                                " holds a double quote or a line break, which an #SBATCH "
                                "line of the Slurm script cannot take",
                            "choose an output directory without one"));
  }
  if (text.find_first_of(" \t#'\\") == std::string::npos) return text;
  return "\"" + text + "\"";
}

}  // namespace

std::string slurm_script(const ShardedJob& job, const SlurmOptions& slurm) {
  std::ostringstream s;
  // The comments quote the user's words: a newline in them must not start a line of the script.
  const std::string config = printable(job.config_path), out = printable(job.out_dir);
  const std::string array = "0-" + std::to_string(job.shards - 1) +
                            (job.max_parallel > 0 ? "%" + std::to_string(job.max_parallel) : "");
  s << "#!/bin/bash\n"
    << "# batchscope: " << job.shards << " shards of " << config << " as a Slurm job array (plan " << job.plan_id
    << ").\n"
    << "# Task I runs shard I and writes " << out << "/shard-000I-of-...; a task that is cancelled,\n"
    << "# preempted or fails resumes its shard when it runs again: sbatch --array=I " << out << "/slurm.sbatch\n"
    << "# Follow it with: batchscope status " << out << "; then: batchscope analyze " << out << "\n"
    << "# Written by: " << printable(job.written_by) << "\n"
    << "#SBATCH --job-name=" << job.name << "\n"
    << "#SBATCH --array=" << array << "\n"
    << "#SBATCH --ntasks=1\n";
  if (slurm.cpus_per_task > 0) s << "#SBATCH --cpus-per-task=" << slurm.cpus_per_task << "\n";
  if (job.gpus_per_task > 0) s << "#SBATCH --gres=gpu:" << job.gpus_per_task << "\n";
  if (!slurm.partition.empty()) s << "#SBATCH --partition=" << slurm.partition << "\n";
  if (!slurm.time_limit.empty()) s << "#SBATCH --time=" << slurm.time_limit << "\n";
  s << "#SBATCH --output=" << sbatch_value(slurm.log_dir + "/%A_%a.out") << "\n"
    << "#SBATCH --open-mode=append\n"
    << "#SBATCH --requeue\n"
    << "set -euo pipefail\n"
    << "cd " << shell_quote(slurm.workdir) << "\n"
    << "echo \"batchscope: task ${SLURM_ARRAY_TASK_ID} of job ${SLURM_ARRAY_JOB_ID} on $(hostname) at $(date "
       "-u +%FT%TZ)\"\n";
  const std::string sweep = joined_words(sweep_words(job, job.config_path, job.out_dir));
  if (slurm.container.empty()) {
    s << "exec " << shell_quote(job.program) << " " << sweep << "\n";
  } else {
    // The container sees the results, the experiment file and the working directory at the same paths.
    const std::string config_dir = fs::path(job.config_path).parent_path().string();
    std::string binds = job.out_dir + "," + slurm.workdir;
    if (config_dir != slurm.workdir) binds += "," + config_dir;
    if (slurm.container_runtime == "apptainer") {
      s << "exec apptainer exec" << (job.gpus_per_task > 0 ? " --nv" : "") << " --bind " << shell_quote(binds)
        << " --pwd " << shell_quote(slurm.workdir) << " " << shell_quote(slurm.container) << " "
        << shell_quote(job.program) << " " << sweep << "\n";
    } else {
      std::string mounts;
      std::istringstream parts(binds);
      for (std::string part; std::getline(parts, part, ',');) mounts += (mounts.empty() ? "" : ",") + part + ":" + part;
      s << "exec srun --ntasks=1 --container-image=" << shell_quote(slurm.container)
        << " --container-mounts=" << shell_quote(mounts) << " --container-workdir=" << shell_quote(slurm.workdir)
        << " " << shell_quote(job.program) << " " << sweep << "\n";
    }
  }
  return s.str();
}

std::string k8s_manifest(const ShardedJob& job, const K8sOptions& k8s) {
  const std::string config_map = job.name + "-config";
  YAML::Emitter y;
  y << YAML::Comment("batchscope: " + std::to_string(job.shards) + " shards of " + printable(k8s.config_file_name) +
                     " as a Kubernetes Indexed Job (plan " + job.plan_id + "); apply with kubectl apply -f");
  y << YAML::Newline << YAML::Comment("Written by: " + printable(job.written_by));
  y << YAML::BeginDoc << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "v1";
  y << YAML::Key << "kind" << YAML::Value << "ConfigMap";
  metadata(y, config_map, job, k8s);
  y << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << k8s.config_file_name << YAML::Value;
  if (literal_safe(k8s.config_text)) {
    y << YAML::Literal << k8s.config_text;
  } else {
    y << YAML::DoubleQuoted << k8s.config_text;
  }
  y << YAML::EndMap << YAML::EndMap;

  y << YAML::BeginDoc << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "batch/v1";
  y << YAML::Key << "kind" << YAML::Value << "Job";
  metadata(y, job.name, job, k8s);
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "completionMode" << YAML::Value << "Indexed";
  y << YAML::Key << "completions" << YAML::Value << job.shards;
  y << YAML::Key << "parallelism" << YAML::Value << (job.max_parallel > 0 ? job.max_parallel : job.shards);
  y << YAML::Key << "backoffLimitPerIndex" << YAML::Value << k8s.backoff_limit_per_index;
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  labels(y, job);
  y << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "restartPolicy" << YAML::Value << "Never";
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq;
  container(y, job, k8s);
  y << YAML::EndSeq;
  y << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "results" << YAML::Key << "persistentVolumeClaim"
    << YAML::Value << YAML::BeginMap << YAML::Key << "claimName" << YAML::Value << k8s.claim << YAML::EndMap
    << YAML::EndMap;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "config" << YAML::Key << "configMap" << YAML::Value
    << YAML::BeginMap << YAML::Key << "name" << YAML::Value << config_map << YAML::EndMap << YAML::EndMap;
  y << YAML::EndSeq;
  y << YAML::EndMap;  // pod spec
  y << YAML::EndMap;  // template
  y << YAML::EndMap;  // job spec
  y << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

}  // namespace batchscope
