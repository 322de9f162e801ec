#include "lib/sweep/batch_maximum.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "data/datasets.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/gpu_memory_cap.h"
#include "lib/records/jsonl.h"
#include "lib/records/records.h"
#include "lib/records/run_store.h"
#include "lib/sweep/kept_search.h"
#include "lib/sweep/max_batch.h"

namespace batchscope {
namespace {

// The experiments of the run record in out_dir/steps.jsonl, by name; empty where there is none.
std::map<std::string, nlohmann::json> earlier_experiments(const std::string& out_dir) {
  std::map<std::string, nlohmann::json> out;
  const std::string path = (std::filesystem::path(out_dir) / "steps.jsonl").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return out;
  const JsonlContents contents = read_jsonl(path, BadLines::Collect);
  if (contents.records.empty() || contents.records.front().value("type", "") != record::kRun) return out;
  const Json& run = contents.records.front();
  if (!run.contains("config") || !run["config"].contains("experiments")) return out;
  for (const Json& e : run["config"]["experiments"]) {
    if (e.contains("name") && e["name"].is_string()) out[e["name"].get<std::string>()] = e;
  }
  return out;
}

}  // namespace

std::string search_log_path(const std::string& out_dir, const std::string& experiment) {
  return (std::filesystem::path(out_dir) / "maxbatch" / (experiment + ".jsonl")).string();
}

namespace {

// What the search for e's largest batch size answers: the one kept in the sweep's directory where it
// ended, else a search that goes on from a stopped one or starts anew, kept there as it runs.
MaxBatchResult search_batch_maximum(const ExperimentConfig& e, MaxBatchOptions options,
                                    const SweepOptions& sweep) {
  const torch::Device device(e.device);
  // On the CPU the search runs within the limit in place (--memory-limit), or else 90% of the memory
  // available; written down, so that a search that goes on keeps the limit it began with.
  const bool limit_given = device.is_cpu() && cpu_memory::limit().has_value();
  if (device.is_cpu())
    options.cpu_memory_limit = limit_given ? cpu_memory::limit() : default_cpu_memory_limit();
  // On a GPU, the cap of --memory-limit where the sweep has one: written down with the search too.
  if (device.is_cuda()) options.gpu_memory_limit = gpu::memory_cap(device.has_index() ? device.index() : 0);

  // Two sweeps on one --out must not both search into its file: the directory is locked as the
  // sweep's log will be, and let go before the RunStore takes it.
  const OutputDirectoryLock lock(sweep.out_dir);
  const std::string path = search_log_path(sweep.out_dir, e.name);
  // --force replaces the sweep, its search too: another limit or GPU may fit another largest size.
  if (sweep.force) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  EarlierSearch earlier = find_earlier_search(path, e, options, sweep.command_line, !limit_given);
  SearchSession session;
  switch (earlier.state) {
    case EarlierSearch::State::Finished:
      if (earlier.answer) {
        spdlog::info("{}: the search kept in {} found its largest batch size before this sweep began", e.name,
                     path);
        MaxBatchResult kept;
        kept.max_batch = earlier.answer;
        kept.hit_upper_bound = earlier.hit_upper_bound;
        return kept;
      }
      break;  // nothing fitted then: searched again
    case EarlierSearch::State::Stopped:
      options = earlier.options;
      session.earlier_tries = std::move(earlier.stopped.tries);
      spdlog::info("{}: going on with the search stopped in {} after {}", e.name, path,
                   counted(static_cast<long long>(session.earlier_tries.size()), "try", "tries"));
      break;
    case EarlierSearch::State::Unopened:
      spdlog::warn(
          "{}: {} ends with tries that no maxbatch_search record opens: a new search starts after them",
          e.name, path);
      break;
    case EarlierSearch::State::Different:
      spdlog::warn("{}: {} ends with a stopped search of other options ({}): a new search starts after it",
                   e.name, path, earlier.why);
      break;
    case EarlierSearch::State::OtherTries:
      spdlog::warn(
          "{}: {} line {} holds tries that this search does not make ({}): a new search starts after them",
          e.name, path, earlier.line, earlier.why);
      break;
    case EarlierSearch::State::None:
      break;
  }

  spdlog::info("{}: searching for the largest batch size that fits on {} (at most {})", e.name, e.device,
               options.upper_bound);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  cut_truncated_tail(path, earlier);
  JsonlWriter out(path);
  out.add(
      search_opening_record(e, options, sweep.command_line, static_cast<int>(session.earlier_tries.size())));
  out.flush();
  if (sweep.stop_requested != nullptr)
    session.stop_requested = [&sweep] { return sweep.stop_requested->load(); };
  try {
    const MaxBatchResult result = run_max_batch(
        e, device, options,
        [&](const MaxBatchTry& t) {
          spdlog::info("{}: try batch {}: {}{}", e.name, t.batch_size, t.fits ? "fits" : "out of memory",
                       t.earlier ? " (in an earlier session)" : "");
          if (!t.earlier) {
            out.add(search_try_record(e, t));
            out.flush();
          }
        },
        session);
    out.add(search_result_record(e, result, sweep.command_line));
    out.flush();
    return result;
  } catch (const MaxBatchStopped& stopped) {
    spdlog::warn(
        "{}: the search for the largest batch size stopped after {}, kept in {}: the same command goes on "
        "from there",
        e.name, counted(stopped.tries, "try", "tries"), path);
    throw;
  }
}

}  // namespace

SweepConfig resolve_batch_maximum(const SweepConfig& config, const SweepOptions& sweep) {
  SweepConfig out = config;
  std::map<std::string, nlohmann::json> earlier;
  bool read = false;
  for (ExperimentConfig& e : out.experiments) {
    if (!e.batch_to_max || !e.batch_sizes.empty()) continue;
    if (!read) {
      // --force: the sizes of the sweep it replaces are not this one's.
      if (!sweep.force) earlier = earlier_experiments(sweep.out_dir);
      read = true;
    }
    const auto found = earlier.find(e.name);
    std::optional<ExperimentConfig> before;
    if (found != earlier.end() && found->second.contains("batch")) {
      try {
        before = experiment_from_json(found->second);
      } catch (const std::invalid_argument&) {
        // Not an experiment this program wrote: searched anew, and the resume refuses the log in a sentence.
      }
    }
    if (before) {
      ExperimentConfig now = e;
      now.batch_sizes = before->batch_sizes;
      if (!before->batch_sizes.empty() && to_json(now) == to_json(*before)) {
        e.batch_sizes = before->batch_sizes;
        spdlog::info("{}: batch sizes up to {}, the largest that fit when this sweep began", e.name,
                     e.batch_sizes.back());
        continue;
      }
    }

    MaxBatchOptions options;
    options.start = e.batch_to_max->from;
    if (data::is_real_data(e.data)) {
      options.upper_bound = data::load_dataset(data::locate_dataset(e.data)).train.size();
    }
    const MaxBatchResult result = search_batch_maximum(e, options, sweep);
    if (!result.max_batch) {
      throw UserError(
          located_value(e, "batch",
                        "not even batch size " + std::to_string(options.start) + " runs a full step on " +
                            e.device + " (" + result.error + ")",
                        "start the batch range lower, or use a smaller input or a lower precision"));
    }
    if (*result.max_batch < e.batch_to_max->from) {
      throw UserError(located_value(e, "batch",
                                    "the largest batch size that fits on " + e.device + " is " +
                                        std::to_string(*result.max_batch) + ", below the range's start " +
                                        std::to_string(e.batch_to_max->from),
                                    "start the range at " + std::to_string(*result.max_batch) + " or lower"));
    }
    e.batch_sizes = expand_to_max(*e.batch_to_max, *result.max_batch);
    spdlog::info("{}: the largest batch size that fits is {}{}", e.name, *result.max_batch,
                 result.hit_upper_bound ? " (the upper bound)" : "");
  }
  return out;
}

}  // namespace batchscope
