#pragma once
// The jump detector's rates on synthetic sweeps: how often it reports something on smooth trends, and
// how often it finds steps of known height at their positions, over many seeded runs. The unit tests
// assert the rates (tests/test_jump_detector.cpp); bench/jump_detector_rates prints them as tables.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/analysis/periodicity.h"
#include "tests/synthetic_steps.h"

namespace batchscope::synthetic {

struct Shape {
  std::string name;
  Truth truth;
  std::vector<int64_t> batches;
};

// Trends without steps: any jump, drop, spike or fast size reported on them is a false positive.
inline std::vector<Shape> smooth_shapes() {
  return {
      {"flat", [](double) { return 20.0; }, sizes(1, 70)},
      {"line", [](double b) { return 5 + 0.4 * b; }, sizes(1, 70)},
      {"steep", [](double b) { return 1 + 1.0 * b; }, sizes(1, 70)},
      {"sqrt", [](double b) { return 20 + 0.5 * b + 3 * std::sqrt(b); }, sizes(1, 70)},
      // Flat while the GPU is not full, linear after a knee: a soft one at 20, a sharp one at 5.
      {"soft knee", [](double b) { return std::hypot(10.0, 0.5 * b); }, sizes(1, 70)},
      {"sharp knee", [](double b) { return std::max(3.0, 0.6 * b); }, sizes(1, 70)},
      {"line 1:128:4", [](double b) { return 5 + 0.4 * b; }, sizes(1, 128, 4)},
  };
}

constexpr int kFalsePositiveRuns = 200;

// Runs (of kFalsePositiveRuns) with any jump, drop, spike or fast size: [noise][shape].
inline std::vector<std::vector<int>> false_positive_counts() {
  std::vector<std::vector<int>> counts;
  uint64_t seed = 1000;
  for (const Noise& noise : noise_levels()) {
    counts.emplace_back();
    for (const Shape& shape : smooth_shapes()) {
      int any = 0;
      for (int r = 0; r < kFalsePositiveRuns; ++r) {
        const JumpAnalysis a = detect_jumps(measure(shape.truth, shape.batches, noise, ++seed));
        if (!a.jumps.empty() || !a.drops.empty() || !a.spikes.empty() || !a.fast_sizes.empty()) ++any;
      }
      counts.back().push_back(any);
    }
  }
  return counts;
}

struct Scenario {
  std::string name;
  double base, slope;
  std::vector<int64_t> positions;
  std::vector<int64_t> batches;
};

inline std::vector<Scenario> step_scenarios() {
  return {
      {"every 16", 10, 0.5, {16, 32, 48, 64}, sizes(1, 70)},
      {"irregular", 10, 0.5, {11, 29, 53}, sizes(1, 70)},
      {"near the ends", 10, 0.5, {2, 67}, sizes(1, 70)},
      {"every 16, 1:128:4", 10, 0.5, {16, 32, 48, 64, 80, 96, 112}, sizes(1, 128, 4)},
  };
}

constexpr int kDetectionRuns = 100;
constexpr double kHeights[] = {0.05, 0.10, 0.20, 0.30};

// The smallest of a scenario's steps over the standard error of the difference it shows in: the
// step beyond the slope over sqrt(se_from^2 + se_to^2).
inline double clearance(const Scenario& sc, double height, double median_se) {
  const Truth truth = staircase(sc.base, sc.slope, sc.positions, height);
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& [from, to] : expected_pairs(sc.batches, sc.positions)) {
    const double a = truth(static_cast<double>(from)), b = truth(static_cast<double>(to));
    const double step = b - a - sc.slope * static_cast<double>(to - from);
    lowest = std::min(lowest, step / (median_se * std::hypot(a, b)));
  }
  return lowest;
}

struct Tally {
  int steps = 0, found = 0;  // true steps, and of them reported at the right from/to
  int runs = 0, wrong = 0;   // runs, and of them with any jump, drop, spike or fast size elsewhere
  int period16 = 0;          // runs judged periodic with k = 16
  double found_rate() const { return steps ? static_cast<double>(found) / steps : 0; }
  double wrong_rate() const { return runs ? static_cast<double>(wrong) / runs : 0; }
  void add(const Tally& o) {
    steps += o.steps, found += o.found, runs += o.runs, wrong += o.wrong, period16 += o.period16;
  }
};

inline Tally run_scenario(const Scenario& sc, const Noise& noise, double height, uint64_t seed) {
  const auto truth_pairs = expected_pairs(sc.batches, sc.positions);
  const Truth truth = staircase(sc.base, sc.slope, sc.positions, height);
  Tally t;
  for (int r = 0; r < kDetectionRuns; ++r) {
    const JumpAnalysis a = detect_jumps(measure(truth, sc.batches, noise, seed + r));
    ++t.runs;
    t.steps += static_cast<int>(truth_pairs.size());
    for (const auto& [from, to] : truth_pairs) t.found += has_jump(a, from, to) ? 1 : 0;
    const bool elsewhere = std::any_of(a.jumps.begin(), a.jumps.end(), [&](const Jump& j) {
      return std::find(truth_pairs.begin(), truth_pairs.end(), std::make_pair(j.from_batch, j.to_batch)) ==
             truth_pairs.end();
    });
    t.wrong += elsewhere || !a.drops.empty() || !a.spikes.empty() || !a.fast_sizes.empty() ? 1 : 0;
    const Periodicity p = analyze_periodicity(a.jumps, sc.batches);
    t.period16 += p.periodic && p.best->k == 16 ? 1 : 0;
  }
  return t;
}

// Steps at least this many standard errors of their difference must be found; below it the rates
// are measured and printed, not asserted.
constexpr double kClearRatio = 10;


// One cell of the detection study: a scenario at a noise level and a step height.
struct DetectionCell {
  const Scenario* scenario;
  size_t noise, height;  // indices into noise_levels() and kHeights
  double ratio;          // clearance: the smallest step over the standard error of its difference
  Tally tally;
};

// Every scenario x noise level x height, in that order, with the seeds the unit tests use.
inline std::vector<DetectionCell> detection_study() {
  static const std::vector<Scenario> scenarios = step_scenarios();
  std::vector<DetectionCell> cells;
  uint64_t seed = 50000;
  for (const Scenario& sc : scenarios) {
    for (size_t n = 0; n < noise_levels().size(); ++n) {
      const double se = median_relative_se(noise_levels()[n]);
      for (size_t h = 0; h < std::size(kHeights); ++h) {
        cells.push_back({&sc, n, h, clearance(sc, kHeights[h], se),
                         run_scenario(sc, noise_levels()[n], kHeights[h], seed += kDetectionRuns)});
      }
    }
  }
  return cells;
}

}  // namespace batchscope::synthetic
