#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/analysis/log_reader.h"

namespace batchscope {

// One batch size of one experiment measured in both runs.
struct SizeComparison {
  std::string experiment;
  int64_t batch_size = 0;
  double baseline_ms = 0, contender_ms = 0;  // median step times
  double ratio = 0;                          // contender / baseline: above 1 is slower
  // Half the width of the ratio's noise band: z standard errors of the ratio, from each run's standard
  // error of its median: from its steps' spread, or from the spread of its pass medians where the sweep
  // repeated its passes (repeats: R) and that is the larger.
  double noise = 0;
  int baseline_passes = 1, contender_passes = 1;
  // "slower" or "faster" where the ratio differs from 1 by more than both its noise and the threshold;
  // "within noise" or "below threshold" otherwise.
  std::string verdict;
};

// An experiment's fast sizes (jump_detector.h) in each run, over the sizes compared: whether a sawtooth's
// good sizes hold from one run to the next.
struct FastSizesInBoth {
  std::string experiment;
  std::vector<FastSizes> baseline, contender;
};

struct RunComparison {
  double threshold = 0.05;
  double z = 3;
  std::vector<SizeComparison> sizes;  // by experiment (the baseline's order), then batch size
  // "experiment batch N" measured in one run only, or with fewer steps than min_samples in either.
  std::vector<std::string> unmatched;
  // "experiment batch N (out of memory)": sizes the baseline measured that the contender ran out of memory
  // at, or skipped after a smaller size did; a loss that counts as slower. `gained` the other way round.
  std::vector<std::string> lost, gained;
  // Where an experiment of both runs did not measure the same thing: "mnist: optimizer {...} → {...}", per
  // setting that changes a step (the device by name, the optimizer, the precision, the library versions).
  std::vector<std::string> differences;
  int slower = 0, faster = 0;
  std::vector<FastSizesInBoth> fast_sizes;  // experiments with fast sizes in either run
};

// Sets the contender's sweep against the baseline's, batch size by batch size, matching experiments by
// name (passes of a repeated sweep pooled). Sizes with fewer than min_samples timed steps in either run
// are left out and listed; sizes that fit in one run and not in the other are listed apart.
RunComparison compare_runs(const LoadedLog& baseline, const LoadedLog& contender, double threshold,
                           double z = 3, int min_samples = 5);

// The table and a closing sentence ("no difference beyond the noise and 5%", or what is slower), then
// per experiment with fast sizes, which hold in both runs and which in one only.
std::string format_run_comparison(const RunComparison& c);

}  // namespace batchscope
