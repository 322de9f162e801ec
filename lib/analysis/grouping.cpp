#include "lib/analysis/grouping.h"

#include <algorithm>
#include <type_traits>

#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/device/cpu_memory.h"

namespace batchscope {
namespace {

// Identity keys that say where and with what a sweep ran, rather than what it ran.
const char* const kMachineKeys[] = {"device", "cpu", "threads", "libtorch", "cuda", "cudnn", "log"};

bool is_machine_key(const std::string& key) {
  return std::any_of(std::begin(kMachineKeys), std::end(kMachineKeys),
                     [&](const char* k) { return key == k; });
}

// The experiment settings of each experiment name, from the log's latest run record.
using ConfigByName = std::map<std::string, Json>;

ConfigByName configs_of(const RunRecord& run) {
  ConfigByName out;
  const Json* experiments = nullptr;
  if (run.config.is_object() && run.config.contains("experiments")) experiments = &run.config["experiments"];
  if (experiments == nullptr || !experiments->is_array()) return out;
  for (const Json& e : *experiments) {
    if (e.is_object() && e.contains("name") && e["name"].is_string()) out[e["name"].get<std::string>()] = e;
  }
  return out;
}

std::string text_of(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

}  // namespace

std::string loss_scaler_words(const Json& settings) {
  if (!settings.is_object()) return "";
  // A log may hold anything there: a value that is not a number counts as GradScaler's.
  LossScalerSettings s;
  const auto read = [&](const char* key, auto& into) {
    if (settings.contains(key) && settings[key].is_number())
      into = settings[key].get<std::decay_t<decltype(into)>>();
  };
  read("init_scale", s.init_scale);
  read("growth_factor", s.growth_factor);
  read("backoff_factor", s.backoff_factor);
  read("growth_interval", s.growth_interval);
  return loss_scaler_words(s);
}

namespace {

// The bytes a sweep's --memory-limit held a device to, where its run record has them.
std::optional<int64_t> memory_limit_of(const std::string& device, const Json& env) {
  if (!env.contains("memory_limit_bytes") || !env["memory_limit_bytes"].is_object()) return std::nullopt;
  const Json& limits = env["memory_limit_bytes"];
  if (!limits.contains(device) || !limits[device].is_number_integer() || limits[device].get<int64_t>() <= 0)
    return std::nullopt;
  return limits[device].get<int64_t>();
}

Json identity_of(const BatchKey& r, const Json* config, const Json& environment, const std::string& log,
                 bool separate) {
  Json id;
  id["model"] = r.model;
  id["phase"] = r.phase;
  id["precision"] = r.precision;
  if (config != nullptr) {
    for (const char* key :
         {"input", "classes", "data", "transfer", "chunk", "channels_last", "cudnn_benchmark"}) {
      if (config->contains(key)) id[key] = (*config)[key];
    }
    if (id["phase"] == "train" && config->contains("optimizer")) id["optimizer"] = (*config)["optimizer"];
    // Written only where the loss was scaled: the steps of a group without it ran unscaled.
    if (config->contains("loss_scale")) id["loss_scale"] = (*config)["loss_scale"];
    // The scaler's settings only where they are not GradScaler's, so that a sweep resumed from a record
    // written before they were recorded is the same group.
    if (config->contains("loss_scale") && config->contains("loss_scaler") &&
        !loss_scaler_words((*config)["loss_scaler"]).empty())
      id["loss_scaler"] = (*config)["loss_scaler"];
  }
  const std::string& device = r.device;
  const Json env = environment.is_object() ? environment : Json::object();
  if (device.rfind("cuda", 0) == 0) {
    std::string name = device;
    if (const Json* g = gpu_entry(device, env);
        g != nullptr && g->contains("name") && (*g)["name"].is_string())
      name = (*g)["name"].get<std::string>();
    id["device"] = name;
    id["libtorch"] = env.value("libtorch_version", "");
    id["cuda"] = env.value("cuda_runtime_version", "");
    id["cudnn"] = env.value("cudnn_version", "");
    // The record has it only where an experiment set it; the others ran with LibTorch's default. It means
    // nothing on a CPU.
    id["tf32"] = config != nullptr && config->contains("tf32") ? (*config)["tf32"] : Json("default");
    // cuDNN's workspace cap rules out the algorithms that need more: steps under one are not those without.
    const Json* library =
        env.contains("cuda_library_environment") && env["cuda_library_environment"].is_object()
            ? &env["cuda_library_environment"]
            : nullptr;
    if (library != nullptr && library->contains("CUDNN_CONV_WSCAP_DBG") &&
        (*library)["CUDNN_CONV_WSCAP_DBG"].is_string())
      id["cudnn_workspace_cap"] = (*library)["CUDNN_CONV_WSCAP_DBG"].get<std::string>() + " MiB";
  } else {
    id["device"] = device.empty() ? "unknown" : device;
    if (env.contains("cpu") && env["cpu"].is_object()) {
      id["cpu"] = env["cpu"].value("model", "");
      id["threads"] = env["cpu"].value("torch_threads", 0);
    }
    id["libtorch"] = env.value("libtorch_version", "");
  }
  // A memory limit (--memory-limit) decides which sizes fit whole: a sweep under one is not one without.
  if (const std::optional<int64_t> limit = memory_limit_of(device, env))
    id["memory_limit"] = format_memory_size(*limit);
  if (separate) {
    id["log"] = log;
    id["experiment"] = r.experiment;
  }
  return id;
}

// The memory the batches on a device had: the sweep's --memory-limit on it where one was set, else a
// GPU's own, where the run record lists them.
std::optional<MemoryCapacity> memory_capacity_of(const std::string& device, const Json& environment) {
  if (const std::optional<int64_t> limit = memory_limit_of(device, environment))
    return MemoryCapacity{*limit, "the sweep's --memory-limit"};
  const Json* g = gpu_entry(device, environment);
  if (g == nullptr || !g->contains("total_memory_bytes") || !(*g)["total_memory_bytes"].is_number_integer())
    return std::nullopt;
  const int64_t bytes = (*g)["total_memory_bytes"].get<int64_t>();
  if (bytes <= 0) return std::nullopt;
  const std::string name =
      g->contains("name") && (*g)["name"].is_string() ? (*g)["name"].get<std::string>() : device;
  return MemoryCapacity{bytes, name + "'s memory"};
}

// The multiprocessors of the GPU a cuda device names, where the run record lists it.
std::optional<int64_t> sm_count_of(const std::string& device, const Json& environment) {
  const Json* g = gpu_entry(device, environment);
  if (g == nullptr || !g->contains("sm_count") || !(*g)["sm_count"].is_number_integer()) return std::nullopt;
  // A count no GPU has (a damaged record) predicts nothing: no waves can be counted on it.
  const int64_t sms = (*g)["sm_count"].get<int64_t>();
  if (sms < 1 || sms > 1000000) return std::nullopt;
  return sms;
}

Json workload_of(const Json& identity) {
  Json w;
  for (const char* key : {"model", "phase", "input", "classes", "data"}) {
    if (identity.contains(key)) w[key] = identity[key];
  }
  return w;
}

Json without_machine(const Json& identity) {
  Json out;
  for (auto it = identity.begin(); it != identity.end(); ++it) {
    if (!is_machine_key(it.key())) out[it.key()] = it.value();
  }
  return out;
}

std::string machine_difference(const Json& a, const Json& b) {
  for (const char* key : kMachineKeys) {
    const Json va = a.contains(key) ? a[key] : Json();
    const Json vb = b.contains(key) ? b[key] : Json();
    if (va != vb) {
      auto show = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
      return std::string(key) + " " + show(va) + " vs " + show(vb);
    }
  }
  return "machine";
}

// Adds one per-batch record to its group: an out-of-memory or skipped size, a step time, or the point.
// Throws UserError where two logs measured the same batch size of the same group.
void add_to_group(RawGroup& g, const SweepRecord& r, const BatchKey& key, const Json& id,
                  const std::string& path, const std::string& sweep, int line) {
  const int64_t batch = key.batch_size;
  if (std::holds_alternative<OomRecord>(r)) {
    g.oom.insert(batch);
    return;
  }
  if (std::holds_alternative<SkippedRecord>(r)) {
    g.skipped.insert(batch);
    return;
  }
  auto [point, new_point] = g.points.emplace(batch, RawPoint{});
  if (new_point) {
    point->second.batch_size = batch;
    point->second.sweep = sweep;
  }
  const auto [log, new_log] = point->second.logs.emplace(key.experiment, path);
  if (!new_log && log->second != path) {
    throw UserError(located(path, line,
                            "batch size " + std::to_string(batch) + " of " + describe_identity(id) +
                                " (experiment " + key.experiment + ") was already measured in " + log->second,
                            "a sweep split across logs covers each batch size once: pass only one of the "
                            "two, or add --separate to compare them instead of merging"));
  }
  if (new_log && point->second.sweep != sweep) {
    // Another experiment of the same settings, in another sweep's log: two sweeps, not one split.
    const auto& logs = point->second.logs;
    const auto& [other_experiment, other_log] =
        *std::find_if(logs.begin(), logs.end(), [&](const auto& e) { return e.first != key.experiment; });
    throw UserError(
        located(path, line,
                "batch size " + std::to_string(batch) + " of " + describe_identity(id) + " (experiment " +
                    key.experiment + ") was already measured in " + other_log + " (experiment " +
                    other_experiment + "), by another sweep of the same settings",
                "pass only one of the two, or add --separate to compare them instead of merging"));
  }
  const auto refuse_repeated = [&](const std::string& what, int first) {
    throw UserError(
        located(path, line,
                what + " of batch size " + std::to_string(batch) + " of experiment " + key.experiment +
                    " is in this log a second time (first at line " + std::to_string(first) +
                    "): a log joined from two sweeps, or a line copied, whose steps would be pooled",
                "give each sweep's own log (analyze merges or compares them as logs), or remove the "
                "repeated lines"));
  };
  const int64_t pass = key.pass.value_or(1);
  if (const auto* step = std::get_if<StepRecord>(&r)) {
    if (step->step) {
      const auto [at, fresh] =
          point->second.step_lines.emplace(std::make_tuple(key.experiment, pass, *step->step), line);
      if (!fresh && at->second != line) refuse_repeated("step " + std::to_string(*step->step), at->second);
    }
    point->second.times_ms.push_back(step->time_ms);
    point->second.pass_times[key.pass.value_or(1)].push_back(step->time_ms);
    if (step->host_ms) point->second.host_ms.push_back(*step->host_ms);
  } else {
    const auto [at, fresh] = point->second.point_lines.emplace(std::make_pair(key.experiment, pass), line);
    if (!fresh && at->second != line) refuse_repeated("the point record", at->second);
    std::vector<PointRecord>& passes = point->second.pass_points;
    passes.push_back(std::get<PointRecord>(r));
    point->second.point = passes.size() == 1 ? passes.front() : merge_pass_points(passes);
  }
}

// The sweep a log belongs to: the shard plan's id for a shard of a sharded sweep (its shards' logs are
// one sweep), else the log itself.
std::string sweep_of(const RunRecord& run, const std::string& path) {
  const Json* shard = run.config.is_object() && run.config.contains("shard") ? &run.config["shard"] : nullptr;
  if (shard != nullptr && shard->is_object() && shard->contains("plan_id") && (*shard)["plan_id"].is_string())
    return "plan " + (*shard)["plan_id"].get<std::string>();
  return path;
}

// Parts of one sweep run on different machines cannot be merged, and with no batch size in common
// they cannot be compared either: that mixture is refused rather than shown as two half-curves.
void refuse_parts_from_other_machines(const std::vector<RawGroup>& groups) {
  for (size_t a = 0; a < groups.size(); ++a) {
    for (size_t b = a + 1; b < groups.size(); ++b) {
      const RawGroup& ga = groups[a];
      const RawGroup& gb = groups[b];
      if (ga.experiment != gb.experiment || ga.logs == gb.logs) continue;
      if (without_machine(ga.identity) != without_machine(gb.identity)) continue;
      const bool overlap = std::any_of(ga.points.begin(), ga.points.end(),
                                       [&](const auto& p) { return gb.points.count(p.first) > 0; });
      if (overlap || ga.points.empty() || gb.points.empty()) continue;
      throw UserError(located(
          gb.logs.front(), gb.identity_line,
          "holds part of experiment \"" + gb.experiment + "\" whose other part in " + ga.logs.front() +
              " ran elsewhere, as the run records say (" + machine_difference(ga.identity, gb.identity) +
              "), and they share no batch size, so they can be neither merged nor compared",
          "run the missing batch sizes on one machine, or analyze the logs one at a time"));
    }
  }
}

}  // namespace

const Json* gpu_entry(const std::string& device, const Json& environment) {
  if (device.rfind("cuda", 0) != 0 || !environment.is_object() || !environment.contains("gpus") ||
      !environment["gpus"].is_array())
    return nullptr;
  const size_t colon = device.find(':');
  const int index = colon == std::string::npos ? 0 : std::atoi(device.c_str() + colon + 1);
  for (const Json& g : environment["gpus"]) {
    if (g.is_object() && g.contains("index") && g["index"].is_number_integer() && g["index"] == index)
      return &g;
  }
  return nullptr;
}

std::string describe_identity(const Json& id) {
  std::string out = text_of(id, "model") + " " + text_of(id, "phase") + " " + text_of(id, "precision");
  std::string device = text_of(id, "device");
  if (device == "cpu" && id.contains("cpu")) {
    device = "CPU";
    if (!text_of(id, "cpu").empty()) device += " " + text_of(id, "cpu");
    if (id.contains("threads") && id["threads"].is_number()) {
      device += ", " + counted(id["threads"].get<int>(), "thread");
    }
  }
  return out + " · " + device;
}

std::map<std::string, Json> experiment_identities(const LoadedLog& log) {
  std::map<std::string, Json> out;
  ConfigByName configs;
  Json environment;
  for (const SweepRecord& r : log.records) {
    if (const auto* run = std::get_if<RunRecord>(&r); run != nullptr && run->type == record::kRun) {
      configs = configs_of(*run);
      environment = run->environment;
      continue;
    }
    const BatchKey* key = batch_key_of(r);
    if (key == nullptr || out.count(key->experiment)) continue;
    const auto config = configs.find(key->experiment);
    out[key->experiment] = identity_of(*key, config == configs.end() ? nullptr : &config->second, environment,
                                       log.summary.path, false);
  }
  return out;
}

std::vector<RawGroup> group_records(const std::vector<LoadedLog>& logs, const GroupingOptions& options,
                                    std::vector<std::string>& warnings) {
  std::vector<RawGroup> groups;
  std::map<std::string, size_t> by_key;

  for (const LoadedLog& log : logs) {
    const std::string& path = log.summary.path;
    ConfigByName configs;
    Json environment;
    int environment_line = 0;  // the run record's line
    std::string sweep = path;  // the sweep the log belongs to (sweep_of)
    std::set<std::string> warned_experiments;
    for (size_t i = 0; i < log.records.size(); ++i) {
      const SweepRecord& r = log.records[i];
      if (const auto* run = std::get_if<RunRecord>(&r); run != nullptr && run->type == record::kRun) {
        configs = configs_of(*run);
        environment = run->environment;
        environment_line = log.lines[i];
        sweep = sweep_of(*run, path);
        continue;
      }
      const BatchKey* key = batch_key_of(r);
      if (key == nullptr) continue;
      const std::string& experiment = key->experiment;
      const auto config = configs.find(experiment);
      if (config == configs.end() && warned_experiments.insert(experiment).second) {
        warnings.push_back(located(path, log.lines[i],
                                   "experiment \"" + experiment +
                                       "\" has no run record with its settings, so it is grouped by model, "
                                       "phase, precision and device only",
                                   "keep the log's first line (the run record) when copying logs"));
      }
      const Json id = identity_of(*key, config == configs.end() ? nullptr : &config->second, environment,
                                  path, options.separate);
      auto [slot, fresh] = by_key.emplace(id.dump(), groups.size());
      if (fresh) {
        RawGroup g;
        g.experiment = experiment;
        g.identity = id;
        g.workload = workload_of(id);
        g.sm_count = sm_count_of(key->device, environment);
        g.memory_capacity = memory_capacity_of(key->device, environment);
        g.identity_line = environment_line;
        groups.push_back(std::move(g));
      }
      RawGroup& g = groups[slot->second];
      if (std::find(g.logs.begin(), g.logs.end(), path) == g.logs.end()) {
        g.logs.push_back(path);
        for (const std::string& run : log.summary.run_ids) g.run_ids.push_back(run);
      }
      add_to_group(g, r, *key, id, path, sweep, log.lines[i]);
    }
    // Profiles join the group of their batch key; one of a size the log has no group for is dropped.
    for (const ProfileRecord& profile : log.profiles) {
      const auto config = configs.find(profile.key.experiment);
      const Json id = identity_of(profile.key, config == configs.end() ? nullptr : &config->second,
                                  environment, path, options.separate);
      const auto slot = by_key.find(id.dump());
      if (slot != by_key.end()) groups[slot->second].profiles[profile.key.batch_size] = profile;
    }
  }

  // A size measured both ways (out of memory once, measured in another log) counts as measured.
  for (RawGroup& g : groups) {
    for (const auto& [batch, point] : g.points) {
      g.oom.erase(batch);
      g.skipped.erase(batch);
    }
  }

  if (!options.separate) refuse_parts_from_other_machines(groups);
  // Experiments of other names but the same settings, in one sweep, pool their steps: said, since their
  // names suggest that someone wanted them apart.
  for (const RawGroup& g : groups) {
    std::set<std::string> names;
    for (const auto& [batch, point] : g.points) {
      for (const auto& [experiment, log] : point.logs) names.insert(experiment);
    }
    if (names.size() < 2) continue;
    warnings.push_back(located(g.logs.front(), g.identity_line,
                               "experiments " + listed({names.begin(), names.end()}) +
                                   " ran with the same settings (" + describe_identity(g.identity) +
                                   "), so their step times are pooled into one group",
                               "add --separate to see each experiment apart"));
  }
  return groups;
}

}  // namespace batchscope
