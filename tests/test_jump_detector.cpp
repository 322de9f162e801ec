#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/analysis/periodicity.h"
#include "lib/common/statistics.h"
#include "tests/jump_rate_study.h"
#include "tests/synthetic_steps.h"

namespace batchscope {
namespace {

using namespace synthetic;

TEST(MedianStandardError, FewerThanTwoSamplesHaveNone) {
  EXPECT_EQ(median_standard_error({}), 0);
  EXPECT_EQ(median_standard_error({3.0}), 0);
}

TEST(MedianStandardError, MatchesTheSpreadOfMediansOfNormalSamples) {
  Draws draws(7);
  std::vector<double> medians, estimates;
  for (int r = 0; r < 2000; ++r) {
    std::vector<double> steps(kSteps);
    for (double& t : steps) t = 10 + draws.normal();
    medians.push_back(median(steps));
    estimates.push_back(median_standard_error(steps));
  }
  // The estimate (1.2533 sigma / sqrt(n) from the MAD) should track the true spread within ~15%.
  EXPECT_NEAR(median(estimates) / *stddev(medians), 1.0, 0.15);
}

TEST(MedianStandardError, OneSlowStepBarelyMovesIt) {
  std::vector<double> steps = {10.0, 10.1, 9.9, 10.2, 9.8, 10.05, 9.95, 10.15, 9.85, 10.0};
  const double calm = median_standard_error(steps);
  steps[3] = 100;
  EXPECT_GT(calm, 0);
  EXPECT_LT(median_standard_error(steps), 1.5 * calm);
}

TEST(MedianStandardError, IdenticalSamplesGiveZeroButACoarseTimerDoesNot) {
  EXPECT_EQ(median_standard_error({5, 5, 5, 5}), 0);
  // More than half equal makes the MAD zero; the rest must still count.
  const double se = median_standard_error({5, 5, 5, 5, 5, 5, 6, 4, 6});
  EXPECT_GT(se, 0);
  EXPECT_TRUE(std::isfinite(se));
}

TEST(JumpDetector, FewerThanThreePointsGiveNoJumps) {
  EXPECT_TRUE(detect_jumps({}).jumps.empty());
  const JumpAnalysis two = detect_jumps({{1, 10, 0.1}, {2, 20, 0.1}});
  EXPECT_TRUE(two.jumps.empty());
  EXPECT_EQ(two.tested_pairs, 0);
  ASSERT_EQ(two.segments.size(), 1u);
  EXPECT_EQ(two.segments[0].points, 2);
  EXPECT_DOUBLE_EQ(two.slope_ms_per_sample, 10);
}

TEST(JumpDetector, RejectsUnsortedOrRepeatedBatchSizes) {
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {3, 11, 0}, {2, 12, 0}}), std::invalid_argument);
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, 11, 0}, {2, 12, 0}}), std::invalid_argument);
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, NAN, 0}, {3, 12, 0}}), std::invalid_argument);
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, 11, -0.1}, {3, 12, 0}}), std::invalid_argument);
  JumpDetectorOptions no_window;
  no_window.window = 0;
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, 11, 0}, {3, 12, 0}}, no_window), std::invalid_argument);
}

TEST(JumpDetector, NoiseFreeLineHasNoJumpsAndItsSlope) {
  const JumpAnalysis a = detect_jumps(exact([](double b) { return 3 + 0.25 * b; }, sizes(1, 70)));
  EXPECT_TRUE(a.jumps.empty());
  EXPECT_TRUE(a.drops.empty());
  EXPECT_TRUE(a.spikes.empty());
  EXPECT_NEAR(a.slope_ms_per_sample, 0.25, 1e-12);
  EXPECT_EQ(a.tested_pairs, 69);
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_NEAR(a.segments[0].rise_ms, 0.25 * 69, 1e-9);
  EXPECT_FALSE(a.staircase);
}

TEST(JumpDetector, NoiseFreeStepsAreFoundWithTheirSize) {
  const JumpAnalysis a = detect_jumps(exact(staircase(10, 0.5, {16, 32, 48, 64}, 0.1), sizes(1, 70)));
  ASSERT_EQ(a.jumps.size(), 4u);
  EXPECT_EQ(from_batches(a.jumps), (std::vector<int64_t>{16, 32, 48, 64}));
  EXPECT_EQ(a.jumps[0].to_batch, 17);
  EXPECT_NEAR(a.jumps[0].delta_ms, 0.1 * 18, 1e-9);  // 10% of t(16) = 18 ms
  EXPECT_NEAR(a.jumps[0].delta_pct, 10, 1e-6);
  EXPECT_EQ(a.jumps[0].confidence, "high");
  EXPECT_NEAR(a.slope_ms_per_sample, 0.5, 1e-12);
  ASSERT_EQ(a.segments.size(), 5u);
  EXPECT_EQ(a.segments[1].first_batch, 17);
  EXPECT_EQ(a.segments[1].last_batch, 32);
  EXPECT_EQ(a.segments[1].points, 16);
  EXPECT_NEAR(a.segments[1].slope_ms_per_sample, 0.5, 1e-9);
}

TEST(JumpDetector, StepsAtTheEdgesOfTheRange) {
  const JumpAnalysis a = detect_jumps(exact(staircase(10, 0.2, {2, 68}, 0.1), sizes(1, 70)));
  EXPECT_EQ(from_batches(a.jumps), (std::vector<int64_t>{2, 68}));
}

TEST(JumpDetector, FlatStepsAreAStaircaseAndSlopedOnesAreNot) {
  const Noise quiet{"0.5%", 0.005, false};
  const JumpAnalysis flat =
      detect_jumps(measure(staircase(20, 0, {16, 32, 48, 64}, 0.1), sizes(1, 70), quiet, 1));
  EXPECT_EQ(from_batches(flat.jumps), (std::vector<int64_t>{16, 32, 48, 64}));
  EXPECT_TRUE(flat.staircase);
  for (const Segment& s : flat.segments) EXPECT_TRUE(s.plateau) << s.first_batch << "-" << s.last_batch;

  // Each 16-wide segment rises 16 ms against steps of about 3 ms: a line with bumps, not a staircase.
  const JumpAnalysis steep =
      detect_jumps(measure(staircase(2, 1, {16, 32, 48}, 0.1), sizes(1, 70), quiet, 1));
  EXPECT_EQ(from_batches(steep.jumps), (std::vector<int64_t>{16, 32, 48}));
  EXPECT_FALSE(steep.staircase);
  EXPECT_FALSE(steep.segments[1].plateau);
}

TEST(JumpDetector, DenseStaircaseIsStillFound) {
  // A step every 4 sizes (10%, about 13 standard errors) makes a quarter of the differences jumps,
  // which inflates a one-pass noise estimate; the detector re-estimates without them.
  const std::vector<int64_t> positions = {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68};
  const Noise noise{"2%", 0.02, false};
  int all_found = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const JumpAnalysis a = detect_jumps(measure(staircase(20, 0, positions, 0.1), sizes(1, 70), noise, seed));
    if (from_batches(a.jumps) == positions) ++all_found;
  }
  EXPECT_GE(all_found, 19);
}

TEST(JumpDetector, OneSlowBatchSizeIsASpike) {
  Truth truth = [](double b) { return (5 + 0.3 * b) * (b == 40 ? 1.3 : 1.0); };
  const JumpAnalysis a = detect_jumps(measure(truth, sizes(1, 70), {"0.5%", 0.005, false}, 3));
  EXPECT_EQ(a.spikes, (std::vector<int64_t>{40}));
  EXPECT_TRUE(a.jumps.empty());
  EXPECT_TRUE(a.drops.empty());
  EXPECT_EQ(a.segments.size(), 1u);
}

TEST(JumpDetector, ALowerLevelIsADrop) {
  Truth truth = [](double b) { return (5 + 0.3 * b) * (b > 30 ? 0.85 : 1.0); };
  const JumpAnalysis a = detect_jumps(measure(truth, sizes(1, 70), {"0.5%", 0.005, false}, 4));
  EXPECT_TRUE(a.jumps.empty());
  EXPECT_TRUE(a.spikes.empty());
  ASSERT_EQ(a.drops.size(), 1u);
  EXPECT_EQ(a.drops[0].from_batch, 30);
  EXPECT_EQ(a.drops[0].to_batch, 31);
  EXPECT_LT(a.drops[0].delta_ms, 0);
  EXPECT_NEAR(a.drops[0].delta_pct, -15, 2);
  EXPECT_EQ(a.segments.size(), 2u);
}

TEST(JumpDetector, ClearButTinyChangeIsNotAJump) {
  // 1% is 10 noise sigmas here, but below min_relative.
  const std::vector<LevelPoint> points =
      measure(staircase(10, 0.1, {35}, 0.01), sizes(1, 70), {"0.1%", 0.001, false}, 5);
  EXPECT_TRUE(detect_jumps(points).jumps.empty());
  JumpDetectorOptions sensitive;
  sensitive.min_relative = 0.005;
  EXPECT_EQ(from_batches(detect_jumps(points, sensitive).jumps), (std::vector<int64_t>{35}));
}

TEST(JumpDetector, ConfidenceFollowsZ) {
  const Noise noise{"2%", 0.02, false};
  // 7.5% is about 9.5 difference sigmas: mostly medium; 30% is about 38: high.
  const JumpAnalysis small = detect_jumps(measure(staircase(10, 0.1, {35}, 0.075), sizes(1, 70), noise, 6));
  const JumpAnalysis big = detect_jumps(measure(staircase(10, 0.1, {35}, 0.3), sizes(1, 70), noise, 6));
  ASSERT_EQ(small.jumps.size(), 1u);
  ASSERT_EQ(big.jumps.size(), 1u);
  EXPECT_EQ(small.jumps[0].confidence, small.jumps[0].z >= 10 ? "high" : "medium");
  EXPECT_EQ(big.jumps[0].confidence, "high");
  EXPECT_GE(big.jumps[0].z, 10);
}

// As VGG16 trained in IEEE fp32 on a GPU: cuDNN's fast algorithm at some sizes only, a sawtooth of sizes
// much faster than both neighbours, one or two sizes wide.
Truth sawtooth() {
  return [](double b) {
    const double line = 10 + 1.5 * b;
    if (b == 16 || b == 32 || b == 40 || b == 48) return 0.6 * line;
    if (b == 23 || b == 24) return 0.55 * line;
    if (b == 60) return 0.985 * line;  // 1.5% less: below min_relative
    if (b == 56) return 1.5 * line;    // a slow spike: 55 and 57 are not fast beside it
    return line;
  };
}

std::vector<std::pair<int64_t, int64_t>> runs(const JumpAnalysis& a) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const FastSizes& f : a.fast_sizes) out.emplace_back(f.first_batch, f.last_batch);
  return out;
}

TEST(JumpDetector, FindsTheFastSizesOfASawtooth) {
  const std::vector<std::pair<int64_t, int64_t>> truth = {{16, 16}, {23, 24}, {32, 32}, {40, 40}, {48, 48}};
  const JumpAnalysis a = detect_jumps(exact(sawtooth(), sizes(1, 70)));
  EXPECT_EQ(runs(a), truth);
  ASSERT_EQ(a.fast_sizes.size(), truth.size());
  const FastSizes& valley = a.fast_sizes[1];
  EXPECT_DOUBLE_EQ(valley.fastest_ms, 0.55 * (10 + 1.5 * 23));
  EXPECT_DOUBLE_EQ(valley.slowest_ms, 0.55 * (10 + 1.5 * 24));
  EXPECT_DOUBLE_EQ(valley.before_ms, 10 + 1.5 * 22);
  EXPECT_DOUBLE_EQ(valley.after_ms, 10 + 1.5 * 25);
  EXPECT_NEAR(valley.gain_pct, 100 * (1 - 0.55 * 46 / 43), 1e-9);
  EXPECT_EQ(a.spikes, (std::vector<int64_t>{56}));

  // Found through 2% noise of every step (20 steps a size) in nearly every run, and nothing else.
  int all_found = 0, other = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const JumpAnalysis noisy = detect_jumps(measure(sawtooth(), sizes(1, 70), noise_levels()[1], seed));
    const auto found = runs(noisy);
    if (found == truth) ++all_found;
    for (const auto& run : found) {
      if (std::find(truth.begin(), truth.end(), run) == truth.end()) ++other;
    }
  }
  EXPECT_GE(all_found, 95);
  EXPECT_LE(other, 2);

  // A dip within the noise of its medians is not a fast size, however deep it looks.
  std::vector<LevelPoint> uncertain = exact(sawtooth(), sizes(1, 70));
  for (LevelPoint& p : uncertain) p.median_se_ms = 0.1 * p.median_ms;
  EXPECT_TRUE(detect_jumps(uncertain).fast_sizes.empty());
}

// The rates of tests/jump_rate_study.h, asserted; bench/jump_detector_rates prints them.
TEST(JumpDetectorRates, FalsePositivesOnSmoothTrends) {
  const auto counts = false_positive_counts();
  for (size_t n = 0; n < noise_levels().size(); ++n) {
    int total = 0, runs = 0;
    for (size_t s = 0; s < smooth_shapes().size(); ++s) {
      EXPECT_LE(counts[n][s], kFalsePositiveRuns / 50) << smooth_shapes()[s].name << ", " << noise_levels()[n].name;
      total += counts[n][s];
      runs += kFalsePositiveRuns;
    }
    EXPECT_LE(static_cast<double>(total) / runs, 0.01) << noise_levels()[n].name;
  }
}

TEST(JumpDetectorRates, StepsFoundAtTheirPositions) {
  for (const DetectionCell& c : detection_study()) {
    const std::string where = c.scenario->name + ", " + noise_levels()[c.noise].name +
                              ", h = " + std::to_string(kHeights[c.height]);
    if (c.ratio >= kClearRatio) {
      EXPECT_GE(c.tally.found_rate(), 0.95) << where;
      if (c.scenario->positions[0] == 16) EXPECT_GE(c.tally.period16, c.tally.runs * 9 / 10) << where;
    }
    // Steps too small to find may be missed, but must not turn up somewhere else.
    EXPECT_LE(c.tally.wrong_rate(), 0.03) << where;
  }
}

}  // namespace
}  // namespace batchscope
