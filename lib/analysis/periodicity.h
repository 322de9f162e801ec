#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/jump_detector.h"

namespace batchscope {

// How well "the jumps fall on multiples of k" describes the jumps found. A jump from..to falls on a
// multiple of k when some multiple m of k has from <= m < to (the step time rises past m).
struct PeriodCheck {
  int k = 0;
  int jumps = 0;                // jumps found
  int jumps_on_multiples = 0;   // of them, on a multiple of k
  int multiples_in_range = 0;   // multiples of k where a jump could have been seen
  int multiples_with_jump = 0;  // of them, with a jump
  // Chance of as many hits for this k alone if the jumps fell between random measured neighbours
  // (binomial; a gap wider than one size crosses a multiple more often than 1 in k).
  double p_value = 1;
  double score = 0;  // harmonic mean of the two fractions above
};

struct Periodicity {
  std::vector<PeriodCheck> tested;  // k = 8, 16, 32, 64
  std::optional<PeriodCheck> best;  // the best-fitting k over 2..half the range, if any jump
  // best is convincing: >= 2 hits, score >= 0.5, and p_value times the number of k tried < 0.01
  // (Bonferroni: without it, 3.3% of sets of 4 random jumps in 1..70 passed).
  bool periodic = false;
  std::string verdict;  // one sentence for the report
};

// measured_batches: the sorted batch sizes that were measured (jumps can only be seen between them);
// std::invalid_argument when they are not sorted.
Periodicity analyze_periodicity(const std::vector<Jump>& jumps, const std::vector<int64_t>& measured_batches);

}  // namespace batchscope
