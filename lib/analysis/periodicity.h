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
  int jumps = 0;                 // jumps found
  int jumps_on_multiples = 0;    // of them, on a multiple of k
  int multiples_in_range = 0;    // multiples of k where a jump could have been seen
  int multiples_with_jump = 0;   // of them, with a jump
  double p_value = 1;            // chance of as many hits if jumps fell at random positions
  double score = 0;              // harmonic mean of the two fractions above
};

struct Periodicity {
  std::vector<PeriodCheck> tested;   // k = 8, 16, 32, 64
  std::optional<PeriodCheck> best;   // the best-fitting k over 2..half the range, if any jump
  bool periodic = false;             // best is convincing: >= 2 hits, score >= 0.5, p < 0.01
  std::string verdict;               // one sentence for the report
};

// measured_batches: the sorted batch sizes that were measured (jumps can only be seen between them).
Periodicity analyze_periodicity(const std::vector<Jump>& jumps, const std::vector<int64_t>& measured_batches);

}  // namespace batchscope
