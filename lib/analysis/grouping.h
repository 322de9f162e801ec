#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "lib/analysis/log_reader.h"
#include "lib/analysis/memory_fit.h"

namespace batchscope {

// Every measurement of one batch size of one group, as read from the logs.
struct RawPoint {
  int64_t batch_size = 0;
  std::vector<double> times_ms;                       // from the step records
  std::map<int64_t, std::vector<double>> pass_times;  // the same by pass (repeats: R; 1 without)
  std::vector<double> host_ms;                        // the steps' that have one
  // The point record of each pass (one without repeats), and the one record of them all: the last
  // alone, or with repeats their merge (merge_pass_points: peaks, skipped steps and energy of every pass).
  std::vector<PointRecord> pass_points;
  std::optional<PointRecord> point;
  // The log each experiment measured it in: two experiments of the same settings pool their steps, in one
  // log or in the shards of one sweep; one experiment measured in two logs is two sweeps, and so are two
  // experiments measured in logs of two sweeps.
  std::map<std::string, std::string> logs;
  std::string sweep;  // the sweep it was first measured in: its shard plan's id, or its log's path
  // Where each experiment's point record (by pass) and numbered step record (by pass and step) were read:
  // one read twice is a log joined from two (cat a b), whose steps would pool unseen.
  std::map<std::pair<std::string, int64_t>, int> point_lines;
  std::map<std::tuple<std::string, int64_t, int64_t>, int> step_lines;
};

// The records of one group, before any statistics.
struct RawGroup {
  std::string experiment;  // experiment name where it was first seen
  // What makes the measurements comparable: the experiment's settings that affect a step, the device
  // (GPU name, or CPU model and threads) and the software versions. Groups differ in at least one.
  Json identity;
  Json workload;  // model, phase, input, classes, data: what comparisons must share
  std::vector<std::string> logs;
  std::vector<std::string> run_ids;
  std::map<int64_t, RawPoint> points;
  std::set<int64_t> oom;
  std::set<int64_t> skipped;
  std::map<int64_t, ProfileRecord> profiles;  // the last profile of each batch size, where profiled
  std::optional<int64_t> sm_count;            // the GPU's multiprocessors, from the run record
  std::optional<MemoryCapacity> memory_capacity;  // its --memory-limit or GPU memory, from the run record
  int identity_line = 0;  // the line of the run record in logs.front() that the identity is read from
};

struct GroupingOptions {
  // Keep every log a group of its own instead of merging logs of the same experiment and machine.
  bool separate = false;
};

// Sorts the records of all logs into groups, merging parts of one sweep split across logs. Malformed
// records become warnings. Throws UserError for logs that cannot be put together: one batch size
// measured twice, or parts of one sweep measured on different machines or software.
std::vector<RawGroup> group_records(const std::vector<LoadedLog>& logs, const GroupingOptions& options,
                                    std::vector<std::string>& warnings);

// The entry of a run record's (or a peak record's) gpus[] for a cuda device ("cuda", "cuda:N"); nullptr
// for another device or where the record does not list it.
const Json* gpu_entry(const std::string& device, const Json& environment);

// "init_scale 1024, growth_interval 100": a run record's loss scaler settings (its config's loss_scaler)
// that depart from GradScaler's defaults, which every record without them ran with; empty where none does.
std::string loss_scaler_words(const Json& settings);

// "vgg16 train fp32 · NVIDIA H100" and the like, from an identity.
std::string describe_identity(const Json& identity);

// Each experiment's identity in a log (what makes its step times comparable: its settings that change a
// step, the device by name, the library versions), from its first batch record and the run record before
// it; keyed by experiment name.
std::map<std::string, Json> experiment_identities(const LoadedLog& log);

}  // namespace batchscope
