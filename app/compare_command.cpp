#include <spdlog/spdlog.h>

#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/analysis/analyzer.h"
#include "lib/analysis/log_reader.h"
#include "lib/analysis/run_comparison.h"
#include "lib/common/errors.h"
#include "lib/common/limits.h"

// batchscope compare BASELINE CONTENDER: per batch size, is the contender slower than the baseline
// beyond the noise of their steps and a threshold? Exit code 1 where it is, for a CI job to gate on.

namespace batchscope::app {
namespace {

// One run's records: its log, or a sharded sweep's directory (its shards' logs together), as analyze
// reads them. Every warning is printed (a damaged line, a shard not complete); a log that holds no
// batchscope records is refused, naming it.
LoadedLog load_or_refuse(const std::string& argument) {
  std::vector<std::string> warnings;
  std::vector<LoadedLog> logs = load_logs({argument}, warnings);
  LoadedLog run;
  run.summary.path = argument;
  for (LoadedLog& log : logs) {
    warnings.insert(warnings.end(), log.summary.warnings.begin(), log.summary.warnings.end());
    run.records.insert(run.records.end(), log.records.begin(), log.records.end());
    run.summary.records += log.summary.records;
  }
  for (const std::string& w : warnings) std::cerr << "batchscope: warning: " << w << "\n";
  return run;
}

Json comparison_json(const RunComparison& c) {
  Json sizes = Json::array();
  for (const SizeComparison& s : c.sizes) {
    sizes.push_back({{"experiment", s.experiment},
                     {"batch_size", s.batch_size},
                     {"baseline_median_ms", s.baseline_ms},
                     {"contender_median_ms", s.contender_ms},
                     {"ratio", s.ratio},
                     {"noise", s.noise},
                     {"baseline_passes", s.baseline_passes},
                     {"contender_passes", s.contender_passes},
                     {"verdict", s.verdict}});
  }
  const auto ranges = [](const std::vector<FastSizes>& runs) {
    Json out = Json::array();
    for (const FastSizes& f : runs)
      out.push_back({{"first", f.first_batch}, {"last", f.last_batch}, {"gain_pct", f.gain_pct}});
    return out;
  };
  Json fast = Json::array();
  for (const FastSizesInBoth& f : c.fast_sizes) {
    fast.push_back(
        {{"experiment", f.experiment}, {"baseline", ranges(f.baseline)}, {"contender", ranges(f.contender)}});
  }
  return Json{{"threshold", c.threshold}, {"z", c.z},           {"slower", c.slower},
              {"faster", c.faster},       {"sizes", sizes},     {"unmatched", c.unmatched},
              {"lost", c.lost},           {"gained", c.gained}, {"differences", c.differences},
              {"fast_sizes", fast}};
}

}  // namespace

int run_compare_command(const std::vector<std::string>& args) {
  cxxopts::Options options(
      "batchscope compare",
      "Set a contender sweep against a baseline, batch size by batch size: the ratio of their median step\n"
      "times, a noise band from the spread of each run's steps, or of its passes' medians where the sweep\n"
      "repeated them (repeats: R) and that is wider (z standard errors of the ratio), and a verdict. A\n"
      "size is slower or faster only beyond both its noise and the threshold. A size the baseline measured\n"
      "that the contender ran out of memory at (or skipped after one did) is lost. Exit code 1 when any\n"
      "size is slower or lost, so that a CI job can gate on it; 0 otherwise. A sharded sweep's directory\n"
      "stands for all its shards.");
  options.positional_help("BASELINE CONTENDER  (steps.jsonl files or their sweep directories)");
  // clang-format off
  options.add_options()
      ("logs", "the baseline's log, then the contender's", cxxopts::value<std::vector<std::string>>())
      ("threshold", "the least difference that counts, e.g. 5%", cxxopts::value<std::string>()->default_value("5%"))
      ("sigmas", "the noise band's width in standard errors of the ratio", cxxopts::value<std::string>()->default_value("3"))
      ("min-samples", "timed steps a batch size needs in each run to be compared", cxxopts::value<std::string>()->default_value(std::to_string(limits::kMinAnalyzedSteps)))
      ("strict", "refuse (exit 2) an experiment of the same name that measured another thing (device, optimizer, precision, ...) instead of saying so")
      ("json", "print the comparison as JSON")
      ("h,help", "this help");
  // clang-format on
  options.parse_positional({"logs"});
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout
        << options.help()
        << "\nExit codes: 0 no size slower or lost, 1 a size slower beyond the noise and the threshold, or\n"
           "lost (out of memory in the contender), 2 bad input (with --strict, runs that measured another "
           "thing).\n"
           "Example: batchscope compare runs/main runs/branch --threshold 5%\n";
    return 0;
  }
  const auto logs = result.count("logs") ? result["logs"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (logs.size() != 2) refuse("compare takes two logs, the baseline's and the contender's", "e.g. batchscope compare runs/main runs/branch");
  const double threshold = percent_option(result, "threshold", 1000);
  const double z = real_option(result, "sigmas", 0, 100);
  const int min_samples = static_cast<int>(whole_option(result, "min-samples", 1, limits::kMaxSteps));
  {
    std::error_code ec;
    if (std::filesystem::equivalent(log_file_for(logs[0]), log_file_for(logs[1]), ec)) {
      spdlog::warn("{} and {} are the same log: it is compared with itself, and nothing can differ", logs[0],
                   logs[1]);
    }
  }
  const LoadedLog baseline = load_or_refuse(logs[0]);
  const LoadedLog contender = load_or_refuse(logs[1]);
  const RunComparison c = compare_runs(baseline, contender, threshold, z, min_samples);
  if (c.sizes.empty() && c.lost.empty()) {
    // A log whose every batch size has too few timed steps is the one to name, with the --min-samples
    // that takes it.
    for (const auto& [log, path] : {std::pair{&baseline, logs[0]}, std::pair{&contender, logs[1]}}) {
      int64_t most = 0;
      for (const SweepRecord& r : log->records) {
        if (const auto* p = std::get_if<PointRecord>(&r))
          most = std::max<int64_t>(most, p->samples.value_or(0));
      }
      if (most > 0 && most < min_samples) {
        throw UserError(located(path, 0,
                                "has at most " + std::to_string(most) +
                                    " timed steps per batch size, fewer than --min-samples " +
                                    std::to_string(min_samples),
                                "give --min-samples " + std::to_string(most) + " to compare it"));
      }
    }
    throw UserError(located(logs[1], 0, "has no batch size in common with " + logs[0] + " (by experiment name, with " +
                                            std::to_string(min_samples) + " timed steps or more in each)",
                            "compare two sweeps of the same experiments"));
  }
  if (result.count("strict") && !c.differences.empty()) {
    std::string all;
    for (const std::string& d : c.differences) all += (all.empty() ? "" : "; ") + d;
    throw UserError(
        located(logs[1], 0, "did not measure what " + logs[0] + " measured (" + all + ")",
                "compare sweeps run with the same settings, or leave out --strict to compare them anyway"));
  }
  if (result.count("json")) {
    std::cout << comparison_json(c).dump(2) << "\n";
  } else {
    std::cout << format_run_comparison(c);
  }
  // A size the contender no longer fits is a regression as much as a slower one.
  return c.slower > 0 || !c.lost.empty() ? 1 : 0;
}

}  // namespace batchscope::app
