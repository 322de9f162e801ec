#include "lib/sweep/batch_maximum.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "data/datasets.h"
#include "lib/common/errors.h"
#include "lib/device/cpu_memory.h"
#include "lib/records/records.h"
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

SweepConfig resolve_batch_maximum(const SweepConfig& config, const std::string& out_dir) {
  SweepConfig out = config;
  std::map<std::string, nlohmann::json> earlier;
  bool read = false;
  for (ExperimentConfig& e : out.experiments) {
    if (!e.batch_to_max || !e.batch_sizes.empty()) continue;
    if (!read) {
      earlier = earlier_experiments(out_dir);
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
    spdlog::info("{}: searching for the largest batch size that fits on {} (at most {})", e.name, e.device,
                 options.upper_bound);
    const MaxBatchResult result =
        run_max_batch(e, torch::Device(e.device), options, [&](const MaxBatchTry& t) {
          spdlog::info("{}: try batch {}: {}", e.name, t.batch_size, t.fits ? "fits" : "out of memory");
        });
    if (!result.max_batch) {
      throw UserError(located_value(e, "batch",
                                    "not even batch size " + std::to_string(options.start) +
                                        " runs a full step on " + e.device + " (" + result.error + ")",
                                    "start the batch range lower, or use a smaller input or a lower precision"));
    }
    e.batch_sizes = expand_to_max(*e.batch_to_max, *result.max_batch);
    spdlog::info("{}: the largest batch size that fits is {}{}", e.name, *result.max_batch,
                 result.hit_upper_bound ? " (the upper bound)" : "");
  }
  return out;
}

}  // namespace batchscope
