#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"

namespace batchscope {

// How well "the jumps fall on multiples of k" describes the jumps found. A jump from..to falls on a
// multiple of k when some multiple m of k has from <= m < to (the step time rises past m).
struct PeriodCheck {
  int k = 0;
  int jumps = 0;                // jumps found
  int jumps_on_multiples = 0;   // of them, on a multiple of k
  // Where a jump on a multiple could have been seen: the steps between measured neighbours that cross a
  // multiple of k (on a ladder of every size, one per multiple; a wide gap that crosses many counts once,
  // as one jump there is all it can show).
  int multiples_in_range = 0;
  int multiples_with_jump = 0;  // of them, with a jump
  // Chance of as many hits for this k alone if the jumps fell between random measured neighbours
  // (binomial; a gap wider than one size crosses a multiple more often than 1 in k).
  double p_value = 1;
  double score = 0;  // harmonic mean of the two fractions above
};

// The blog's claim ("the step time jumps after 16, 32, 48, 64") as a test that needs no jump threshold:
// the step from each multiple m of k to m + 1 against every other step between neighbouring sizes.
// Each step's rise is taken beyond the typical one (the median rise per size), relative to its step time.
struct RisesAfterMultiples {
  int k = 0;
  std::vector<std::pair<int64_t, double>> rises;  // m and its rise m -> m + 1 beyond the typical, 0.1 = 10%
  int steps = 0;                                  // steps b -> b + 1 measured, these included
  double mean_percentile = 0;  // of these rises among all those steps: 100 the largest, 50 typical
  // Chance that as many steps drawn at random rank at least as high (rank-sum test, exact up to 100 steps).
  double p_value = 1;
};

struct Periodicity {
  std::vector<PeriodCheck> tested;  // k = 8, 16, 32, 64
  std::optional<PeriodCheck> best;  // the best-fitting k over 2..half the range, if any jump
  int periods_tried = 0;            // the k that best was chosen among (its p_value is that of one k)
  // best is convincing: >= 2 hits, score >= 0.5, and p_value times the number of k tried < 0.01
  // (Bonferroni: without it, 3.3% of sets of 4 random jumps in 1..70 passed).
  bool periodic = false;
  std::string verdict;  // one sentence for the report
  // k = 8, 16, 32 where at least two steps m -> m + 1 from a multiple were measured: set by the analysis
  // from the step times (rises_after_multiples), not from the jumps.
  std::vector<RisesAfterMultiples> after_multiples;
};

// measured_batches: the sorted batch sizes that were measured (jumps can only be seen between them);
// std::invalid_argument when they are not sorted.
Periodicity analyze_periodicity(const std::vector<Jump>& jumps, const std::vector<int64_t>& measured_batches);

// The steps from multiples of k to the next size against all steps between neighbouring sizes (b -> b + 1),
// for k = 8, 16, 32; empty with fewer than three such steps. Points sorted by batch size.
std::vector<RisesAfterMultiples> rises_after_multiples(const std::vector<LevelPoint>& points);

}  // namespace batchscope
