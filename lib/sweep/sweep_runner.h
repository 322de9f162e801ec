#pragma once

#include <torch/torch.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/power/power_source.h"
#include "lib/records/records.h"
#include "lib/sweep/machine_check.h"

namespace batchscope {

struct SweepOptions {
  std::string out_dir;
  bool force = false;          // replace a complete or different run in out_dir
  bool show_progress = false;  // the status line on the progress stream
  std::string command_line;    // recorded in the run record
  // --memory-limit where given: the bytes each device may use ({"cpu": N, "cuda:0": M}), recorded in
  // the run record as memory_limit_bytes; applied by the caller (cpu_memory, gpu_memory_cap).
  Json memory_limits;
  // Set (e.g. by a signal handler) to stop after the batch size that is running; may be null.
  const std::atomic<bool>* stop_requested = nullptr;
  // With profiling: a Chrome trace of the first profiled step of each batch size, in out_dir/traces/.
  bool trace = false;
  // Energy per batch size wherever the device has a power source (NVML, RAPL).
  bool measure_energy = true;
  // The device's idle power, measured before the first experiment on it; 0 skips the baseline.
  double idle_seconds = 2;
  // The shortest energy window; a batch size whose timed steps take less runs more steps inside the
  // window (not timed). 0: 20 updates of the source's counter (as observed), at least 100 ms.
  double min_energy_window_ms = 0;
  // A shard of a plan shared out over a cluster: the whole plan with this shard's index, recorded in
  // the run record as config.shard (null for a sweep that is not sharded).
  Json shard_plan;
  // Opens a device's power source; power::open_power_source when empty (tests put a fake here).
  std::function<std::unique_ptr<power::PowerSource>(const torch::Device&, std::string& reason)> open_power;
};

struct SweepOutcome {
  std::string jsonl_path, csv_path;
  bool resumed = false;
  bool interrupted = false;   // stopped on request before the end; the same command resumes it
  std::vector<SweepRecord> records;  // every record of the run, earlier sessions included
  SweepTimeSpent time_spent;         // this session's wall time, part by part (also in the end record)
};

// Runs every experiment of a config resolved for this machine (resolve_for_machine), writing to
// options.out_dir as it goes (see RunStore).
// Out-of-memory at a batch size is recorded, memory released, and the larger sizes of that
// experiment are recorded as skipped; the sweep goes on with the next experiment.
SweepOutcome run_sweep(const SweepConfig& config, const SweepOptions& options, std::ostream& progress_stream);

// --force, before anything is measured: the sweep in out_dir (its log, steps.csv, profile, traces,
// searches for the largest batch and default analysis) moves into out_dir/.replaced, kept until the new
// sweep is complete (run_sweep removes it then). Returns where it is kept; none where nothing was there.
std::optional<std::string> set_aside_replaced_sweep(const std::string& out_dir);

// The batch sizes of an experiment in the order they run in a pass: as given, or shuffled with the seed;
// with repeats, every pass in an order of its own.
std::vector<int64_t> batch_order(const ExperimentConfig& e, int pass = 1);

}  // namespace batchscope
