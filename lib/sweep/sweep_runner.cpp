#include "lib/sweep/sweep_runner.h"

#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <map>
#include <random>
#include <set>

#include "lib/common/limits.h"
#include "lib/common/replaced_results.h"
#include "lib/common/statistics.h"
#include "lib/common/words.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/records/jsonl.h"
#include "lib/records/run_store.h"
#include "lib/sweep/max_batch.h"
#include "lib/sweep/progress.h"
#include "lib/sweep/sweep_power.h"
#include "lib/sweep/time_spent.h"
#include "lib/timing/measure_batch.h"
#include "lib/timing/profiled_steps.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"

namespace batchscope {
namespace {

RunRecord run_header(const SweepConfig& config, const SweepOptions& options, const Json& experiments,
                     bool resumed, PowerByDevice& power) {
  Json recorded = {{"source", config.source}, {"experiments", experiments}};
  if (!options.shard_plan.is_null()) recorded["shard"] = options.shard_plan;
  RunRecord header = run_record(resumed ? record::kResume : record::kRun, options.command_line, recorded);
  // What fits, and so which sizes run out of memory or in micro-batches, depends on it.
  if (!options.memory_limits.is_null()) header.environment["memory_limit_bytes"] = options.memory_limits;
  header.timers = Json::object();
  for (const ExperimentConfig& e : config.experiments) {
    if (header.timers.contains(e.device)) continue;
    auto timer = make_step_timer(torch::Device(e.device));
    header.timers[e.device] = {{"method", timer->method()}, {"overhead_ms", measure_timer_overhead_ms(*timer)}};
  }
  header.power = power_context(power);
  header.energy_note =
      "Energy is read once over the timed steps of a batch size together (lengthened by more steps to "
      "min_window_ms where they are shorter), because power counters tick every few milliseconds; "
      "j_per_step is that energy divided by energy_steps. *_above_idle fields subtract the idle "
      "baseline measured before the sweep.";
  return header;
}

// The records of one measured batch size: its steps, then its point.
std::vector<SweepRecord> measured_records(const BatchKey& key, const BatchMeasurement& m, double flops_per_step) {
  std::vector<SweepRecord> records;
  const TimedSteps& steps = m.steps;
  for (std::size_t i = 0; i < steps.times_ms.size(); ++i) {
    StepRecord step{key, static_cast<int64_t>(i), steps.times_ms[i], std::nullopt, m.peak_memory_bytes};
    if (!steps.losses.empty()) step.loss = steps.losses[i];
    if (i < steps.host_ms.size()) step.host_ms = steps.host_ms[i];
    records.push_back(std::move(step));
  }
  PointRecord point = point_record(key, steps.times_ms, flops_per_step, m.peak_memory_bytes);
  point.energy = m.energy;
  if (!steps.host_ms.empty()) point.host_median_ms = median(steps.host_ms);
  if (!m.steps_stopped_by.empty()) point.steps_stopped_by = m.steps_stopped_by;
  point.skipped_steps = steps.skipped_steps;
  point.loss_scale = steps.loss_scale;
  records.push_back(std::move(point));
  return records;
}

// Why LibTorch cannot run the experiment on its device, warned once at the line of its precision.
std::string warn_unsupported(const ExperimentConfig& e, const std::string& missing) {
  const std::string reason = "LibTorch " + std::string(TORCH_VERSION) + " cannot run " + e.model + " " +
                             to_string(e.phase) + " in " + to_string(e.precision) + " on " + e.device + ": " + missing;
  spdlog::warn("{}", located_value(e, "precision", "experiment " + e.name + ": " + reason + "; its batch sizes are skipped",
                                   "use another precision or device for it"));
  return reason;
}

// chunk: auto at a batch size that ran out of memory whole: the largest micro-batch (inference: slice)
// that runs the whole batch, found on the workload itself with the batch on the device: maxbatch's search
// (one step a try, three in a row to confirm), to within 8 samples from a batch of 64 on, from half the
// batch, or from the largest that fitted beside a smaller batch, since no larger one fits beside a larger
// batch. Each try is a log line. nullopt, with the allocator's error, where not one sample a micro-batch
// fits.
std::optional<PointChunk> search_chunk(Workload& workload, const ExperimentConfig& e, int64_t batch_size,
                                       const std::map<int64_t, PointChunk>& smaller, std::string& error) {
  const char* parts = e.phase == Phase::Train ? "micro-batches" : "slices";
  PointChunk found;
  MaxBatchOptions search;
  search.upper_bound = batch_size - 1;
  search.start = std::max<int64_t>(1, batch_size / 2);
  for (const auto& [batch, chunk] : smaller) {
    if (batch < batch_size && chunk.largest_fitting <= search.upper_bound) {
      search.start = search.upper_bound = chunk.largest_fitting;
      found.bound_from_batch = batch;
    }
  }
  search.granularity = batch_size >= 64 ? 8 : 1;
  search.smallest = smallest_chunk(e, batch_size);  // no micro-batch that batch norm cannot train
  spdlog::info("{}: searching for the largest {} that run batch size {} on {} (chunk: auto){}", e.name, parts,
               batch_size, e.device,
               found.bound_from_batch
                   ? ", from " + std::to_string(search.start) + ", the largest beside batch size " +
                         std::to_string(*found.bound_from_batch)
                   : std::string());
  const MaxBatchResult result = find_max_batch(
      [&](int64_t chunk, int steps) {
        workload.set_chunk(chunk);
        return probe_workload(workload, batch_size, steps);
      },
      search,
      [&](const MaxBatchTry& t) {
        spdlog::info("{}: batch size {} in {} of {}: {} ({}, {:.2f} s)", e.name, batch_size, parts,
                     t.batch_size, t.fits ? "fits" : "out of memory", counted(t.steps, "step"), t.seconds);
      });
  workload.set_chunk(e.chunk);
  if (!result.max_batch) {
    error = result.error;
    return std::nullopt;
  }
  found.largest_fitting = *result.max_batch;
  found.chunk = even_chunk(batch_size, found.largest_fitting);
  found.tries = static_cast<int>(result.tries.size());
  for (const MaxBatchTry& t : result.tries) found.seconds += t.seconds;
  const int64_t count = (batch_size + found.chunk - 1) / found.chunk;
  spdlog::info("{}: batch size {} runs as {} {} of at most {} (the largest that fits is {}; {}, {:.1f} s)",
               e.name, batch_size, count, parts, found.chunk, found.largest_fitting,
               counted(found.tries, "try", "tries"), found.seconds);
  return found;
}

// Everything one sweep session shares between its experiments.
struct Session {
  const SweepOptions& options;
  RunStore& store;
  PowerByDevice& power;
  Progress& progress;
  const LoadedData& loaded;
  TimeSpent& spent;

  bool stop_requested() const { return options.stop_requested != nullptr && options.stop_requested->load(); }
};

// Runs the batch sizes of one experiment that are not done yet, pass after pass. Out of memory at a size
// skips the larger ones (in the later passes too); an operation LibTorch lacks skips them all. Returns
// false when stopped on request.
bool run_experiment(Session& s, const ExperimentConfig& e, int index, int count) {
  const torch::Device device(e.device);
  at::globalContext().setBenchmarkCuDNN(e.cudnn_benchmark);
  set_tf32(e.tf32 == Tf32::Default ? std::nullopt : std::optional<bool>(e.tf32 == Tf32::On));
  std::optional<int64_t> oom_at = s.store.out_of_memory_at(e.name);
  // chunk: auto: the micro-batches of the sizes that did not fit whole, by batch size (earlier sessions'
  // included), which bound the search at larger ones.
  std::map<int64_t, PointChunk> chunks = s.store.chunks(e.name);
  std::optional<std::string> unsupported;  // LibTorch's reason, once a step met an operation it lacks
  std::unique_ptr<Workload> workload;
  std::unique_ptr<StepTimer> timer = make_step_timer(device);

  for (int pass = 1; pass <= e.repeats; ++pass) {
    for (int64_t batch_size : batch_order(e, pass)) {
      if (s.store.done(e.name, batch_size, pass)) continue;
      if (s.stop_requested()) return false;
      const int steps = e.warmup_steps + e.timed_steps;
      BatchKey key = batch_key(e, e.device, batch_size);
      if (e.repeats > 1) key.pass = pass;
      // A size that is not run is recorded as skipped, with why.
      const auto skip = [&](const std::string& reason) {
        s.spent.measure("writing", [&] { s.store.write({SkippedRecord{key, reason}}); });
        s.progress.end_size(e.name, batch_size, steps, /*measured=*/false);
      };
      if (oom_at && batch_size > *oom_at) {
        skip("batch size " + std::to_string(*oom_at) + " ran out of memory");
        continue;
      }
      if (unsupported) {
        skip(*unsupported);
        continue;
      }
      std::vector<SweepRecord> records;
      int steps_run = steps;  // with steps: auto, what the size took
      // chunk: auto: this size's micro-batches where an earlier pass chose them; else whether it runs out
      // of memory whole is known from a smaller size that did.
      std::optional<PointChunk> chunk;
      if (const auto earlier = chunks.find(batch_size); earlier != chunks.end()) {
        chunk = earlier->second;
        chunk->tries = 0;
        chunk->seconds = 0;
        chunk->bound_from_batch.reset();
      }
      bool whole_fails = chunk || (e.chunk_auto && !chunks.empty() && chunks.begin()->first < batch_size);
      while (true) {
        try {
          if (!workload) {
            const auto found = s.loaded.find(e.data);
            s.spent.measure("model_building", [&] {
              workload = std::make_unique<Workload>(
                  e, device, found == s.loaded.end() ? nullptr : &found->second->train);
            });
          }
          if (whole_fails && !chunk) {
            std::string error;
            chunk = s.spent.measure("chunk_search",
                                    [&] { return search_chunk(*workload, e, batch_size, chunks, error); });
            if (!chunk) {
              // Not one sample a micro-batch runs the batch: out of memory as it stands.
              workload.reset();
              if (device.is_cuda()) gpu::empty_cache();
              oom_at = batch_size;
              const int64_t least = smallest_chunk(e, batch_size);
              const std::string parts = std::string(e.phase == Phase::Train ? "micro-batches" : "slices") +
                                        " of " +
                                        (least == 1 ? "one sample" : std::to_string(least) + " samples");
              spdlog::warn("{}: batch size {} does not fit on {} even in {}; larger sizes are skipped",
                           e.name, batch_size, e.device, parts);
              records = {OomRecord{
                  key, "not even " + parts + " fit (chunk: auto)" + (error.empty() ? "" : ": " + error)}};
              break;
            }
          }
          workload->set_chunk(chunk ? chunk->chunk : e.chunk);
          s.progress.begin_size(e.name, index + 1, count, batch_size, e.warmup_steps, e.timed_steps);
          const BatchMeasurement m =
              measure_batch(*workload, *timer, e, batch_size, s.power.at(e.device), &s.progress.observer());
          s.spent.add("data_preparation", m.prepare_s);
          s.spent.add("warm_up", m.warm_up_s);
          s.spent.add("timed_steps", m.timed_s);
          s.spent.add("energy_windows", m.energy_s);
          if (e.profile && pass == 1) {
            // After the timed steps, never among them; in the first pass only.
            const std::string trace = s.options.trace ? s.store.trace_path(e.name, batch_size) : "";
            s.spent.measure("profiling", [&] {
              try {
                s.store.write_profile(profile_steps(*workload, key, e.profile_steps, trace));
              } catch (const std::exception& error) {
                // The profiler's own memory on top of a batch that fits: the timed steps stand, the
                // size goes unprofiled, and larger sizes are still measured.
                if (!is_out_of_memory(error)) throw;
                workload->release_batch();
                if (device.is_cuda()) gpu::empty_cache();
                spdlog::warn(
                    "{}: batch size {} was measured, but its profiled steps ran out of memory; it has "
                    "no profile",
                    e.name, batch_size);
              }
            });
          }
          workload->release_batch();
          records = measured_records(key, m, workload->flops_per_step(batch_size));
          std::get<PointRecord>(records.back()).chunk = chunk;
          if (chunk) chunks.emplace(batch_size, *chunk);
          steps_run = e.warmup_steps + static_cast<int>(m.steps.times_ms.size());
          break;
        } catch (const std::exception& error) {
          if (const auto missing = unsupported_operation(error)) {
            // Not this size's fault: LibTorch cannot run the experiment here at all. Its sizes are
            // recorded as skipped with the reason, and the sweep goes on with the next experiment.
            workload.reset();
            s.progress.finish();
            unsupported = warn_unsupported(e, *missing);
            break;
          }
          if (!is_out_of_memory(error)) throw;
          // Drop everything the failed step held, model and optimizer state included; a later smaller
          // size (shuffled order) builds them afresh.
          workload.reset();
          if (device.is_cuda()) gpu::empty_cache();
          s.progress.finish();
          if (e.chunk_auto && !whole_fails && batch_size > 1) {
            spdlog::info("{}: batch size {} does not fit whole on {}", e.name, batch_size, e.device);
            whole_fails = true;
            continue;  // in the largest micro-batches that fit
          }
          oom_at = batch_size;
          spdlog::warn("{}: batch size {} does not fit on {}; larger sizes are skipped", e.name, batch_size,
                       e.device);
          const std::string message = error.what();
          records = {OomRecord{key, message.substr(0, message.find('\n'))}};
          break;
        }
      }
      if (records.empty()) {  // LibTorch lacks an operation of it
        skip(*unsupported);
        continue;
      }
      s.spent.measure("writing", [&] { s.store.write(records); });
      s.progress.end_size(e.name, batch_size, steps_run,
                          /*measured=*/!std::holds_alternative<OomRecord>(records.front()));
    }
  }
  return true;
}

// Experiments whose timed steps are fewer than analyze needs to use a batch size: said as the sweep
// starts (once its directory is taken), before they run.
void warn_of_too_few_steps(const SweepConfig& config) {
  for (const ExperimentConfig& e : config.experiments) {
    if (e.warmup_steps == 0) {
      spdlog::warn(
          "experiment {}: no warm-up step, so each batch size's first timed step pays for what a "
          "shape's first step costs (allocations, the optimizer's state, cuDNN's choice of algorithm), "
          "in its spread and mean; give --warmup 1 or more",
          e.name);
    }
    if (e.timed_steps >= limits::kMinAnalyzedSteps) continue;
    spdlog::warn("experiment {}: {} timed step(s) per batch size, fewer than the {} analyze needs to use a batch "
                 "size (its jumps, its best size); give --steps {} or more, or analyze with --min-samples {}",
                 e.name, e.timed_steps, limits::kMinAnalyzedSteps, limits::kMinAnalyzedSteps, e.timed_steps);
  }
}

// What each TorchScript file's forward is given after its input (an attention mask's ones, say), said once
// a file as the sweep starts, as its experiment record says it.
void say_filled_arguments(const SweepConfig& config) {
  std::set<std::string> said;
  for (const ExperimentConfig& e : config.experiments) {
    if (!e.model_file || e.model_file->arguments.empty() || !said.insert(e.model).second) continue;
    std::string given;
    for (const models::FilledArgument& a : e.model_file->arguments)
      given += (given.empty() ? "" : ", ") + a.name + ": " + a.given;
    spdlog::info("{}: after its input the forward is given {}", e.model, given);
  }
}

}  // namespace

std::vector<int64_t> batch_order(const ExperimentConfig& e, int pass) {
  std::vector<int64_t> order = e.batch_sizes;
  if (e.order == BatchOrder::Shuffled || e.repeats > 1) {
    // Fisher-Yates with the standard engine: the same seed gives the same order on every platform. Each
    // pass of a repeated ladder has an order of its own, the first pass that of a single one.
    std::mt19937_64 rng(e.seed + static_cast<uint64_t>(pass - 1) * 0x9E3779B97F4A7C15ULL);
    for (std::size_t i = order.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(rng() % i);
      std::swap(order[i - 1], order[j]);
    }
  }
  return order;
}

std::optional<std::string> set_aside_replaced_sweep(const std::string& out_dir) {
  const OutputDirectoryLock lock(out_dir);
  return set_aside_replaced(
      out_dir,
      [](const std::string& name) {
        for (const char* ours : {"steps.jsonl", "steps.jsonl.gz", "steps.csv", "profile.jsonl",
                                 "profile.jsonl.gz", "traces", "maxbatch", "analysis"}) {
          if (name == ours) return true;
        }
        return false;
      },
      [](const std::string& dir) {
        return log_ends_with((std::filesystem::path(dir) / "steps.jsonl").string(), record::kEnd);
      });
}

SweepOutcome run_sweep(const SweepConfig& config, const SweepOptions& options, std::ostream& progress_stream) {
  TimeSpent spent;
  const LoadedData loaded = spent.measure("data_preparation", [&] { return load_data(config); });
  Json experiments = Json::array();
  for (const ExperimentConfig& e : config.experiments) experiments.push_back(Json(to_json(e)));
  RunStore store = spent.measure("writing", [&] {
    return RunStore(options.out_dir, experiments, options.force, options.memory_limits);
  });
  if (store.resuming()) spdlog::info("resuming the interrupted sweep in {}", options.out_dir);
  if (store.cut_steps() > 0) {
    spdlog::warn(
        "{}: the last batch size's {} step record(s) were cut off before its point record; "
        "they are removed, and that size runs again",
        store.jsonl_path(), store.cut_steps());
  }
  warn_of_too_few_steps(config);
  say_filled_arguments(config);
  PowerByDevice power = spent.measure("idle_baseline", [&] { return open_power(config, options); });
  const RunRecord header = run_header(config, options, experiments, store.resuming(), power);
  spent.measure("writing", [&] { store.write({header}); });

  Progress progress(progress_stream, options.show_progress);
  std::vector<ProgressUnit> units;
  for (const ExperimentConfig& e : config.experiments) {
    for (int64_t b : e.batch_sizes) {
      int steps = 0;
      for (int pass = 1; pass <= e.repeats; ++pass) {
        if (!store.done(e.name, b, pass)) steps += e.warmup_steps + e.timed_steps;
      }
      if (steps > 0) units.push_back({e.name, b, steps});
    }
  }
  progress.begin_sweep(std::move(units));

  Session session{options, store, power, progress, loaded, spent};
  bool stopped = false;  // only where batch sizes were left undone
  const int count = static_cast<int>(config.experiments.size());
  for (int index = 0; index < count && !stopped; ++index) {
    stopped = !run_experiment(session, config.experiments[static_cast<std::size_t>(index)], index, count);
  }
  SweepOutcome outcome;
  outcome.interrupted = stopped;
  progress.finish();
  outcome.time_spent = spent.so_far();
  if (!outcome.interrupted) {
    store.write({end_record(outcome.time_spent)});
    const DroppedReplaced dropped = drop_replaced(options.out_dir);
    if (!dropped.left.empty()) {
      spdlog::warn("the sweep this one replaced is kept in {}, which could not be removed: remove it by hand",
                   dropped.left);
    } else if (dropped.was_there) {
      spdlog::info("the sweep this one replaced, kept in {}/.replaced until now, is removed",
                   options.out_dir);
    }
  }

  outcome.jsonl_path = store.jsonl_path();
  outcome.csv_path = store.csv_path();
  outcome.resumed = store.resuming();
  outcome.records = store.read_all();
  return outcome;
}

}  // namespace batchscope
