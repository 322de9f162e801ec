#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchscope {

// One measured batch size as the detector sees it: the median step time and how well that median is
// known from the repeated steps.
struct LevelPoint {
  int64_t batch_size = 0;
  double median_ms = 0;
  double median_se_ms = 0;  // standard error of the median, >= 0
};

struct JumpDetectorOptions {
  // A rise counts when it exceeds the local trend by this many standard deviations of its noise...
  double z_threshold = 5.0;
  // ...and by at least this fraction of the step time before it, so that a statistically clear but
  // practically meaningless change of a fraction of a percent is not called a jump.
  double min_relative = 0.02;
  // Consecutive differences taken on each side of a pair to estimate its local slope.
  int window = 8;
};

// A change between two consecutive measured batch sizes beyond the trend; delta_ms < 0 for a drop.
struct Jump {
  int64_t from_batch = 0;
  int64_t to_batch = 0;
  double from_ms = 0;
  double to_ms = 0;
  // The change beyond what the local slope predicts over this step: for a rise the steeper of the two
  // sides' slopes, for a drop the flatter, so that a bend in the trend is not taken for a jump.
  double delta_ms = 0;
  double delta_pct = 0;    // delta_ms relative to from_ms, in percent
  double z = 0;            // delta_ms over its noise
  std::string confidence;  // "high" (z at least twice the threshold) or "medium"; "doubtful" (below)
  // With repeated passes (repeats: R): the passes whose own medians rise (or fall) across the pair by
  // at least half the pooled change. A jump in fewer than half of them is "doubtful".
  int passes = 0, passes_with = 0;
};

// A run of batch sizes between jumps or drops (or the ends of the range).
struct Segment {
  int64_t first_batch = 0;
  int64_t last_batch = 0;
  int points = 0;
  // Least-squares slope inside the segment, spikes left out; 0 for one point.
  double slope_ms_per_sample = 0;
  double rise_ms = 0;  // slope times the segment's width
  // Flat enough to be a step of a staircase: its own rise is below the noise threshold or below half
  // the smallest jump next to it.
  bool plateau = false;
};

// One to three consecutive batch sizes whose steps are all faster than those of the sizes on both sides
// (a sawtooth's good sizes: cuDNN picks a faster algorithm at some sizes only), by more than the noise
// of those medians and by the detector's min_relative: sizes to prefer over their neighbours.
struct FastSizes {
  int64_t first_batch = 0;
  int64_t last_batch = 0;
  double fastest_ms = 0, slowest_ms = 0;  // the step times inside
  int64_t before_batch = 0, after_batch = 0;  // the sizes just outside
  double before_ms = 0, after_ms = 0;         // their step times
  // How much less the slowest inside takes than the faster of the two outside, in percent of that.
  double gain_pct = 0;
  // With repeated passes (repeats: R): the passes whose own medians show the run faster than both sizes
  // outside by at least half the pooled gain. Fast in fewer than half of them: doubtful.
  int passes = 0, passes_with = 0;
  bool doubtful = false;
};

struct JumpAnalysis {
  double slope_ms_per_sample = 0;  // median of the consecutive differences per extra sample
  // Robust spread of the differences after the local trend, at the median step time: the detector
  // takes the spread relative to the step time and scales it to each pair.
  double noise_ms = 0;
  int tested_pairs = 0;
  std::vector<Jump> jumps;        // rises, ascending batch size
  std::vector<Jump> drops;        // falls beyond the noise
  std::vector<int64_t> spikes;    // single batch sizes that rise and fall straight back
  // Judged against the neighbours alone, not the trend: a sawtooth inflates the spread around the trend,
  // which is not the noise of a size's own median. Spikes are left out as neighbours.
  std::vector<FastSizes> fast_sizes;
  std::vector<Segment> segments;  // split at the jumps and drops
  // At least two jumps and every inner segment a plateau; the first and last segments are not judged
  // (a GPU's flat start before it fills up, a sweep that stops mid-step).
  bool staircase = false;
};

// Finds the steps in step time against batch size. Points must be sorted by batch size, unique, with
// finite medians and standard errors >= 0 (std::invalid_argument otherwise: the caller sorts);
// fewer than three points give an analysis with no jumps. The method and its measured error rates
// are described in the README ("How jumps are found").
JumpAnalysis detect_jumps(const std::vector<LevelPoint>& points, const JumpDetectorOptions& options = {});

// Standard error of the median of repeated step times, from their median absolute deviation
// (robust to the odd slow step); 0 for fewer than two samples.
double median_standard_error(const std::vector<double>& times_ms);

}  // namespace batchscope
