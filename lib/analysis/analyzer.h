#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/analysis/cost.h"
#include "lib/analysis/grouping.h"
#include "lib/analysis/peak_share.h"
#include "lib/analysis/tile_model.h"
#include "lib/common/limits.h"

namespace batchscope {

struct AnalyzeOptions {
  int min_samples = limits::kMinAnalyzedSteps;  // fewer timed steps than this flag a batch size instead of using it
  JumpDetectorOptions detector;
  GroupingOptions grouping;
  // The tile/wave prediction of jumps: the SM count where the run record gives none (a CPU log, or
  // asking "what would this GPU do"), and the tile where no profiled kernel name gives one.
  std::optional<int64_t> sms;
  std::optional<Tile> tile;
  // Prices per device-hour (analyze --price, --prices) and the samples of an epoch for $ per epoch
  // (default: the training set of the experiment's dataset where known).
  PriceList prices;
  std::optional<int64_t> epoch_samples;
  // The device's measured peak rates (analyze --peak), that each group's TFLOP/s is read against.
  PeakTable peaks;
  // The gradient noise scale (analyze --noise-scale): each training group's predicted time to an
  // accuracy per batch size.
  std::optional<GivenNoiseScale> noise_scale;
};

// Statistics, trend, jumps, periodicity and best batch sizes of each group, and speedups between
// groups that ran the same workload (the first group of a workload is the baseline).
Analysis analyze_groups(const std::vector<RawGroup>& groups, const AnalyzeOptions& options);

// Reads the logs (files or sweep directories) and analyses them. Problems that leave something to
// analyse become warnings; throws UserError when nothing can be analysed.
Analysis analyze_logs(const std::vector<std::string>& arguments, const AnalyzeOptions& options);

// The logs the arguments name, read: a directory of shards (sweep --shard, submit) stands for its shards'
// logs, a log given twice is read once, and one that holds no batchscope records is left out; each of
// these says so in `warnings`. The logs' own warnings (damaged lines) stay in their summaries. Throws
// UserError, naming the first argument's problem, where no log is left.
std::vector<LoadedLog> load_logs(const std::vector<std::string>& arguments,
                                 std::vector<std::string>& warnings);

}  // namespace batchscope
